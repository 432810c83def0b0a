"""API base: token auth, JSON errors with a stable code, OpenAPI schema and docs served without a CDN."""

import pytest
from django.core.management import call_command

from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_unauthenticated_error_has_code_and_detail(client):
    response = client.get("/api/v1/me/")
    assert response.status_code in (401, 403)
    assert response.json()["code"] == "not_authenticated"
    assert response.json()["detail"]


def test_not_found_error_format(client):
    response = client.get("/api/v1/benchmarks/no-such-model/")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}


def test_validation_error_format():
    from rest_framework.exceptions import ValidationError

    from portal.api import exception_handler

    response = exception_handler(ValidationError({"name": ["This field is required."]}), {})
    assert response.status_code == 400
    assert response.data["code"] == "invalid"
    assert response.data["detail"] == "name: This field is required."


def test_application_error_keeps_its_code():
    from portal.api import exception_handler
    from portal.errors import ConflictError

    response = exception_handler(ConflictError("Submission changed meanwhile.", code="status_conflict"), {})
    assert response.status_code == 409
    assert response.data == {"code": "status_conflict", "detail": "Submission changed meanwhile."}


def test_issue_token_command_prints_a_token_that_authenticates(client, capsys):
    from accounts.models import ApiToken

    user = UserFactory(username="alice")
    MembershipFactory(user=user, organisation__slug="acme", role="submitter")
    call_command("issue_token", "alice")
    token = capsys.readouterr().out.strip()
    assert token.startswith("ep_") and len(token) == 3 + 64
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert response.json() == {
        "username": "alice",
        "organisations": {"acme": ["submitter"]},
        "auditor": False,
        "chair": False,
    }
    row = ApiToken.objects.get(user=user)
    assert (row.name, row.scope, row.expiry) == ("issued by an operator", "write", None)
    # Keys are kept as digests only: a second run prints a new key, the first one still works.
    call_command("issue_token", "alice")
    second = capsys.readouterr().out.strip()
    assert second != token
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200
    # --rotate revokes the tokens of that name first.
    call_command("issue_token", "alice", "--rotate")
    rotated = capsys.readouterr().out.strip()
    assert rotated not in (token, second)
    for old in (token, second):
        refused = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {old}")
        assert refused.status_code == 401 and refused.json()["code"] == "token_revoked"
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {rotated}").status_code == 200


def test_issue_token_command_scope_and_expiry(capsys):
    from accounts.models import ApiToken

    UserFactory(username="bob")
    call_command("issue_token", "bob", "--name", "ci", "--scope", "read", "--expires-days", "7")
    key = capsys.readouterr().out.strip()
    row = ApiToken.objects.get(user__username="bob")
    assert (row.name, row.scope) == ("ci", "read")
    assert 6.9 < (row.expiry - row.created).total_seconds() / 86400 <= 7
    assert key[:15] == row.token_key and key not in row.digest


def test_issue_token_for_unknown_user_fails():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("issue_token", "ghost")


def test_benchmark_catalog_is_public_and_filterable(client):
    response = client.get("/api/v1/benchmarks/?workload=agentic_coding")
    assert response.status_code == 200
    ids = {row["model_id"] for row in response.json()["results"]}
    assert ids == {"deepseek-v4-pro", "kimi-k3", "qwen3.6"}
    detail = client.get("/api/v1/benchmarks/llama3_1-8b/").json()
    assert detail["tokenizer_is_placeholder"] is False
    assert detail["dataset_sample_count"] == 13368


def test_schema_and_docs_are_served_from_our_own_assets(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/benchmarks/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    # The portal's own reference page: every operation of the schema, grouped, in the portal's layout.
    assert '<html lang="en">' in html
    assert '<code class="break-all">/api/v1/public/results/{public_id}/</code>' in html
    assert html.count('<details class="api-op"') == schema.content.decode().count("operationId:")
    for cdn in ("cdn.jsdelivr", "unpkg.com", "cdnjs", "googleapis", "swagger-ui"):
        assert cdn not in html
    redoc = client.get("/api/redoc/").content.decode()
    assert "/static/drf_spectacular_sidecar/redoc/" in redoc
