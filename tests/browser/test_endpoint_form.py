"""The submission page's endpoint panel in Chromium: a submitter declares the endpoint with a credential, the page
says "set" and never shows it; an auditor sees the endpoint, a reviewer of another organisation does not.
Screenshots: docs/screenshots/submission-endpoint*.png (1280 px and 390 px)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_audit_chair_screens import _login
from tests.factories import SubmissionFactory, SystemFactory

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_a_submitter_declares_the_endpoint_and_the_credential_is_never_shown(
    chromium, live_server, plain_http, role_users
):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(
        system=SystemFactory(organisation=acme, name="acme-x1"), submitted=True, title="acme-x1 llama3.1-8b"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    _login(page, live_server, "submitter")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/#endpoint")
    panel = page.locator("#endpoint")
    panel.locator("input[name=url]").fill("https://api.acme.example/v1")
    panel.locator("input[name=model_name]").fill("acme-llama-3.1-8b")
    panel.locator("input[name=stays_up]").check()
    panel.locator("input[name=credential]").fill("sk-acme-very-secret")
    panel.locator("button[type=submit]").click()
    page.wait_for_url("**/submissions/*/#endpoint")
    text = page.locator("#endpoint").inner_text()
    assert "https://api.acme.example/v1" in text and "acme-llama-3.1-8b" in text
    assert "Credential\nset" in text or "Credential\tset" in text
    assert "sk-acme-very-secret" not in page.content()
    page.locator("#endpoint").scroll_into_view_if_needed()
    page.locator("#endpoint").screenshot(path=str(SHOTS / "submission-endpoint.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#endpoint details summary").click()
    page.locator("#endpoint").screenshot(path=str(SHOTS / "submission-endpoint-390.png"))
    page.context.clear_cookies()

    _login(page, live_server, "auditor")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    assert "https://api.acme.example/v1" in page.locator("#endpoint").inner_text()
    assert page.locator("#endpoint form").count() == 0  # the auditor sees it, does not change it
    page.context.clear_cookies()
    _login(page, live_server, "reviewer")
    response = page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    assert response.status == 404 or "api.acme.example" not in page.content()
