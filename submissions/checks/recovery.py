"""Failures, retries and the reconciler: an attempt that cannot complete is re-queued as the next attempt or ends
the run as `error`; check_runs_reconcile finds runs whose worker was lost or whose start message never arrived."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from audit.services import audit_event_record
from submissions.checks.common import storable_text
from submissions.checks.queue import queue_start
from submissions.models import CheckOutbox, CheckRun, Finding, PointMetric
from submissions.signals import check_run_ended
from submissions.workflow import CHECK_RUN


def check_run_attempt_failed(
    *, check_run_id: int, attempt: int, reason: str, only_if: Q | None = None
) -> CheckRun | None:
    """The attempt cannot complete (worker lost, storage down, a bug): re-queue the next attempt, or
    end the run as `error` after the last one. The reason is kept for the submitter to read.
    `only_if` is re-checked under the row lock (the reconciler: still stuck, not started or beating meanwhile)."""
    with transaction.atomic():
        runs = CheckRun.objects.select_for_update().filter(
            CheckRun.states.q("unfinished"), pk=check_run_id, attempts=attempt
        )
        if only_if is not None:
            runs = runs.filter(only_if)
        check_run = runs.first()
        if check_run is None:
            return None
        reason = storable_text(reason)
        now = timezone.now()
        if attempt < check_run.max_attempts:
            message = f"{reason}; re-queued (attempt {attempt + 1} of {check_run.max_attempts})"
            # heartbeat_at of a queued run is when it was (re-)queued: the queued deadline counts from it.
            CHECK_RUN.advance(
                CheckRun.objects.filter(attempts=attempt),
                check_run,
                "requeue",
                attempts=attempt + 1,
                error_message=message,
                heartbeat_at=now,
                started_at=None,
                progress_stage="",
                progress_done=0,
            )
            # The next attempt recomputes every point: drop what the lost attempt stored.
            PointMetric.objects.filter(check_run=check_run).delete()
            Finding.objects.filter(check_run=check_run).delete()
            check_run.refresh_from_db()
            audit_event_record(
                actor=None,
                action="check.retried",
                obj=check_run,
                data={"attempt": attempt + 1, "reason": reason},
            )
            queue_start(check_run)
        else:
            message = f"{reason}; failed after {attempt} attempt{'s' if attempt != 1 else ''}"
            CHECK_RUN.advance(
                CheckRun.objects.filter(attempts=attempt),
                check_run,
                "error",
                error_message=message,
                finished_at=now,
            )
            check_run.refresh_from_db()
            audit_event_record(
                actor=None, action="check.errored", obj=check_run, data={"attempt": attempt, "reason": reason}
            )
            check_run_ended.send(sender=CheckRun, check_run=check_run)
    return check_run


QUEUED_LOST_REASON = "the check never started (its queue message was lost)"


def check_runs_reconcile(*, now=None) -> list[int]:
    """The beat schedule calls this every minute. Re-queue (or fail) as the next attempt:
    - running checks whose heartbeat stopped for PORTAL_CHECK_HEARTBEAT_TIMEOUT_S (worker lost);
    - queued checks not started PORTAL_CHECK_QUEUED_TIMEOUT_S after they were queued (the start message
      was lost, e.g. Redis flushed). The next attempt gets a fresh message; should the old one still turn
      up, it carries the old attempt number and does nothing.
    """
    now = now or timezone.now()
    heartbeat_deadline = now - timedelta(seconds=settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S)
    silent = CheckRun.states.q("running") & Q(heartbeat_at__lt=heartbeat_deadline)
    queued_deadline = now - timedelta(seconds=settings.PORTAL_CHECK_QUEUED_TIMEOUT_S)
    # A first attempt was queued at created_at; a re-queued attempt at heartbeat_at (set when re-queued).
    # A run whose message still waits in the outbox was never sent, not lost: the outbox sends it.
    waiting = Exists(CheckOutbox.objects.filter(check_run=OuterRef("pk")))
    never_started = (
        CheckRun.states.q("queued")
        & (Q(heartbeat_at__lt=queued_deadline) | Q(heartbeat_at__isnull=True, created_at__lt=queued_deadline))
        & ~waiting
    )
    stuck = [
        (pk, attempt, "worker lost", silent)
        for pk, attempt in CheckRun.objects.filter(silent).values_list("pk", "attempts")
    ]
    stuck += [
        (pk, attempt, QUEUED_LOST_REASON, never_started)
        for pk, attempt in CheckRun.objects.filter(never_started).values_list("pk", "attempts")
    ]
    handled = []
    for run_id, attempt, reason, condition in stuck:
        if (
            check_run_attempt_failed(check_run_id=run_id, attempt=attempt, reason=reason, only_if=condition)
            is not None
        ):
            handled.append(run_id)
    return handled
