"""Creating a check run and queueing its start: the outbox row that commits with the run and is sent after commit
(or by the beat task once the broker is back), and the chair's or an auditor's re-check of a version."""

from __future__ import annotations

import functools
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.selectors import user_is_auditor
from audit.services import audit_event_record
from portal.errors import NotAllowedError
from portal.queues import task_send
from submissions.models import CheckOutbox, CheckRun, SubmissionVersion
from submissions.workflow import CHECK_RUN, SUBMISSION_FILES

logger = logging.getLogger(__name__)


# The tasks module imports this one; queueing by the task's registered name keeps the import one-way.
CHECK_RUN_START_TASK = "submissions.tasks.check_run_start_task"


# A sender holds an outbox row this long; a sender that died meanwhile leaves it to the next one.
OUTBOX_LEASE_S = 60


OUTBOX_BATCH = 100


def queue_start(check_run: CheckRun) -> None:
    """Queue the run's start message through the outbox: the row commits with the run (so a committed run always
    has its message, whatever happens to the broker) and is sent after commit; if the broker is down then, the
    beat task sends it once the broker is back (check_outbox_send)."""
    message = CheckOutbox.objects.create(check_run=check_run, attempt=check_run.attempts)
    transaction.on_commit(functools.partial(check_outbox_send, ids=[message.pk]))


def _send_start(run_id: int, attempt: int) -> None:
    # unpack queue; no retry: a broker that is down leaves the row to the outbox's next pass
    task_send(CHECK_RUN_START_TASK, run_id, attempt, retry=False)


def check_outbox_send(*, ids: list[int] | None = None, now=None) -> int:
    """Send the pending start messages (those in `ids`, or all), oldest first; returns how many were sent.

    Each row is claimed (a lease, compare-and-set) before it is sent and deleted after, so two senders never
    send one row at once; a sender that dies between send and delete leaves a duplicate, which the run's
    compare-and-set on (status, attempt) ignores. The first broker error stops the pass: the rows wait for the
    next one (the beat task, every few seconds). Never raises."""
    now = now or timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    pending = CheckOutbox.objects.filter(free)
    if ids is not None:
        pending = pending.filter(pk__in=ids)
    sent = 0
    for row_id, run_id, attempt in pending.order_by("created_at", "pk").values_list(
        "pk", "check_run_id", "attempt"
    )[:OUTBOX_BATCH]:
        claimed = CheckOutbox.objects.filter(free, pk=row_id).update(
            claimed_until=now + timedelta(seconds=OUTBOX_LEASE_S), send_attempts=F("send_attempts") + 1
        )
        if not claimed:
            continue  # another sender has it
        try:
            _send_start(run_id, attempt)
        except Exception as exc:  # noqa: BLE001 - the broker is down or refuses: the row waits for the next pass
            logger.warning(
                "check run %s attempt %s: start message not sent (%s); it stays queued", run_id, attempt, exc
            )
            CheckOutbox.objects.filter(pk=row_id).update(
                claimed_until=None, last_error=f"{type(exc).__name__}: {exc}"[:500]
            )
            break
        # The queued deadline (the reconciler, portal.reconcile) counts from now, when the queue got the message.
        CheckRun.objects.filter(CHECK_RUN.sources_q("start"), pk=run_id, attempts=attempt).update(
            heartbeat_at=timezone.now()
        )
        CheckOutbox.objects.filter(pk=row_id).delete()
        sent += 1
    return sent


def check_start_pending(version: SubmissionVersion) -> bool:
    """True while a check of `version` waits for its start message because sending it failed (the broker is
    down); a message being sent right now (a concurrent request's) does not count."""
    return CheckOutbox.objects.filter(check_run__version=version).exclude(last_error="").exists()


def check_run_create(
    *, version: SubmissionVersion, actor=None, purpose: str = CheckRun.Purpose.SUBMISSION
) -> CheckRun:
    """A new queued run of the checker over `version` with its benchmark's current rule set; the check starts
    after commit. A `recheck` run (leaderboard.publishing.rechecks) goes through the same pipeline and queues but is never
    the version's current run."""
    benchmark = version.submission.benchmark
    with transaction.atomic():
        check_run = CheckRun.objects.create(
            version=version,
            purpose=purpose,
            requested_by=actor,
            ruleset=benchmark.ruleset_version,
            max_attempts=settings.PORTAL_CHECK_MAX_ATTEMPTS,
        )
        queue_start(check_run)
    return check_run


# The rows of the submission's table that re-check a version, one per kind of actor (submissions.workflow).
RECHECK_ACTIONS = ("recheck", "requeue_check", "audit_recheck")


def recheck_action(actor, submission) -> str:
    """The row under which `actor` may re-check a version of `submission` now, or '' (pages ask it for the
    button, check_run_requeue for the guard)."""
    return next((a for a in RECHECK_ACTIONS if SUBMISSION_FILES.allowed(actor, submission, a)), "")


@transaction.atomic
def check_run_requeue(*, version: SubmissionVersion, actor) -> CheckRun:
    """A new check run of a version, history kept: its organisation's submitters while the submission is theirs
    (a draft, or sent back for changes), the chair on any version, an auditor on a submitted one (after a checker
    or rule-set change, or to audit the frozen version)."""
    submission = version.submission
    if not recheck_action(actor, submission):
        if user_is_auditor(actor):
            raise NotAllowedError(
                "Auditors re-check submitted versions only (a draft is its organisation's own)."
            )
        if SUBMISSION_FILES.rule("recheck").actor_may(actor, submission):
            raise NotAllowedError(
                "Your organisation re-checks its versions while the submission is a draft or sent back for "
                "changes; from submission on, ask the chair or an auditor."
            )
        raise NotAllowedError(
            "Only the submitting organisation, the chair or an auditor can re-check a version."
        )
    check_run = check_run_create(version=version, actor=actor)
    audit_event_record(
        actor=actor,
        action="check.requeued",
        obj=check_run,
        data={"version": version.pk, "submission": version.submission_id, "ruleset": check_run.ruleset},
    )
    return check_run
