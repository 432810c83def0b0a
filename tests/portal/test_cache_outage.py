"""With the cache (Redis) unreachable the portal still answers: public pages and answers are built uncached,
signed-in pages too, and failed sign-ins are still counted (in the process) and still lock an account."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from accounts import sign_in_lockout

DEAD_REDIS = "redis://127.0.0.1:1/0"


@pytest.fixture
def cache_down(settings):
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "portal.cache_backend.ResilientRedisCache", "LOCATION": DEAD_REDIS},
    }
    settings.PORTAL_LOGIN_THROTTLE_CACHE = "default"
    sign_in_lockout._in_process.clear()
    yield
    sign_in_lockout._in_process.clear()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/leaderboard/",
        "/leaderboard/slo/?benchmark=llama3_1-8b&ttft_p90_ms_max=500&interactivity_min=10",
        "/rules/",
        "/api/v1/public/results/",
        "/api/v1/benchmarks/",
        "/audit/head",
    ],
)
def test_public_pages_answer_without_the_cache(cache_down, sample_catalog, path):
    first = Client().get(path)
    second = Client().get(path)
    assert first.status_code == second.status_code == 200, first.content[:300]
    assert "ETag" not in second  # nothing cached, so nothing promised


@pytest.mark.django_db
def test_signed_in_pages_and_token_api_answer_without_the_cache(cache_down, role_users, draft):
    from tests.factories import ApiTokenFactory

    client = Client()
    client.force_login(role_users["submitter"])
    for path in ("/dashboard/", f"/submissions/{draft.pk}/", "/api/v1/submissions/", "/accounts/"):
        for _ in range(2):
            response = client.get(path)
            assert response.status_code == 200, (path, response.content[:300])
            assert "X-Portal-Cache" not in response
    token = ApiTokenFactory(user=role_users["submitter"], scope="read")
    api = Client(headers={"Authorization": f"Token {token.key}"})
    assert api.get("/api/v1/submissions/").json()["count"] == 1


@pytest.mark.django_db
def test_sign_in_lockout_still_holds_without_the_cache(cache_down, role_users, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 3
    user = role_users["submitter"]
    user.set_password("right-password-123")
    user.save()
    client = Client()
    for _ in range(3):
        response = client.post("/accounts/login/", {"username": "submitter", "password": "wrong"})
        assert response.status_code in (200, 400, 429)
    response = client.post("/accounts/login/", {"username": "submitter", "password": "right-password-123"})
    assert "_auth_user_id" not in client.session  # locked: the right password is refused too
    assert b"locked" in response.content.lower() or b"try again" in response.content.lower()
    assert cache.get("anything") is None  # the shared cache really is unreachable here
