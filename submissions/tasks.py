"""Celery tasks of the submissions app: the check pipeline (start -> one task per load point -> join).

Convention: a task takes ids, calls one service, is safe to run twice, and is queued with
by name after commit (portal.queues.task_send_on_commit). Each task names its kind (portal/queues.py): its queue
and time limits. The pipeline tasks (unpack, point, judge) are acks_late with
reject_on_worker_lost: a message whose worker died is delivered again, and the services'
compare-and-set on (status, attempt) makes the repeat harmless.
"""

from __future__ import annotations

import logging

from celery import chord, shared_task

from portal.queues import task_kind
from portal.reconcile import jobs_reconcile
from submissions.checks.queue import check_outbox_send
from submissions.checks.recovery import check_run_attempt_failed
from submissions.checks.steps import check_run_finish, check_run_point, check_run_start
from submissions.idempotency import idempotency_keys_expire
from submissions.uploads import multipart_uploads_sweep, upload_verify, uploads_expire

logger = logging.getLogger(__name__)


def _attempt_failed(check_run_id: int, attempt: int, exc: BaseException) -> None:
    logger.exception("check run %s attempt %s failed", check_run_id, attempt)
    check_run_attempt_failed(
        check_run_id=check_run_id,
        attempt=attempt,
        reason=f"the check stopped with {type(exc).__name__}: {exc}"[:500],
    )


@shared_task(**task_kind("unpack"))
def check_run_start_task(check_run_id: int, attempt: int) -> None:
    """List the version's points and fan out one task per point, joined by check_run_finish_task."""
    try:
        keys = check_run_start(check_run_id=check_run_id, attempt=attempt)
    except Exception as exc:  # noqa: BLE001 - any failure becomes the next attempt, never a stuck run
        _attempt_failed(check_run_id, attempt, exc)
        return
    if keys is None:
        return
    join = check_run_finish_task.si(
        check_run_id, attempt
    )  # on the judge queue, each point on the point queue
    if not keys:
        join.apply_async()
        return
    header = [check_run_point_task.si(check_run_id, attempt, key) for key in keys]
    chord(header)(join)


@shared_task(**task_kind("point", ignore_result=False))
def check_run_point_task(check_run_id: int, attempt: int, point_key: str) -> bool:
    """Recompute one load point (its result is only the chord's signal; rows hold the data)."""
    try:
        return check_run_point(check_run_id=check_run_id, attempt=attempt, point_key=point_key)
    except Exception as exc:  # noqa: BLE001
        _attempt_failed(check_run_id, attempt, exc)
        return False


@shared_task(**task_kind("judge"))
def check_run_finish_task(check_run_id: int, attempt: int) -> None:
    """Run the rules over the whole version and end the run passed or failed."""
    try:
        check_run_finish(check_run_id=check_run_id, attempt=attempt)
    except Exception as exc:  # noqa: BLE001
        _attempt_failed(check_run_id, attempt, exc)


@shared_task(**task_kind("housekeeping"))
def check_runs_reconcile_task() -> dict[str, list]:
    """Every minute (beat): the one reconciler of every job kind (portal.reconcile): re-queue or fail running checks
    whose heartbeat stopped and queued checks that never started, end spot-checks, previews and direct uploads a lost
    worker left unfinished."""
    return jobs_reconcile()


@shared_task(**task_kind("housekeeping", ignore_result=True))
def check_outbox_send_task() -> int:
    """Every few seconds (beat): send the start messages still in the outbox (the broker
    was down when their runs were committed)."""
    return check_outbox_send()


@shared_task(**task_kind("housekeeping"))
def uploads_cleanup_task() -> dict:
    """Every 15 minutes (beat): expire idle uploads (parts deleted, quota freed) and old Idempotency-Keys."""
    expired = uploads_expire()
    return {
        "uploads_expired": [str(pk) for pk in expired],
        "idempotency_keys_deleted": idempotency_keys_expire(),
    }


@shared_task(**task_kind("unpack"))
def upload_verify_task(upload_id: str) -> str:
    """A direct upload is complete in the bucket: stream it once, check size and SHA-256, then make its version."""
    return upload_verify(upload_id=upload_id)


@shared_task(**task_kind("housekeeping"))
def multipart_uploads_sweep_task() -> list[str]:
    """Every hour (beat): abort the bucket's stale multipart uploads that no open upload owns."""
    return multipart_uploads_sweep()
