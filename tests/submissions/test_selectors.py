"""Role lookups and reads: the building blocks of the visibility table."""

import pytest
import tokenizers
from django.core.files.base import ContentFile

from access.visibility import systems_visible_to
from accounts.selectors import organisations_of_user, user_is_auditor, user_is_chair, user_org_ids
from catalog.models import Benchmark
from catalog.selectors import benchmark_list, benchmark_tokenizer_json
from tests.factories import SystemFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_role_lookups(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    assert user_org_ids(role_users["submitter"]) == {acme.pk}
    assert user_org_ids(role_users["reviewer"]) == {nimbus.pk}
    assert user_org_ids(role_users["reviewer"], roles=("submitter",)) == set()
    assert user_org_ids(role_users["anonymous"]) == set()
    assert [user_is_auditor(role_users[r]) for r in ("submitter", "auditor", "chair")] == [False, True, False]
    assert [user_is_chair(role_users[r]) for r in ("submitter", "auditor", "chair")] == [False, False, True]
    assert list(organisations_of_user(role_users["submitter"])) == [acme]


def test_inactive_users_hold_no_global_role(role_users):
    auditor = role_users["auditor"]
    auditor.is_active = False
    auditor.save()
    assert not user_is_auditor(auditor)


def test_anonymous_user_has_no_roles():
    from django.contrib.auth.models import AnonymousUser

    anonymous = AnonymousUser()
    assert (user_org_ids(anonymous), user_is_auditor(anonymous), user_is_chair(anonymous)) == (
        set(),
        False,
        False,
    )


def test_systems_visible_to(role_users):
    acme_system = SystemFactory(organisation=role_users["organisations"]["acme"])
    nimbus_system = SystemFactory(organisation=role_users["organisations"]["nimbus"])
    assert list(systems_visible_to(role_users["submitter"])) == [acme_system]
    assert list(systems_visible_to(role_users["reviewer"])) == [nimbus_system]
    assert set(systems_visible_to(role_users["auditor"])) == {acme_system, nimbus_system}
    assert set(systems_visible_to(role_users["chair"])) == {acme_system, nimbus_system}
    assert list(systems_visible_to(UserFactory())) == []


def test_catalog_is_preloaded_by_migration():
    catalog = {b.model_id: b for b in benchmark_list()}
    assert set(catalog) == {
        "llama3_1-8b",
        "llama3_1-405b",
        "deepseek-r1",
        "gpt-oss-120b",
        "qwen3-coder-480b",
        "deepseek-v4-pro",
        "kimi-k3",
        "qwen3.6",
    }
    assert {m for m, b in catalog.items() if b.workload == "agentic_coding"} == {
        "deepseek-v4-pro",
        "kimi-k3",
        "qwen3.6",
    }
    assert not catalog["llama3_1-8b"].tokenizer_is_placeholder
    assert all(b.tokenizer_is_placeholder for m, b in catalog.items() if m != "llama3_1-8b")
    assert all(b.ruleset_version == "endpoints-v1.0" for b in catalog.values())


def test_shipped_tokenizer_loads_and_counts_tokens():
    tokenizer = tokenizers.Tokenizer.from_str(
        benchmark_tokenizer_json(Benchmark.objects.get(model_id="llama3_1-8b"))
    )
    assert tokenizer.get_vocab_size() == 4096
    assert len(tokenizer.encode("Summarise this article.", add_special_tokens=False).ids) > 0


def test_uploaded_tokenizer_takes_precedence(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path)},
        },
    }
    benchmark = Benchmark.objects.get(model_id="kimi-k3")
    benchmark.tokenizer_file.save("tokenizer.json", ContentFile(b'{"version": "real"}'))
    assert benchmark_tokenizer_json(benchmark) == '{"version": "real"}'
