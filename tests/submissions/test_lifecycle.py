"""Submit and withdraw: guarded transitions, conflicts, audit events; stuck runs; the chair's re-check."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from portal.errors import ConflictError, NotAllowedError
from submissions.checks import check_run_requeue, check_runs_reconcile
from submissions.models import CheckRun, Submission, SubmissionVersion
from submissions.services import submission_create, submission_submit, submission_withdraw
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def draft(role_users):
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    return submission_create(actor=role_users["submitter"], system=system, benchmark=benchmark)


def _version_with_run(submission, user, status):
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=submission.versions.count() + 1,
        kind="bundle",
        size_bytes=1,
        sha256="a" * 64,
        uploader=user,
    )
    run = CheckRun.objects.create(version=version)
    CheckRun.objects.filter(pk=run.pk).update(status=status)
    return version, run


def test_submit_needs_a_passing_check_on_the_latest_version(role_users, draft):
    submitter = role_users["submitter"]
    with pytest.raises(ConflictError) as no_version:
        submission_submit(submission=draft, actor=submitter)
    assert no_version.value.code == "check-not-passed"
    _version_with_run(draft, submitter, CheckRun.Status.PASSED)
    latest, _ = _version_with_run(draft, submitter, CheckRun.Status.FAILED)
    with pytest.raises(ConflictError):
        submission_submit(submission=draft, actor=submitter)
    CheckRun.objects.create(version=latest)  # a re-check that passes makes the latest version submittable
    CheckRun.objects.filter(version=latest).order_by("-id").filter(
        pk=latest.check_runs.latest("id").pk
    ).update(status=CheckRun.Status.PASSED)
    submitted = submission_submit(submission=draft, actor=submitter)
    assert submitted.status == Submission.Status.SUBMITTED and submitted.submitted_version == latest
    assert AuditEvent.objects.filter(action="submission.submitted", object_id=str(draft.pk)).count() == 1


def test_only_the_organisations_submitters_transition(role_users, draft):
    _version_with_run(draft, role_users["submitter"], CheckRun.Status.PASSED)
    for outsider in ("reviewer", "auditor"):
        with pytest.raises(NotAllowedError):
            submission_submit(submission=draft, actor=role_users[outsider])
        with pytest.raises(NotAllowedError):
            submission_withdraw(submission=draft, actor=role_users[outsider], reason="no")


def test_withdraw_from_any_non_terminal_state_once(role_users, draft):
    submitter = role_users["submitter"]
    Submission.objects.filter(pk=draft.pk).update(status=Submission.Status.IN_REVIEW)
    draft.refresh_from_db()
    withdrawn = submission_withdraw(submission=draft, actor=submitter, reason="hardware recalled")
    assert withdrawn.status == Submission.Status.WITHDRAWN and withdrawn.status_reason == "hardware recalled"
    with pytest.raises(ConflictError) as again:
        submission_withdraw(submission=draft, actor=submitter, reason="again")
    assert again.value.code == "state-conflict"
    event = AuditEvent.objects.get(action="submission.withdrawn", object_id=str(draft.pk))
    assert event.actor == submitter and event.data["from"] == "in_review"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs two real connections")
def test_concurrent_transitions_have_one_winner(role_users, draft):
    """Submit and withdraw race on two connections: exactly one wins, the other gets state-conflict."""
    submitter = role_users["submitter"]
    _version_with_run(draft, submitter, CheckRun.Status.PASSED)
    barrier = threading.Barrier(2)
    outcomes = {}

    def run(name, action):
        from django.db import connections

        try:
            submission = Submission.objects.get(pk=draft.pk)  # both read "draft"
            barrier.wait()
            action(submission)
            outcomes[name] = "ok"
        except ConflictError as exc:
            outcomes[name] = exc.code
        finally:
            connections.close_all()

    threads = [
        threading.Thread(
            target=run, args=("submit", lambda s: submission_submit(submission=s, actor=submitter))
        ),
        threading.Thread(
            target=run,
            args=("withdraw", lambda s: submission_withdraw(submission=s, actor=submitter, reason="race")),
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes.values()) == ["ok", "state-conflict"], outcomes
    final = Submission.objects.get(pk=draft.pk).status
    winner = "submit" if outcomes["submit"] == "ok" else "withdraw"
    assert final == {"submit": "submitted", "withdraw": "withdrawn"}[winner]
    assert (
        AuditEvent.objects.filter(
            object_type="submissions.submission",
            object_id=str(draft.pk),
            action__in=["submission.submitted", "submission.withdrawn"],
        ).count()
        == 1
    )


def test_stuck_runs_are_requeued_then_failed_with_a_reason(role_users, draft, settings):
    settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S = 60
    settings.PORTAL_CHECK_QUEUE = f"test-void-{uuid.uuid4().hex}"  # nobody consumes the re-queued start
    _, run = _version_with_run(draft, role_users["submitter"], CheckRun.Status.RUNNING)
    stale = timezone.now() - timedelta(minutes=5)
    CheckRun.objects.filter(pk=run.pk).update(heartbeat_at=stale, attempts=2, max_attempts=3)
    fresh_version, fresh = _version_with_run(draft, role_users["submitter"], CheckRun.Status.RUNNING)
    CheckRun.objects.filter(pk=fresh.pk).update(heartbeat_at=timezone.now())
    from portal.celery import app

    app.conf.task_always_eager, was = (
        False,
        app.conf.task_always_eager,
    )  # keep the re-queued start from running
    try:
        assert check_runs_reconcile() == [run.pk]
    finally:
        app.conf.task_always_eager = was
    run.refresh_from_db()
    assert run.status == CheckRun.Status.QUEUED and run.attempts == 3
    assert run.error_message == "worker lost; re-queued (attempt 3 of 3)"
    CheckRun.objects.filter(pk=run.pk).update(status=CheckRun.Status.RUNNING, heartbeat_at=stale)
    assert check_runs_reconcile() == [run.pk]
    run.refresh_from_db()
    assert run.status == CheckRun.Status.ERROR and run.error_message == "worker lost; failed after 3 attempts"
    assert run.finished_at is not None
    assert CheckRun.objects.get(pk=fresh.pk).status == CheckRun.Status.RUNNING  # a live run is left alone
    # The submitter reads the reason through the API.
    detail = api_client(role_users["submitter"]).get(f"/api/v1/check-runs/{run.pk}/").json()
    assert detail["error_message"] == "worker lost; failed after 3 attempts"


def test_only_the_chair_rechecks_and_history_is_kept(role_users, draft, settings):
    settings.PORTAL_CHECK_QUEUE = f"test-void-{uuid.uuid4().hex}"
    version, first = _version_with_run(draft, role_users["submitter"], CheckRun.Status.PASSED)
    with pytest.raises(NotAllowedError):
        check_run_requeue(version=version, actor=role_users["submitter"])
    Submission.objects.filter(pk=draft.pk).update(status=Submission.Status.SUBMITTED)
    from portal.celery import app

    app.conf.task_always_eager, was = False, app.conf.task_always_eager
    try:
        response = api_client(role_users["chair"]).post(f"/api/v1/versions/{version.pk}/recheck/")
    finally:
        app.conf.task_always_eager = was
    assert response.status_code == 201, response.json()
    assert list(version.check_runs.order_by("id").values_list("status", flat=True)) == ["passed", "queued"]
    assert AuditEvent.objects.filter(action="check.requeued").count() == 1
    denied = api_client(role_users["submitter"]).post(f"/api/v1/versions/{version.pk}/recheck/")
    assert denied.status_code == 403 and denied.json()["code"] == "permission_denied"
