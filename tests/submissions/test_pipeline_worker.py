"""The check pipeline on a real Celery worker process (Redis broker, PostgreSQL test database)."""

from __future__ import annotations

import time

import pytest

from audit.models import AuditEvent
from submissions.models import CheckRun
from tests.submissions.conftest import wait_for_run
from tests.submissions.support import (
    ONE_ARCHIVE_ERRORS,
    RUN_ARCHIVES,
    SEVEN_ARCHIVES_ERRORS,
    api_client,
    api_upload,
    api_upload_run_archives,
    assert_failed_on,
)

pytestmark = pytest.mark.django_db(transaction=True)

FINISHED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED, CheckRun.Status.ERROR)


def _finished_events(run) -> int:
    return AuditEvent.objects.filter(
        action="check.finished", object_type="submissions.checkrun", object_id=str(run.pk)
    ).count()


def test_worker_checks_seven_archives_with_one_task_per_point(role_users, draft, live_pipeline):
    worker = live_pipeline()
    body = api_upload_run_archives(api_client(role_users["submitter"]), submission_id=draft.pk)
    run = CheckRun.objects.get(version_id=body["version"]["id"])
    run = wait_for_run(run.pk, statuses=FINISHED, workers=[worker])
    assert_failed_on(run, SEVEN_ARCHIVES_ERRORS)
    assert run.attempts == 1 and run.started_at and run.finished_at and run.checker_version
    assert run.point_metrics.count() == 7
    assert sorted(run.point_metrics.values_list("concurrency", flat=True)) == [1, 2, 4, 8, 16, 32, 64]
    assert not run.findings.filter(rule__startswith="raw-log").exists()
    assert all(m.recomputed for m in run.point_metrics.all())
    assert run.report["verdict"] == "fail" and len(run.report["points"]) == 7
    assert _finished_events(run) == 1
    # The worker log shows the fan-out: one task per load point, then the join.
    log = worker.tail() + worker.log_path.read_text()
    assert log.count("check_run_point_task") >= 7  # received and succeeded lines, at least one each


def test_worker_killed_mid_check_run_ends_exactly_once(role_users, draft, live_pipeline):
    slow = live_pipeline(PORTAL_CHECK_TEST_POINT_DELAY_S=60)
    body = api_upload(
        api_client(role_users["submitter"]),
        submission_id=draft.pk,
        name=RUN_ARCHIVES[0].name,
        data=RUN_ARCHIVES[0].read_bytes(),
    )
    run_id = CheckRun.objects.get(version_id=body["version"]["id"]).pk
    # Wait until the point task is inside its (slow) check, heart-beating.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = CheckRun.objects.get(pk=run_id)
        if (
            run.status == CheckRun.Status.RUNNING
            and run.progress_stage == "points"
            and run.progress_total == 1
        ):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the check never reached its point task: {slow.tail()}")
    time.sleep(1.0)
    slow.kill()
    run = CheckRun.objects.get(pk=run_id)
    assert run.status == CheckRun.Status.RUNNING and run.finished_at is None
    healthy = live_pipeline()
    # The reconciler (beat runs it every minute) finds the silent run once the heartbeat is 5 s old.
    from submissions.tasks import check_runs_reconcile_task

    deadline = time.monotonic() + 30
    while CheckRun.objects.get(pk=run_id).attempts == 1 and time.monotonic() < deadline:
        check_runs_reconcile_task.apply_async()
        time.sleep(2)
    run = wait_for_run(run_id, statuses=FINISHED, workers=[healthy])
    assert_failed_on(run, ONE_ARCHIVE_ERRORS[RUN_ARCHIVES[0].name])
    assert run.attempts == 2
    assert run.error_message == "worker lost; re-queued (attempt 2 of 3)"
    assert run.point_metrics.count() == 1
    assert _finished_events(run) == 1
    assert AuditEvent.objects.filter(action="check.retried", object_id=str(run_id)).count() == 1
