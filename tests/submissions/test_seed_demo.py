"""seed_demo builds the demo world through the services, and running it again changes nothing."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts.models import Organisation
from accounts.selectors import user_is_auditor, user_is_chair, user_org_ids
from audit.models import AuditEvent
from audit.selectors import audit_chain_verify
from submissions.models import System

pytestmark = pytest.mark.django_db


def test_seed_demo_is_idempotent_and_complete(capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "demo-submitter" in out and "demo-submitter-pass" in out
    counts = (
        Organisation.objects.count(),
        get_user_model().objects.count(),
        System.objects.count(),
        AuditEvent.objects.count(),
    )
    call_command("seed_demo")
    assert counts == (
        Organisation.objects.count(),
        get_user_model().objects.count(),
        System.objects.count(),
        AuditEvent.objects.count(),
    )

    User = get_user_model()
    acme = Organisation.objects.get(name="AcmeCompute")
    assert acme.kind == "hardware_vendor"
    assert user_org_ids(User.objects.get(username="demo-submitter"), roles=("submitter",)) == {acme.pk}
    reviewer_orgs = user_org_ids(User.objects.get(username="demo-reviewer"), roles=("reviewer",))
    assert reviewer_orgs and acme.pk not in reviewer_orgs
    assert user_is_auditor(User.objects.get(username="demo-auditor"))
    chair = User.objects.get(username="demo-chair")
    assert user_is_chair(chair) and chair.is_staff and chair.is_superuser
    assert User.objects.get(username="demo-submitter").check_password("demo-submitter-pass")

    ax8000 = System.objects.get(organisation=acme, name="Acme_AX-8000")
    assert ax8000.description["system_name"] == "Acme AX-8000"
    assert (
        System.objects.get(organisation=acme, name="Acme_AX-4000").description["system_name"]
        == "Acme AX-4000"
    )
    assert audit_chain_verify().ok
