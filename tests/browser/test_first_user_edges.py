"""The rough edges a first-time user hits, in Chromium: a POST-only address opened by hand, an unknown
version, the chair's dashboard, a duplicate draft, a blocked "Submit for review". Screenshots go to
docs/screenshots/ (PORTAL_SCREENSHOT_DIR overrides; "" skips them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from submissions.models import CheckRun
from tests.browser.test_submitter_upload import _login
from tests.factories import SubmissionFactory, SubmissionVersionFactory

pytestmark = pytest.mark.django_db(transaction=True)

_DEFAULT_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SHOTS_DIR = os.environ.get("PORTAL_SCREENSHOT_DIR", str(_DEFAULT_SHOTS))


def _shot(page, name: str, **kwargs) -> None:
    if SHOTS_DIR:
        page.screenshot(path=str(Path(SHOTS_DIR) / name), **kwargs)


@pytest.fixture
def draft(plain_http, storage_dir, browser_catalog, role_users):
    benchmark, system = browser_catalog
    return SubmissionFactory(
        system=system, benchmark=benchmark, created_by=role_users["submitter"], title="AX-8000 release 2.1"
    )


def test_wrong_method_and_unknown_version_are_pages(chromium, live_server, draft):
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    base = live_server.url
    _login(page, base, "submitter")
    response = page.goto(f"{base}/submissions/{draft.pk}/submit/")
    assert response.status == 405
    assert page.get_by_role("heading", name="This address is the target of a button").is_visible()
    assert page.get_by_role("link", name="Back to the submission").get_attribute("href") == (
        f"/submissions/{draft.pk}/"
    )
    _shot(page, "method-not-allowed.png")

    SubmissionVersionFactory(submission=draft, check_run__findings=[], check_run__point_metrics=[])
    response = page.goto(f"{base}/submissions/{draft.pk}/?version=abc")
    assert response.status == 404
    assert "has no version “abc” (its versions: 1)" in page.inner_text("main")
    _shot(page, "version-not-found.png")


def test_blocked_submit_does_not_look_clickable(chromium, live_server, draft):
    SubmissionVersionFactory(
        submission=draft,
        check_run=CheckRun.Status.FAILED,
        check_run__findings=[],
        check_run__point_metrics=[],
    )
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    base = live_server.url
    _login(page, base, "submitter")
    page.goto(f"{base}/submissions/{draft.pk}/")
    lifecycle = page.locator("section[aria-label=Lifecycle]")
    submit = lifecycle.get_by_role("button", name="Submit for review")
    assert submit.is_disabled()
    style = submit.evaluate(
        "b => { const s = getComputedStyle(b); return [s.backgroundColor, s.cursor, s.borderStyle, s.color]; }"
    )
    accent = "rgb(11, 92, 173)"
    assert style[0] != accent and style[3] != "rgb(255, 255, 255)", style  # not the blue call to action
    assert style[1] == "not-allowed" and style[2] == "dashed", style
    _shot(lifecycle, "lifecycle-submit-blocked.png")


def test_duplicate_draft_warns_and_chair_has_no_create(chromium, live_server, draft, role_users):
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    base = live_server.url
    _login(page, base, "submitter")
    page.select_option("#id_system", str(draft.system.pk))
    page.select_option("#id_benchmark", str(draft.benchmark.pk))
    page.get_by_role("button", name="Create draft").click()
    warning = page.locator("#duplicate-drafts")
    assert warning.is_visible()
    assert warning.get_by_role("link").first.get_attribute("href") == f"/submissions/{draft.pk}/"
    page.locator("#new-submission").scroll_into_view_if_needed()
    _shot(page, "dashboard-duplicate-draft.png", full_page=True)
    page.get_by_role("button", name="Create another draft anyway").click()
    page.wait_for_url(f"{base}/submissions/*/#upload")
    assert draft.system.submissions.count() == 2

    chair = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    _login(
        chair, base, "chair"
    )  # the chair lands on the chair's dashboard; the submissions dashboard is a click away
    chair.goto(f"{base}/dashboard/")
    assert chair.get_by_role("button", name="Create draft").count() == 0
    assert chair.locator("#no-drafts-for-chair").is_visible()
    _shot(chair, "chair-dashboard-no-draft.png", full_page=True)


def test_rules_are_linked_and_filter_as_you_type(chromium, live_server, draft):
    SubmissionVersionFactory(submission=draft, check_run=CheckRun.Status.FAILED)
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    base = live_server.url
    _login(page, base, "submitter")
    page.goto(f"{base}/submissions/{draft.pk}/")
    page.locator("#findings").get_by_role("link", name="every rule, searchable").click()
    page.wait_for_url(f"{base}/rules/")
    assert page.get_by_role("navigation", name="Main").get_by_role("link", name="Rules").is_visible()
    rules = page.locator("section.rule")
    total = rules.count()
    assert total > 20
    page.fill("#rule-filter", "power")
    shown = page.locator("section.rule:visible").count()
    assert 0 < shown < total
    assert page.inner_text("#rule-filter-count") == f"{shown} of {total} rules"
    assert "?q=power" in page.url
    _shot(page, "rules-filter.png")
    page.fill("#rule-filter", "zzzz-no-such-rule")
    assert page.locator("#rule-filter-empty").is_visible()
    page.fill("#rule-filter", "")
    assert page.locator("section.rule:visible").count() == total


def _ax8000_point(concurrency: int, *, tps: float) -> dict:
    """A point as the AX-8000 demo has them: every metric, power, accuracy; system tokens/s recomputed lower."""
    claimed = {
        "system_tps": tps,
        "tps_per_user": 99.71,
        "ttft_p90_ms": 136.2,
        "n_samples_completed": 19_200,
        "n_samples_failed": 0,
        "duration_ns": 612_345_678_901,
    }
    extra = {
        "region": "med_concurrency",
        "power": {"point_power_kw": 10.42, "system_tps_per_kw": 241.1},
        "accuracy": {"scores": {"rouge1": 38.7812, "rouge2": 15.9131, "rougeL": 24.4955}},
    }
    return {
        "concurrency": concurrency,
        "claimed": claimed,
        "recomputed": {**claimed, "system_tps": tps * 0.83},
        "extra": extra,
    }


def test_points_table_fits_at_1400_px(chromium, live_server, draft):
    points = [_ax8000_point(c, tps=25_124.4 * c) for c in (1, 8, 64)]
    SubmissionVersionFactory(
        submission=draft,
        check_run=CheckRun.Status.PASSED,
        check_run__findings=[],
        check_run__point_metrics=points,
    )
    page = chromium.new_context(viewport={"width": 1400, "height": 900}).new_page()
    base = live_server.url
    _login(page, base, "submitter")
    page.goto(f"{base}/submissions/{draft.pk}/")
    scroller = page.locator("table.points").locator("xpath=..")
    widths = scroller.evaluate("d => [d.scrollWidth, d.clientWidth, d.querySelectorAll('tbody tr').length]")
    assert widths[2] >= 1, widths
    assert widths[0] <= widths[1], f"the points table scrolls sideways at 1400 px: {widths}"
    _shot(scroller, "submission-points-1400.png")
