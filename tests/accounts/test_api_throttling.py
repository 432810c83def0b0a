"""API throttling (issue 11) at the production limits (portal.settings, not the suite's raised ones): per account
and per address for token-authenticated requests, and failed token attempts per address (429, not endless 401s).
Each test sends from its own address, so no other test's requests count."""

from __future__ import annotations

import secrets
import time

import pytest
from django.conf import settings as django_settings
from django.test import Client
from rest_framework.test import APIClient

from accounts.throttles import FailedTokenThrottle, TokenAccountThrottle, TokenAddressThrottle
from tests.factories import ApiTokenFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def production_rates(settings, monkeypatch):
    """portal.settings' throttle rates (tests/settings.py raises them for the rest of the suite), and a clock that
    stands still: the limits are counts per period, and a busy machine may need more than the period to send them."""
    from portal import settings as portal_settings

    rates = portal_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert rates == django_settings.PRODUCTION_THROTTLE_RATES
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    now = time.time()
    for throttle in (FailedTokenThrottle, TokenAccountThrottle, TokenAddressThrottle):
        monkeypatch.setattr(throttle, "timer", staticmethod(lambda: now))
    return rates


def _limit(throttle_class) -> int:
    return throttle_class().num_requests  # parsed from the rate in force


def _address() -> str:
    """A documentation address (2001:db8::/32) of this test's own: only a value in the request, nothing is sent."""
    return f"2001:db8::{secrets.token_hex(2)}:{secrets.token_hex(2)}"


_CLIENT = (
    APIClient()
)  # one client: each new one loads the middleware again (WhiteNoise scans the static files)


def _me(key: str, address: str):
    # The API index: the cheapest token-authenticated request (the limits need hundreds of them).
    return _CLIENT.get("/api/v1/", HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR=address)


def test_random_tokens_get_429_after_the_failure_limit(production_rates):
    limit = _limit(FailedTokenThrottle)
    assert limit == 20  # the production default: 20 failed tokens a minute per address
    address = _address()
    answers = [_me("ep_" + secrets.token_hex(32), address) for _ in range(100)]
    codes = [answer.status_code for answer in answers]
    assert codes[:limit] == [401] * limit
    assert codes[limit:] == [429] * (100 - limit)
    throttled = answers[-1]
    assert throttled.json()["code"] == "throttled"
    assert "Too many wrong, expired or revoked API tokens" in throttled.json()["detail"]
    assert 1 <= int(throttled["Retry-After"]) <= 60
    # The address is blocked for any token now; another address is not.
    good = ApiTokenFactory()
    assert _me(good.key, address).status_code == 429
    assert _me(good.key, _address()).status_code == 200


def test_expired_and_revoked_tokens_count_as_failures(production_rates):
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import ApiToken

    revoked, expired = ApiTokenFactory(), ApiTokenFactory(expiry=timedelta(days=1))
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    ApiToken.objects.filter(pk=expired.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    address = _address()
    limit = _limit(FailedTokenThrottle)
    answers = [_me((revoked, expired)[i % 2].key, address).json()["code"] for i in range(limit)]
    assert answers == ["token_revoked", "token_expired"] * (limit // 2)
    assert _me(revoked.key, address).status_code == 429


def test_one_account_is_throttled_across_addresses(production_rates):
    limit = _limit(TokenAccountThrottle)
    assert limit == 600  # the production default: 600 requests a minute per account
    user = UserFactory()
    first, second = ApiTokenFactory(user=user), ApiTokenFactory(user=user)
    address = _address()
    codes = [_me(first.key, address).status_code for _ in range(limit)]
    assert codes == [200] * limit
    over = _me(first.key, address)
    assert over.status_code == 429 and over.json()["code"] == "throttled"
    assert int(over["Retry-After"]) >= 1
    # The same account from another address, with another of its tokens: still over its limit.
    assert _me(second.key, _address()).status_code == 429
    # Another account from the first address: its own count (and the address is under its own limit).
    assert _me(ApiTokenFactory().key, address).status_code == 200


def test_one_address_is_throttled_across_accounts(production_rates):
    limit = _limit(TokenAddressThrottle)
    per_account = _limit(TokenAccountThrottle)
    assert limit == 1200  # the production default: 1,200 token requests a minute per address
    address = _address()
    keys = [ApiTokenFactory().key for _ in range(-(-limit // (per_account - 1)))]  # each under its own limit
    codes = [_me(keys[i // (per_account - 1)], address).status_code for i in range(limit)]
    assert codes == [200] * limit
    over = _me(ApiTokenFactory().key, address)  # a fresh account: only the address is over
    assert over.status_code == 429
    assert _me(ApiTokenFactory().key, _address()).status_code == 200


def test_browser_sessions_are_not_throttled(production_rates):
    client = Client()
    client.force_login(UserFactory())
    address = _address()
    over = _limit(TokenAccountThrottle) + 1
    codes = {client.get("/api/v1/", REMOTE_ADDR=address).status_code for _ in range(over)}
    assert codes == {200}
