"""Security headers on every answer, and forwarded headers trusted only when a setting says a proxy sets them."""

import pytest
from django.test import RequestFactory

from accounts.throttles import TokenAddressThrottle
from portal.middleware import client_ip

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/leaderboard/", "/audit/head", "/api/v1/", "/no-such-page/"])
def test_csp_and_permissions_policy_on_every_answer(client, path):
    response = client.get(path)
    csp = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert (
        "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]
    )


def test_no_template_has_an_inline_script_or_handler():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = []
    for template in root.glob("templates/**/*.html"):
        text = template.read_text()
        for match in re.finditer(r"<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+\s*=|javascript:", text):
            offenders.append(f"{template.relative_to(root)}: {match.group(0)}")
    assert offenders == []


def test_x_forwarded_proto_is_ignored_without_the_setting(client, settings):
    settings.SECURE_PROXY_SSL_HEADER = None
    response = client.get("/", HTTP_X_FORWARDED_PROTO="https")
    assert "Strict-Transport-Security" not in response  # HSTS goes on https answers only
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert "Strict-Transport-Security" in client.get("/", HTTP_X_FORWARDED_PROTO="https")


def _request(xff: str):
    return RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=xff)


def test_x_forwarded_for_is_ignored_without_trusted_proxies(settings):
    request = _request("203.0.113.9")
    assert client_ip(request) == "10.0.0.5"
    # the API throttles key clients by the same address: a client cannot pick a fresh one per request.
    assert TokenAddressThrottle().get_ident(request) == "10.0.0.5"


def test_x_forwarded_for_behind_one_trusted_proxy(settings):
    from rest_framework.settings import api_settings

    settings.PORTAL_TRUSTED_PROXIES = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    api_settings.reload()
    try:
        # the client sent "1.2.3.4" itself; the proxy appended the address it saw
        request = _request("1.2.3.4, 198.51.100.7")
        assert client_ip(request) == "198.51.100.7"
        assert TokenAddressThrottle().get_ident(request) == "198.51.100.7"
    finally:
        api_settings.reload()
