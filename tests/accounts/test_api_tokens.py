"""API tokens (issue 15): made by each user on /accounts/tokens/, shown once and kept as digests, scoped (a read-only
token cannot upload, submit, withdraw or write anything), refused with a clear JSON error once expired or revoked,
their last use shown."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from knox.crypto import hash_token
from rest_framework.test import APIClient
from rest_framework.views import APIView

from accounts.models import ApiToken
from audit.models import AuditEvent
from tests.factories import ApiTokenFactory, UserFactory

pytestmark = pytest.mark.django_db

UNSAFE = ("post", "put", "patch", "delete")


def _token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _create_on_page(client: Client, **fields) -> str:
    """POST the tokens page's form; the key shown on the answer."""
    response = client.post(
        "/accounts/tokens/", {"name": "lab CI", "scope": "write", "expires": "30", **fields}, follow=False
    )
    assert response.status_code == 201, response.content[:500]
    match = re.search(r'value="(ep_[0-9a-f]{64})"', response.content.decode())
    assert match, "the new key is shown"
    return match.group(1)


def _database_text() -> str:
    """Every row of every table, as PostgreSQL prints it."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT CAST(t AS text) FROM "{table}" AS t')  # noqa: S608 - names from the catalog
            chunks.extend(row[0] for row in cursor.fetchall())
    return "\n".join(chunks)


# --- The tokens page -----------------------------------------------------------------------------


def test_a_token_made_on_the_page_is_shown_once_and_only_its_digest_is_kept(caplog):
    user = UserFactory(username="alice")
    client = Client()
    client.force_login(user)
    caplog.set_level(logging.DEBUG)
    key = _create_on_page(client, name="lab CI", scope="write", expires="30")

    page = client.get("/accounts/tokens/")
    assert page.status_code == 200
    assert key not in page.content.decode()  # shown once, on the creating answer only
    assert "lab CI" in page.content.decode() and "never used" in page.content.decode()

    token = ApiToken.objects.get(user=user)
    assert (token.name, token.scope) == ("lab CI", "write")
    assert timedelta(days=29, hours=23) < token.expiry - token.created <= timedelta(days=30)
    assert token.digest == hash_token(key)
    # Used once, with a write and a refused request in between, so the logs see it all.
    assert _token_client(key).get("/api/v1/me/").json()["username"] == "alice"
    assert _token_client(key + "0").get("/api/v1/me/").status_code == 401

    secret = key[15:]  # knox's lookup prefix is the first 15 characters ("ep_" and 12 hex digits)
    stored = _database_text()
    assert token.digest in stored
    assert key not in stored and secret not in stored
    assert key not in caplog.text and secret not in caplog.text
    audited = " ".join(
        str(event.data) for event in AuditEvent.objects.filter(action__startswith="api_token.")
    )
    assert "lab CI" in audited and secret not in audited and token.digest not in audited


def test_the_page_refuses_a_token_without_a_name():
    client = Client()
    client.force_login(UserFactory())
    response = client.post("/accounts/tokens/", {"name": "  ", "scope": "read", "expires": "7"})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert not ApiToken.objects.exists()
    assert (
        client.post("/accounts/tokens/", {"name": "x", "scope": "admin", "expires": "7"}).status_code == 400
    )


def test_the_page_lists_only_the_users_own_tokens_and_last_use():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    mine = ApiTokenFactory(user=alice, name="alice laptop")
    ApiTokenFactory(user=bob, name="bob secret runner")
    client = Client()
    client.force_login(alice)
    assert _token_client(mine.key).get("/api/v1/me/").status_code == 200
    body = client.get("/accounts/tokens/").content.decode()
    assert "alice laptop" in body and "bob secret runner" not in body
    mine.refresh_from_db()
    assert mine.last_used_at is not None
    row = re.search(rf'<tr data-token="{mine.pk}">(.*?)</tr>', body, re.S).group(1)
    assert f"{timezone.localtime(mine.last_used_at):%Y-%m-%d %H:%M}" in row and "never used" not in row


def test_last_use_is_written_at_most_once_a_minute(django_assert_num_queries):
    token = ApiTokenFactory()
    client = _token_client(token.key)
    assert client.get("/api/v1/me/").status_code == 200
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    assert client.get("/api/v1/me/").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at == first  # no second write within the minute
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    assert client.get("/api/v1/me/").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at > first


def test_revoking_on_the_page_stops_the_token_at_once_and_only_its_owner_may():
    alice, bob = UserFactory(), UserFactory()
    token = ApiTokenFactory(user=alice, name="old laptop")
    bobs = Client()
    bobs.force_login(bob)
    assert bobs.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 404
    assert _token_client(token.key).get("/api/v1/me/").status_code == 200

    client = Client()
    client.force_login(alice)
    response = client.post(f"/accounts/tokens/{token.pk}/revoke/", follow=True)
    assert "Token &#x27;old laptop&#x27; revoked" in response.content.decode()
    refused = _token_client(token.key).get("/api/v1/me/")
    assert refused.status_code == 401
    assert refused.json()["code"] == "token_revoked"
    assert "was revoked on" in refused.json()["detail"]
    assert "http://testserver/accounts/tokens/" in refused.json()["detail"]
    body = client.get("/accounts/tokens/").content.decode()
    assert "Revoked and expired" in body and "revoked " in body
    assert AuditEvent.objects.filter(action="api_token.revoked", actor=alice).count() == 1
    client.post(f"/accounts/tokens/{token.pk}/revoke/")  # twice: nothing more happens
    assert AuditEvent.objects.filter(action="api_token.revoked").count() == 1


# --- Refusals: clear JSON errors -----------------------------------------------------------------


def test_an_expired_token_is_refused_with_a_clear_error():
    token = ApiTokenFactory(name="ci", expiry=timedelta(days=1))
    ApiToken.objects.filter(pk=token.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    response = _token_client(token.key).get("/api/v1/me/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    body = response.json()
    assert body["code"] == "token_expired"
    assert body["detail"].startswith("This API token ('ci') expired on ")
    assert body["detail"].endswith("Create a new token at http://testserver/accounts/tokens/")
    assert ApiToken.objects.filter(pk=token.pk).exists()  # kept, so the owner sees it expired


def test_unknown_and_malformed_tokens_and_missing_credentials_say_where_to_get_one():
    unknown = _token_client("ep_" + "0" * 64).get("/api/v1/me/")
    assert unknown.status_code == 401
    assert unknown.json() == {
        "code": "token_invalid",
        "detail": "Invalid API token. Create a new token at http://testserver/accounts/tokens/",
    }
    spaced = APIClient().get("/api/v1/me/", HTTP_AUTHORIZATION="Token two words")
    assert spaced.status_code == 401 and spaced.json()["code"] == "token_invalid"
    missing = APIClient().get("/api/v1/me/")
    assert missing.status_code == 401
    assert missing.json()["code"] == "not_authenticated"
    assert "create one at http://testserver/accounts/tokens/" in missing.json()["detail"]


def test_a_disabled_accounts_token_is_refused():
    token = ApiTokenFactory(user=UserFactory(is_active=False))
    response = _token_client(token.key).get("/api/v1/me/")
    assert response.status_code == 401 and response.json()["code"] == "account_inactive"


# --- Scopes: a read-only token never writes --------------------------------------------------------


def _drf_endpoints(patterns=None, namespace=""):
    """(route name, kwargs names, unsafe methods, view class) of every DRF view the portal serves."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _drf_endpoints(pattern.url_patterns, inner)
            continue
        if not isinstance(pattern, URLPattern) or not pattern.name:
            continue
        view = getattr(pattern.callback, "cls", None)
        if view is None or not issubclass(view, APIView):
            continue
        kwargs = set(pattern.pattern.regex.groupindex)
        if "format" in kwargs:
            continue  # the same view as the route without the suffix
        actions = getattr(pattern.callback, "actions", None)
        methods = set(actions) if actions else {m for m in view.http_method_names if hasattr(view, m)}
        unsafe = sorted(methods & set(UNSAFE))
        if unsafe:
            yield f"{namespace}{pattern.name}", kwargs, unsafe, view


def _unsafe_requests():
    for name, kwargs, methods, view in _drf_endpoints():
        url = reverse(name, kwargs={key: "1" for key in kwargs})
        for method in methods:
            yield name, method, url, view


def _send(client, method: str, url: str):
    if method == "put":
        return client.put(url, b"x", content_type="application/octet-stream")
    return getattr(client, method)(url, {}, format="json")


def test_a_read_only_token_cannot_write_on_any_endpoint(role_users, draft):
    requests = list(_unsafe_requests())
    asked = {(name, method) for name, method, _, _ in requests}
    # The walk finds the writes this issue names (so a broken walk cannot pass by finding nothing).
    for must in [
        ("api:upload-list", "post"),
        ("api:upload-part", "put"),
        ("api:upload-finish", "post"),
        ("api:submission-list", "post"),
        ("api:submission-submit", "post"),
        ("api:submission-withdraw", "post"),
        ("api:notification-preference", "put"),
    ]:
        assert must in asked, must
    submitter = role_users["submitter"]
    reader = _token_client(ApiTokenFactory(user=submitter, scope="read").key)
    writer = _token_client(ApiTokenFactory(user=submitter, scope="write").key)
    for name, method, url, _ in requests:
        refused = _send(reader, method, url)
        assert refused.status_code == 403, (name, method, refused.status_code)
        assert refused.json()["code"] == "token_read_only", (name, method)
        assert "/accounts/tokens/" in refused.json()["detail"]
        allowed = _send(writer, method, url)
        assert allowed.status_code < 500, (name, method)
        assert allowed.status_code == 405 or allowed.json().get("code") != "token_read_only", (name, method)


def test_a_read_only_token_reads_and_its_refused_writes_change_nothing(role_users, draft):
    reader = _token_client(ApiTokenFactory(user=role_users["submitter"], scope="read").key)
    assert reader.get(f"/api/v1/submissions/{draft.pk}/").json()["status"] == "draft"
    assert reader.get("/api/v1/uploads/").status_code == 200
    assert (
        reader.post(f"/api/v1/submissions/{draft.pk}/withdraw/", {"reason": "x"}, format="json").status_code
        == 403
    )
    started = reader.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "a.tar.gz", "size": 10, "sha256": "0" * 64},
        format="json",
    )
    assert started.status_code == 403
    draft.refresh_from_db()
    assert draft.status == "draft" and not draft.uploads.exists()


def test_session_requests_are_not_scoped(role_users, draft):
    client = APIClient(enforce_csrf_checks=False)
    client.force_login(role_users["submitter"])
    response = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "a.tar.gz", "size": 10, "sha256": "0" * 64},
        format="json",
    )
    assert response.status_code == 201, response.json()


# --- What `portal` shows -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_portal_status_with_an_expired_or_read_only_token_says_where_to_create_one(
    role_users, draft, live_server
):
    import os
    import subprocess
    import sys
    from pathlib import Path

    def portal(*args, key):
        return subprocess.run(
            [sys.executable, "-m", "checker.cli.main", *args, "--url", live_server.url, "--token", key],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ,
        )

    expired = ApiTokenFactory(user=role_users["submitter"], name="old CI", expiry=timedelta(days=1))
    ApiToken.objects.filter(pk=expired.pk).update(expiry=timezone.now() - timedelta(days=1))
    result = portal("status", str(draft.pk), key=expired.key)
    assert result.returncode == 2
    assert "This API token ('old CI') expired on" in result.stderr
    assert f"{live_server.url}/accounts/tokens/" in result.stderr

    reader = ApiTokenFactory(user=role_users["submitter"], scope="read")
    refused = portal("submit", str(Path(__file__).resolve()), "--submission", str(draft.pk), key=reader.key)
    assert refused.returncode == 2
    assert "This API token is read-only" in refused.stderr and "/accounts/tokens/" in refused.stderr
