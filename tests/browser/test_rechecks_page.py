"""The chair's re-check page in Chromium, with the sample curve published through the real services and its
benchmark moved to a rule set with one threshold changed: the chair starts the re-check on the page, its report
lists what changed, the chair annotates from it, and the published result keeps its numbers. Screenshots under
docs/screenshots/ (chair-rechecks*.png)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.models import Annotation, Publication, RecheckCampaign, RecheckResult
from tests.browser.test_audit_chair_screens import _login
from tests.leaderboard.extension_support import published_result
from tests.leaderboard.test_rechecks import BUMPED, _bump, rulesets  # noqa: F401 - the fixture
from tests.submissions.support import RUN_ARCHIVES, make_catalog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("storage_dir")]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_a_rule_set_bump_shows_its_report_on_the_chairs_page(
    chromium,
    live_server,
    plain_http,
    role_users,
    rulesets,  # noqa: F811
):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    published = published_result(role_users["submitter"], system, benchmark, list(RUN_ARCHIVES))
    frozen = (published.check_run_id, published.curve, published.headline, published.snapshot)
    _bump(published)
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _login(page, live_server, "chair")
    page.goto(f"{live_server.url}/review/chair/")
    page.click("text=Re-checks")
    assert page.locator(f"text={published.public_id} r1").count()
    page.screenshot(path=str(SHOTS / "chair-rechecks-start.png"), full_page=True)

    page.fill("input[name=reason]", "points.min raised to 8")
    # the eager pipeline runs the re-check and writes its report in the request (slow on a loaded machine)
    page.click("button:has-text('Start the re-check')", timeout=180_000)
    assert page.locator("text=started: 1 published revision queued").count()
    assert RecheckCampaign.objects.get().in_state("reported")  # its last run wrote the report: no beat
    page.reload()
    result = RecheckResult.objects.get()
    row = page.locator(f"[data-result='{result.pk}']")
    assert row.locator("tr[data-change=changed]:has-text('point-count')").count() == 1
    assert row.locator("tr[data-change=new]:has-text('official-checker-disagreement')").count() == 1
    assert row.locator("text=7 points < minimum 8.").count() == 1
    page.screenshot(path=str(SHOTS / "chair-rechecks-report.png"), full_page=True)

    phone = chromium.new_context(
        viewport={"width": 390, "height": 844}, storage_state=context.storage_state()
    )
    small = phone.new_page()
    small.goto(page.url)
    assert small.evaluate("document.documentElement.scrollWidth") <= 390
    small.screenshot(path=str(SHOTS / "chair-rechecks-report-390.png"), full_page=True)
    phone.close()

    row.locator("input[name=reason]").fill("Seven points; the rule now asks for eight.")
    row.locator("button[value=annotate]").click()
    assert page.locator("text=Annotated by chair").count() == 1
    page.screenshot(path=str(SHOTS / "chair-rechecks-decided.png"), full_page=True)
    assert Annotation.objects.filter(publication=published).count() == 1
    published = Publication.objects.get(pk=published.pk)
    assert (published.check_run_id, published.curve, published.headline, published.snapshot) == frozen
    context.close()
