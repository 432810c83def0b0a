"""A queued check whose start message never reached a worker (e.g. Redis flushed) is re-sent by the reconciler
and then checked by a real Celery worker, ending exactly once."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from submissions.checks import queue as checks_queue
from submissions.models import CheckRun
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import (
    ONE_ARCHIVE_ERRORS,
    RUN_ARCHIVES,
    api_client,
    api_upload,
    assert_failed_on,
)

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def test_lost_start_message_is_resent_and_the_run_ends_exactly_once(
    role_users, draft, live_pipeline, monkeypatch
):
    from submissions.tasks import check_runs_reconcile_task

    worker = live_pipeline(PORTAL_CHECK_QUEUED_TIMEOUT_S=5)
    with monkeypatch.context() as lose:  # the version's run is created, but its start message never leaves
        lose.setattr(checks_queue, "queue_start", lambda check_run: None)
        body = api_upload(
            api_client(role_users["submitter"]),
            submission_id=draft.pk,
            name=RUN_ARCHIVES[0].name,
            data=RUN_ARCHIVES[0].read_bytes(),
        )
    run_id = CheckRun.objects.get(version_id=body["version"]["id"]).pk
    time.sleep(2)
    run = CheckRun.objects.get(pk=run_id)
    assert run.status == CheckRun.Status.QUEUED and run.attempts == 1  # the worker is up, yet nothing happens
    CheckRun.objects.filter(pk=run_id).update(created_at=timezone.now() - timedelta(seconds=60))

    deadline = time.monotonic() + 30
    while CheckRun.objects.get(pk=run_id).attempts == 1 and time.monotonic() < deadline:
        check_runs_reconcile_task.apply_async()  # what beat does every minute
        time.sleep(1)
    run = wait_for_run(run_id, statuses=FINISHED, workers=[worker])
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    assert run.attempts == 2
    assert (
        run.error_message
        == "the check never started (its queue message was lost); re-queued (attempt 2 of 3)"
    )
    assert run.point_metrics.count() == 1
    # More reconciler passes change nothing: the run ended once.
    for _ in range(3):
        check_runs_reconcile_task.apply_async()
    time.sleep(3)
    run = CheckRun.objects.get(pk=run_id)
    assert run.attempts == 2 and run.status == CheckRun.Status.FAILED
    assert AuditEvent.objects.filter(action="check.finished", object_id=str(run_id)).count() == 1
    assert AuditEvent.objects.filter(action="check.retried", object_id=str(run_id)).count() == 1
