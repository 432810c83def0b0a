"""The submitter's lifecycle buttons in a real browser: "Submit for review" disabled with the reason while
the latest check fails, enabled once it passes; "Withdraw…" asks why; a click submits. Screenshots go to
PORTAL_SCREENSHOT_DIR (docs/screenshots/ keeps the ones the docs show)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from submissions.models import CheckRun, Submission
from tests.browser.test_submitter_upload import _login
from tests.factories import SubmissionFactory, SubmissionVersionFactory

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS_DIR = os.environ.get("PORTAL_SCREENSHOT_DIR")


@pytest.fixture
def draft(plain_http, storage_dir, browser_catalog, role_users):
    benchmark, system = browser_catalog
    return SubmissionFactory(
        system=system, benchmark=benchmark, created_by=role_users["submitter"], title="AX-8000 release 2.1"
    )


def _version(submission, status):
    """The next version, its check run finished in `status` (no findings: the page shows only the buttons)."""
    return SubmissionVersionFactory(
        submission=submission, check_run=status, check_run__findings=[], check_run__point_metrics=[]
    )


def test_submitter_sees_why_submit_waits_then_submits(chromium, live_server, draft):
    shots = Path(SHOTS_DIR) if SHOTS_DIR else None
    _version(draft, CheckRun.Status.FAILED)
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    base = live_server.url
    _login(page, base, "submitter")
    page.goto(f"{base}/submissions/{draft.pk}/")
    lifecycle = page.locator("section[aria-label=Lifecycle]")
    submit = lifecycle.get_by_role("button", name="Submit for review")
    assert submit.is_disabled()
    assert "latest check passed (version 1: failed)" in lifecycle.inner_text()
    if shots:
        lifecycle.screenshot(path=str(shots / "lifecycle-submit-blocked.png"))

    _version(draft, CheckRun.Status.PASSED)
    page.reload()
    assert submit.is_enabled() and "latest check passed" not in lifecycle.inner_text()
    lifecycle.get_by_text("Withdraw…").click()  # opens the reason form, does not withdraw
    assert page.get_by_label("Why is it withdrawn?").is_visible()
    if shots:
        page.screenshot(path=str(shots / "submission-lifecycle-buttons.png"), full_page=False)
    lifecycle.get_by_text("Withdraw…").click()

    submit.click()
    page.wait_for_load_state()
    assert "version 2 is frozen for review" in page.inner_text("body")
    draft.refresh_from_db()
    assert draft.status == Submission.Status.SUBMITTED and draft.submitted_version.number == 2
    # Submitted: submit is gone, withdraw stays.
    assert page.get_by_role("button", name="Submit for review").count() == 0
    assert page.locator("section[aria-label=Lifecycle]").get_by_text("Withdraw…").is_visible()
    context.close()
