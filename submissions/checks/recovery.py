"""Failures and retries: an attempt that cannot complete is re-queued as the next attempt or ends the run as `error`;
the reconciler (portal.reconcile, with the check run's `OVERDUE` entries in submissions.workflow) ends this way the
runs whose worker was lost or whose start message never arrived."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from submissions.checks.common import storable_text
from submissions.checks.queue import queue_start
from submissions.models import CheckRun, Finding, PointMetric
from submissions.signals import check_run_ended
from submissions.workflow import CHECK_RUN


def check_run_attempt_failed(
    *, check_run_id: int, attempt: int, reason: str, only_if: Q | None = None, code: str = ""
) -> CheckRun | None:
    """The attempt cannot complete (worker lost, storage down, a bug): re-queue the next attempt, or
    end the run as `error` after the last one. The reason is kept for the submitter to read.
    `only_if` is re-checked under the row lock (the reconciler: still stuck, not started or beating meanwhile);
    `code` (the reconciler's) joins the audit event."""
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
            CHECK_RUN.take(
                None,
                check_run,
                "requeue",
                queryset=CheckRun.objects.filter(attempts=attempt),
                fields={
                    "attempts": attempt + 1,
                    "error_message": message,
                    "heartbeat_at": now,
                    "started_at": None,
                    "progress_stage": "",
                    "progress_done": 0,
                },
                data={"attempt": attempt + 1, "reason": reason, **({"code": code} if code else {})},
                quiet=True,
            )
            # The next attempt recomputes every point: drop what the lost attempt stored.
            PointMetric.objects.filter(check_run=check_run).delete()
            Finding.objects.filter(check_run=check_run).delete()
            check_run.refresh_from_db()
            queue_start(check_run)
        else:
            message = f"{reason}; failed after {attempt} attempt{'s' if attempt != 1 else ''}"
            CHECK_RUN.take(
                None,
                check_run,
                "error",
                queryset=CheckRun.objects.filter(attempts=attempt),
                fields={"error_message": message, "finished_at": now},
                data={"attempt": attempt, "reason": reason, **({"code": code} if code else {})},
                quiet=True,
            )
            check_run.refresh_from_db()
            check_run_ended.send(sender=CheckRun, check_run=check_run)
    return check_run


def check_run_overdue(check_run: CheckRun, *, reason: str, only_if: Q, code: str) -> CheckRun | None:
    """The reconciler's end of an overdue check run (portal.reconcile, `OVERDUE` in submissions.workflow): the
    attempt failed, so re-queue the next one while attempts remain, else end the run `error`."""
    return check_run_attempt_failed(
        check_run_id=check_run.pk, attempt=check_run.attempts, reason=reason, only_if=only_if, code=code
    )
