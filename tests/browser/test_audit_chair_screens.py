"""The auditor's, the chair's, the notifications and the audit log pages in Chromium: screenshots under
docs/screenshots/ (audit-*.png, chair-*.png, notifications.png, audit-log.png), and the pages work."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from review.services.assignments import assignment_create
from submissions.models import CheckRun, Submission
from tests.browser.signin import pass_second_factor
from tests.factories import (
    CheckRunFactory,
    CommentFactory,
    ConflictFactory,
    MembershipFactory,
    NotificationFactory,
    OrganisationFactory,
    SubmissionFactory,
    SystemFactory,
    UserFactory,
    WaiverFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def scene(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    stratus = OrganisationFactory(name="StratusLabs", slug="stratuslabs")
    for name, org in (("stratus-rev", stratus), ("nimbus-rev2", nimbus)):
        MembershipFactory(user=UserFactory(username=name), organisation=org, role="reviewer")
    ready = SubmissionFactory(
        peer_reviewed=True, system=SystemFactory(organisation=acme, name="Acme AX-8000")
    )
    failing = SubmissionFactory(
        peer_reviewed=True, system=SystemFactory(organisation=acme, name="Acme AX-4000")
    )
    run = CheckRunFactory(
        version=failing.submitted_version,
        status="failed",
        findings=["accuracy-sample-count", "raw-log-consistency"],
    )
    CheckRun.objects.filter(pk=run.pk).update(
        report={
            "official": {
                "available": True,
                "version": "6.0.1",
                "ran": True,
                "passed": False,
                "errors": 2,
                "warnings": 1,
            }
        }
    )
    finding = run.findings.filter(rule="accuracy-sample-count").first()
    WaiverFactory(
        version=failing.submitted_version,
        rule=finding.rule,
        point=finding.point,
        file=finding.file,
        requested_by=role_users["submitter"],
        request_reason="The demo runs are short on purpose; the full run follows.",
    )
    waiting = SubmissionFactory(submitted=True, system=SystemFactory(organisation=acme, name="Acme AX-2000"))
    Submission.objects.filter(pk=waiting.pk).update(status_changed_at=timezone.now() - timedelta(days=20))
    in_review = SubmissionFactory(
        in_review=True, system=SystemFactory(organisation=acme, name="Acme AX-9000")
    )
    CommentFactory(objection=True, submission=in_review, answer_due_at=timezone.now() - timedelta(days=1))
    ConflictFactory(organisation=acme, other=stratus, kind="partner", reason="Joint venture on AX boards.")
    ConflictFactory(
        organisation=nimbus, other=stratus, kind="competitor", pinned=False, reason="Same market."
    )
    assignment_create(submission=in_review, reviewer=role_users["reviewer"], actor=role_users["chair"])
    for subject in (
        f"Waiver of accuracy-sample-count asked for on submission #{failing.pk} (llama3_1-8b)",
        f"Submission #{ready.pk} (llama3_1-8b) is peer reviewed",
    ):
        NotificationFactory(user=role_users["auditor"], subject=subject, url=f"/review/audit/{ready.pk}/")
    return {"ready": ready, "failing": failing}


def _login(page, live_server, username):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password("pw-12345-x")
    user.save()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-12345-x")
    page.click("button[type=submit], input[type=submit]")
    pass_second_factor(page, username)


def test_screens(chromium, live_server, plain_http, scene, role_users):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _login(page, live_server, "auditor")
    page.goto(f"{live_server.url}/review/audit/")
    assert page.locator("text=Acme AX-4000").count()
    page.screenshot(path=str(SHOTS / "audit-queue.png"), full_page=True)
    page.goto(f"{live_server.url}/review/audit/{scene['failing'].pk}/")
    page.screenshot(path=str(SHOTS / "audit-attestation.png"), full_page=True)
    page.fill("[data-waiver] input[name=reason]", "Short demo run; accuracy measured on the full run.")
    page.click("[data-waiver] button[value=grant]")
    assert page.locator("text=Waiver of accuracy-sample-count granted").count()
    page.goto(f"{live_server.url}/accounts/notifications/")
    page.screenshot(path=str(SHOTS / "notifications.png"), full_page=True)
    page.goto(f"{live_server.url}/audit/?action=waiver.*")
    page.screenshot(path=str(SHOTS / "audit-log.png"), full_page=True)
    context.close()

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _login(page, live_server, "chair")
    page.goto(f"{live_server.url}/review/chair/")
    page.screenshot(path=str(SHOTS / "chair-dashboard.png"), full_page=True)
    page.click("#unassigned button[type=submit]")
    assert page.locator("text=reviewers asked").count() or page.locator("text=reviewer asked").count()
    page.goto(f"{live_server.url}/review/chair/submissions/{scene['failing'].pk}/")
    page.screenshot(path=str(SHOTS / "chair-submission.png"), full_page=True)
    page.goto(f"{live_server.url}/review/conflicts/")
    page.screenshot(path=str(SHOTS / "chair-conflicts.png"), full_page=True)
    context.close()
