"""The Content-Security-Policy in Chromium: the portal's pages (the API docs included) work without one violation,
an injected inline script is refused, the Print button works without onclick=; the /audit/head page's screenshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction

from tests.browser.conftest import CSP_VIOLATIONS

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

PAGES = [
    ("/", "Endpoints Portal"),
    ("/leaderboard/", "Leaderboard"),
    ("/rules/", "Rules"),
    ("/leaderboard/slo/", "SLO"),
    ("/accounts/login/", "Log in"),
    ("/audit/head", "Audit log head"),
]


@pytest.fixture
def checkpoint_dir(tmp_path, settings):
    folder = tmp_path / "checkpoints"
    settings.STORAGES = {
        **settings.STORAGES,
        "audit_checkpoints": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        },
    }
    return folder


def test_pages_and_api_docs_run_under_the_csp(chromium, live_server, plain_http):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    for path, text in PAGES:
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert "camera=()" in response.headers["permissions-policy"]
        assert text.lower() in page.content().lower(), path
    # The API reference is the portal's own page, rendered from the schema.
    page.goto(live_server.url + "/api/docs/")
    assert "Endpoints Portal API" in page.inner_text("h1")
    # Redoc renders from <redoc spec-url>, without Google Fonts.
    page.goto(live_server.url + "/api/redoc/")
    page.wait_for_selector("h1:has-text('Endpoints Portal API')", timeout=20_000)
    context.close()


def test_an_injected_inline_script_is_refused_and_reported(chromium, live_server, plain_http):
    page = chromium.new_page()
    page.goto(live_server.url + "/")
    page.evaluate(
        """() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1';
                   document.body.appendChild(s); }"""
    )
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.injected") is None
    assert any("inline script" in v for v in CSP_VIOLATIONS), CSP_VIOLATIONS
    CSP_VIOLATIONS.clear()  # seen and expected: the watcher works
    page.close()


def test_print_button_works_without_an_inline_handler(chromium, live_server, plain_http):
    from tests.factories import BenchmarkFactory

    BenchmarkFactory(sample=True)
    page = chromium.new_page()
    page.add_init_script("window.print = () => { window.printed = (window.printed || 0) + 1; };")
    page.goto(live_server.url + "/leaderboard/procurement/?model_1=llama3_1-8b&ttft_p90_ms_max_1=100000")
    button = page.get_by_role("button", name="Print")
    assert button.get_attribute("onclick") is None
    button.click()
    assert page.evaluate("() => window.printed") == 1
    page.close()


def test_audit_head_page_screenshot(chromium, live_server, plain_http, checkpoint_dir):
    from audit.services import audit_event_record

    with transaction.atomic():
        for _ in range(3):
            audit_event_record(actor=None, action="system.checked")
    call_command("verify_audit_log", "--write-checkpoint")
    with transaction.atomic():
        audit_event_record(actor=None, action="system.checked")
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(live_server.url + "/audit/head")
    assert page.inner_text("#audit-head").startswith("4:")
    assert page.inner_text("#audit-checkpoint").startswith("3:")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "audit-head.png"), full_page=True)
    page.close()
