"""A submitter in a real browser: create a submission, drop the seven sample run archives on the upload
box, survive a dropped part, watch the upload complete and the check's findings, per-point table and step
chart appear; screenshots on a desktop and a phone viewport."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalog.models import Benchmark
from submissions.models import CheckRun, Submission
from tests.browser.signin import landing_path, pass_second_factor
from tests.factories import PASSWORD, RUN_ARCHIVES
from tests.submissions.support import SEVEN_ARCHIVES_ERRORS, assert_failed_on

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS_DIR = os.environ.get("PORTAL_SCREENSHOT_DIR")  # keep the screenshots somewhere to look at them


@pytest.fixture
def portal(live_server, settings, storage_dir, plain_http, browser_catalog):
    # The check runs in the live server, inside the last finish (storage_dir keeps tasks eager).
    settings.PORTAL_UPLOAD_PART_BYTES = 64 * 1024  # several parts per archive, so resuming matters
    return live_server.url


def _login(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    pass_second_factor(page, username)
    page.wait_for_url(f"{base}{landing_path(username)}")


def test_submitter_uploads_run_archives_and_sees_the_check(chromium, portal, tmp_path):
    assert len(RUN_ARCHIVES) == 7
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # The connection drops while part 1 of one archive is on its way: the page must retry it.
    dropped = []

    def drop_once(route):
        if not dropped:
            dropped.append(route.request.url)
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/api/v1/uploads/*/parts/1/", drop_once)

    _login(page, portal, "submitter")
    page.select_option("#id_benchmark", label="Llama 3.1 8B Instruct (llama3_1-8b)")
    page.select_option("#id_availability", "available")
    page.click("text=Create draft")
    page.wait_for_url("**/submissions/*/#upload")
    submission = Submission.objects.get()
    assert "Draft submission" in page.inner_text(".messages")

    page.set_input_files("[data-file-input]", [str(path) for path in RUN_ARCHIVES])
    assert page.locator(".upload-file").count() == 7
    page.click("[data-start]")
    # Every archive goes through and the page moves to the new version's check.
    page.wait_for_url(f"**/submissions/{submission.pk}/?version=1#check", timeout=120_000)
    assert dropped, "the simulated connection drop never happened"

    section = page.locator("#check-section")
    section.locator("[data-check-status]").wait_for()
    run = CheckRun.objects.get(version__submission=submission)
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)
    status_text = section.locator(".result-head .badge").first.inner_text()
    assert status_text == run.get_status_display()
    # Findings grouped by severity, rule ids linked to their documentation.
    assert section.locator("details.finding-group.sev-error .finding").count() == run.counts["error"]
    assert section.locator("a.rule", has_text="accuracy-sample-count").count() >= 1
    # The per-point table: seven points, claimed next to recomputed (these raw logs agree with their summaries).
    assert section.locator("table.points tbody tr").count() == 7
    assert section.locator("td.differs").count() == 0
    # The step chart, drawn on the server: one marker per measured point.
    assert section.locator("svg.step-chart .marker").count() == 7
    # The version row: seven files, each downloadable.
    assert page.locator("table.versions a[download]").count() == 7
    assert not errors, errors

    shots = Path(SHOTS_DIR) if SHOTS_DIR else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "submission-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, (
        "the page scrolls sideways on a phone"
    )
    page.screenshot(path=str(shots / "submission-phone.png"), full_page=True)
    page.goto(f"{portal}/dashboard/")
    assert page.locator("table.submissions tbody tr").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(shots / "dashboard-phone.png"), full_page=True)
    context.close()


def test_other_organisation_gets_404_in_the_browser(chromium, portal, role_users):
    from submissions.services import submission_create

    acme = role_users["organisations"]["acme"]
    submission = submission_create(
        actor=role_users["submitter"],
        system=acme.systems.get(),
        benchmark=Benchmark.objects.get(model_id="llama3_1-8b"),
    )
    context = chromium.new_context()
    page = context.new_page()
    _login(page, portal, "reviewer")
    response = page.goto(f"{portal}/submissions/{submission.pk}/")
    assert response.status == 404
    context.close()
