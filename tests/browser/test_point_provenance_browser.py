"""Per-point provenance and the one check vocabulary in Chromium, on the demo with its r48 extension published as
revision 3 of the AX-8000 result: the result page cites each point's own archive and raw log, lists every archive
behind the curve and every revision's waivers, and shows revision 3's stack; the audit queue's check badge reads as
the submitter's dashboard does. Screenshots: docs/screenshots/provenance-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.signin import pass_second_factor
from tests.leaderboard.test_point_provenance import EXPECTED, _demo_with_revision_3

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _login(page, live_server, username: str) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password("pw-12345-x")
    user.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-12345-x")
    page.click("main button[type=submit]")
    pass_second_factor(page, username)


def test_the_result_page_cites_each_points_evidence_and_the_audit_queue_says_the_same_verdict(
    chromium, live_server, plain_http
):
    publication = _demo_with_revision_3()
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/results/{publication.public_id}/")
    for concurrency, (number, archive) in EXPECTED.items():
        cell = page.locator(f'[data-point-evidence="{concurrency}"]')
        assert f"rev. {number}" in cell.inner_text() and archive in cell.inner_text()
    assert page.locator("[data-download-revision]").count() == len(EXPECTED)
    assert page.locator('[data-waiver-revision="1"]').count() and page.locator("[data-point-waiver]").count()
    assert "acme-serve 1.1" in page.locator("#system-heading + dl").inner_text()
    page.locator("#points-heading").scroll_into_view_if_needed()
    page.locator("#points-heading").locator("xpath=..").screenshot(path=str(SHOTS / "provenance-points.png"))
    page.locator("#provenance-heading").locator("xpath=..").screenshot(
        path=str(SHOTS / "provenance-sources-waivers.png")
    )
    page.screenshot(path=str(SHOTS / "provenance-result.png"), full_page=True)

    _login(page, live_server, "demo-auditor")
    page.goto(f"{live_server.url}/review/audit/")
    badges = page.locator("[data-check-verdict]").all_inner_texts()
    assert badges and all(not b.startswith("check: failed") for b in badges), badges
    assert any("passed with" in b for b in badges), badges
    page.screenshot(path=str(SHOTS / "provenance-audit-queue.png"), full_page=True)
    context.close()
    assert not errors, errors
