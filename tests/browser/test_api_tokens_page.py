"""The API tokens page in Chromium: create a token (its key shown once), use it against the live API, see its last
use, revoke it and watch the API refuse it. Screenshots go to docs/screenshots/ (PORTAL_SCREENSHOT_DIR overrides;
"" skips them)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from accounts.models import ApiToken
from tests.browser.test_submitter_upload import _login

pytestmark = pytest.mark.django_db(transaction=True)

_DEFAULT_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SHOTS_DIR = os.environ.get("PORTAL_SCREENSHOT_DIR", str(_DEFAULT_SHOTS))


def _shot(page, name: str) -> None:
    if SHOTS_DIR:
        page.screenshot(path=str(Path(SHOTS_DIR) / name), full_page=True)


def _api(base: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(f"{base}/api/v1/me/", headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_create_use_and_revoke_a_token(chromium, live_server, plain_http, role_users):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = live_server.url
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    _login(page, base, "submitter")
    page.goto(f"{base}/accounts/tokens/")
    assert "No active tokens" in page.inner_text("main")

    # An older read-only token that has been used, so the list shows both kinds.
    page.fill("input[name=name]", "dashboard script")
    page.check("input[name=scope][value=read]")
    page.select_option("select[name=expires]", "365")
    page.click("form[data-form=token-create] button[type=submit]")
    old_key = page.input_value("[data-token-key]")
    assert _api(base, old_key)[0] == 200

    page.fill("input[name=name]", "lab CI")
    page.check("input[name=scope][value=write]")
    page.select_option("select[name=expires]", "90")
    page.click("form[data-form=token-create] button[type=submit]")
    assert page.get_by_text("Copy it now: it is shown only this once.").is_visible()
    key = page.input_value("[data-token-key]")
    assert key.startswith("ep_") and len(key) == 67
    page.click("[data-copy=new-token-key]")
    # The clipboard write is asynchronous: the label changes when it settles.
    page.wait_for_function(
        "document.querySelector('[data-copy=new-token-key]').textContent === 'Copied'", timeout=10_000
    )
    _shot(page, "api-tokens-created.png")

    status, me = _api(base, key)
    assert (status, me["username"]) == (200, "submitter")
    token = ApiToken.objects.get(name="lab CI")
    page.goto(f"{base}/accounts/tokens/")
    assert key not in page.content()  # shown once
    row = page.locator(f"tr[data-token='{token.pk}']")
    assert "Read, upload and submit" in row.inner_text()
    assert "never used" not in row.locator("[data-last-used]").inner_text()
    assert "(just now)" in row.locator("[data-last-used]").inner_text()
    _shot(page, "api-tokens.png")

    row.get_by_role("button", name="Revoke lab CI").click()
    page.wait_for_load_state()
    assert "Token 'lab CI' revoked" in page.inner_text(".messages")
    assert "lab CI" in page.inner_text("table[data-tokens=inactive]")
    status, body = _api(base, key)
    assert status == 401 and body["code"] == "token_revoked"
    assert f"{base}/accounts/tokens/" in body["detail"]
    assert _api(base, old_key)[0] == 200  # the other token still works
    _shot(page, "api-tokens-revoked.png")
    context.close()
