"""The workflow tables that submissions/ knows all the rules of (portal.policy): the upload, the check run, and
the submission's rows about its files (upload a version, re-check one). The submission's full table is
review.lifecycle.SUBMISSION, which takes these rows in as they are, so the two never disagree."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef, Q

from accounts.actors import AUDITOR, CHAIR, SCHEDULE, SUBMITTER, WORKER
from accounts.selectors import user_is_auditor
from portal.errors import ConflictError
from portal.policy import Actor, Policy, Ready, Rule
from portal.reconcile import Overdue
from submissions.models import CheckOutbox, CheckRun, Endpoint, Submission, Upload

Status = Submission.Status

# A draft is its organisation's own: auditors do not see it, so re-checking one is a question of who (403).
AUDITOR_OF_SUBMITTED = Actor(
    "auditor",
    "auditors, on a submitted version",
    lambda user, submission: user_is_auditor(user) and not submission.in_state("draft"),
)

# A draft, or a submission the reviewers sent back: its new version is what `resubmit` sends them.
UPLOADABLE = (Status.DRAFT, Status.CHANGES_REQUESTED)


def _endpoint_declared(submission: Submission) -> Ready:
    if not Endpoint.objects.filter(submission=submission).exists():
        raise ConflictError(
            "The submission declares no endpoint: there is nothing to measure again.",
            code="spotcheck-no-endpoint",
        )
    return Ready()


# A spot-check measures a submission that is in the auditors' hands or public: never a draft (its organisation's
# own), never a withdrawn or rejected one (nothing to check any more).
SPOT_CHECKABLE = tuple(v for v in Status.values if v not in (Status.DRAFT, Status.WITHDRAWN, Status.REJECTED))

# Rows of the submission's table (review.lifecycle.SUBMISSION takes them in).
SUBMISSION_FILE_RULES = (
    Rule(
        "upload",
        UPLOADABLE,
        (SUBMITTER,),
        "Upload a new version",
        needs="the organisation's storage quota (submissions.uploads.upload_start)",
    ),
    Rule(
        "recheck",
        UPLOADABLE,
        (SUBMITTER,),
        "Re-check",
        needs="while the submission is the organisation's own (a draft, or sent back for changes); from "
        "submission on, the chair and auditors re-check (submissions.checks.queue.check_run_requeue)",
    ),
    Rule(
        "requeue_check",
        tuple(Status.values),
        (CHAIR,),
        "Re-check (chair)",
        needs="after a checker or rule-set change (submissions.checks.queue.check_run_requeue)",
    ),
    Rule(
        "audit_recheck",
        tuple(Status.values),
        (AUDITOR_OF_SUBMITTED,),
        "Re-check (audit)",
        needs="a submitted version: a draft is its organisation's own (submissions.checks.queue.check_run_requeue)",
    ),
    Rule(
        "declare_endpoint",
        tuple(v for v in Status.values if v not in (Status.WITHDRAWN, Status.REJECTED)),
        (SUBMITTER,),
        "Declare the endpoint",
        needs="an http(s) URL and a model name; the credential is kept encrypted (submissions.endpoints)",
    ),
    Rule(
        "spot_check",
        SPOT_CHECKABLE,
        (AUDITOR, CHAIR, SCHEDULE),
        "Spot-check a point",
        precondition=_endpoint_declared,
        needs="a declared endpoint (409 `spotcheck-no-endpoint`) and a point of the latest check run or the "
        "published curve; one at a time (409 `spotcheck-busy`); the schedule only on published results whose "
        "endpoint stays up, with PORTAL_SPOTCHECK_SCHEDULE (spotchecks.services.spotcheck_start)",
    ),
)
SUBMISSION_FILES = Policy(name="submission", states=tuple(Status.values), rules=SUBMISSION_FILE_RULES)

U = Upload.Status
UPLOAD = Policy(
    name="upload",
    states=tuple(U.values),
    rules=(
        Rule("put_part", (U.OPEN,), (SUBMITTER,), "Send a part", needs="the part's index and size"),
        Rule(
            "finish",
            (U.OPEN, U.VERIFIED),
            (SUBMITTER,),
            "Finish",
            target=U.VERIFIED,
            done="verified",
            audited=False,  # the version it joins records it: `version.uploaded`
            needs="every part received; the SHA-256 of the joined file is the one announced (a mismatch aborts)",
        ),
        Rule(
            "complete_direct",
            (U.OPEN,),
            (SUBMITTER,),
            "Complete (straight to the bucket)",
            target=U.VERIFYING,
            done="verifying",
            audited=False,  # as finish
            needs="S3 storage; every part in the bucket (submissions.direct_uploads)",
        ),
        Rule(
            "verify_direct",
            (U.VERIFYING,),
            (WORKER,),
            "Verify",
            target=U.VERIFIED,
            done="verified",
            automatic=True,
            audited=False,  # as finish
            needs="a worker streams the object once: its size and SHA-256 are the ones announced (a mismatch aborts)",
        ),
        Rule(
            "join_version",
            (U.VERIFIED,),
            (SUBMITTER,),
            "Make a version",
            target=U.DONE,
            done="done",
            automatic=True,
            audited=False,  # `version.uploaded` names every file
            needs="the submission accepts uploads (draft or changes requested)",
        ),
        Rule(
            "abort",
            (U.OPEN, U.VERIFYING, U.VERIFIED),
            (SUBMITTER, WORKER),
            "Abort",
            target=U.ABORTED,
            done="aborted",
            needs="not yet part of a version; idle uploads are aborted by the cleanup job",
        ),
    ),
)

C = CheckRun.Status
CHECK_RUN = Policy(
    name="check run",
    event_name="check",
    states=tuple(C.values),
    description="Written by the pipeline alone, by compare-and-set on (status, attempt); a re-check is a new run.",
    rules=(
        Rule(
            "start",
            (C.QUEUED,),
            (WORKER,),
            "Start",
            target=C.RUNNING,
            done="running",
            automatic=True,
            audited=False,  # the end records the run: `check.finished`
        ),
        Rule(
            "requeue",
            (C.QUEUED, C.RUNNING),
            (WORKER,),
            "Requeue",
            target=C.QUEUED,
            done="queued",
            event="check.retried",
            automatic=True,
            needs="a lost worker or broker message, while attempts remain (the reconciler)",
        ),
        Rule(
            "pass",
            (C.RUNNING,),
            (WORKER,),
            "Pass",
            target=C.PASSED,
            done="passed",
            event="check.finished",
            automatic=True,
            needs="every point checked, no error finding",
        ),
        Rule(
            "fail",
            (C.RUNNING,),
            (WORKER,),
            "Fail",
            target=C.FAILED,
            done="failed",
            event="check.finished",
            automatic=True,
            needs="an error finding",
        ),
        Rule(
            "error",
            (C.QUEUED, C.RUNNING),
            (WORKER,),
            "Error",
            target=C.ERROR,
            done="error",
            event="check.errored",
            automatic=True,
            needs="attempts used up, or the check could not complete",
        ),
    ),
)

POLICIES = (UPLOAD, CHECK_RUN)
QUEUED_LOST_REASON = "the check never started (its queue message was lost)"


def _upload_lost(entry: Overdue, now) -> dict:
    return {"error_message": entry.sentence, "updated_at": now}


def _outbox_sent() -> Q:
    """A queued run whose message still waits in the outbox was never sent, not lost: the outbox sends it."""
    return ~Exists(CheckOutbox.objects.filter(check_run=OuterRef("pk")))


# The reconciler's entries (portal.reconcile). A check run is not simply ended: the attempt failed, so the next one
# is queued while attempts remain (submissions.checks.recovery); a re-queued attempt's clock is heartbeat_at (set
# when re-queued), a first attempt's created_at. A direct upload whose verification was lost is aborted: its
# reservation no longer counts against the quota and the submitter uploads the file again.
OVERDUE = (
    Overdue(
        kind="check_run",
        model=CheckRun,
        policy=CHECK_RUN,
        action="error",
        target=C.ERROR,
        states=(C.RUNNING,),
        since=("heartbeat_at",),
        limit_s=lambda: settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S,
        code="check-worker-lost",
        sentence="worker lost",
        record=dict,
        end="submissions.checks.recovery.check_run_overdue",
    ),
    Overdue(
        kind="check_run",
        model=CheckRun,
        policy=CHECK_RUN,
        action="error",
        target=C.ERROR,
        states=(C.QUEUED,),
        since=("heartbeat_at", "created_at"),
        limit_s=lambda: settings.PORTAL_CHECK_QUEUED_TIMEOUT_S,
        code="check-never-started",
        sentence=QUEUED_LOST_REASON,
        record=dict,
        extra=_outbox_sent,
        end="submissions.checks.recovery.check_run_overdue",
    ),
    Overdue(
        kind="upload",
        model=Upload,
        policy=UPLOAD,
        action="abort",
        target=U.ABORTED,
        states=(U.VERIFYING,),
        since=("updated_at",),
        limit_s=lambda: settings.PORTAL_TASK_TIME_LIMITS["unpack"][1] + 600,
        code="upload-verify-lost",
        sentence="The portal stopped verifying this file before it finished (its worker was lost); nothing was "
        "stored and its space is freed. Upload the file again.",
        record=_upload_lost,
        then="submissions.direct_uploads.upload_direct_discard",
    ),
)
