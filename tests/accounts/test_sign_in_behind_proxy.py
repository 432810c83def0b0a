"""The sign-in throttle's per-address count behind nginx (every connection from 127.0.0.1): each client counts by
the address nginx saw, and without a trusted proxy a client-sent X-Forwarded-For changes nothing."""

import pytest
from django.test import Client

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _post_login(username: str, password: str, forwarded_for: str):
    return Client().post(
        "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR="127.0.0.1",  # nginx, in web's network namespace (docker-compose.yml)
        HTTP_X_FORWARDED_FOR=forwarded_for,
    )


def test_behind_nginx_one_guessing_client_does_not_lock_out_the_others(role_users, settings):
    settings.PORTAL_TRUSTED_PROXIES = 1
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    for index in range(6):
        _post_login(f"nobody-{index}", "guess", forwarded_for="192.0.2.66")
    refused = _post_login("submitter", PASSWORD, forwarded_for="192.0.2.66")
    assert "Too many failed sign-ins from your address" in refused.content.decode()
    assert _post_login("submitter", PASSWORD, forwarded_for="192.0.2.67").status_code == 302


def test_without_a_trusted_proxy_a_forged_forwarded_for_escapes_nothing(role_users, settings):
    settings.PORTAL_TRUSTED_PROXIES = 0
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    for index in range(6):
        _post_login(
            f"nobody-{index}", "guess", forwarded_for=f"203.0.113.{index}"
        )  # a new "address" each time
    refused = _post_login("submitter", PASSWORD, forwarded_for="203.0.113.99")
    assert "Too many failed sign-ins from your address" in refused.content.decode()
