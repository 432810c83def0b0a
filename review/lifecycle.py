"""The workflow of a submission as one table (state -> action -> who may, and what it needs), and the tables of
the review's own objects: assignment, objection, waiver, evidence request. A state changes only through the
table's `take` (portal.policy: who, state, compare-and-set, audit event in one call); every review service asks a
table before it writes.

The submission's table lives here, in review/, because its rules name what review/ knows (assignments accepted,
conflicts of interest judged now, waivers, the quorum, open objections): submissions/ sits below and may not
import it, and nothing is plugged in at start-up (docs/portal.md, "The workflow policy"). The publication's tables
are leaderboard.workflow's, the upload's and the check run's submissions.workflow's. docs/lifecycle.md shows every
table (`python manage.py lifecycle_doc --write` regenerates it; a test fails when the two drift).
"""

from __future__ import annotations

from django.utils import timezone

from accounts.actors import AUDITOR, CHAIR, MEMBER, QUORUM, SCHEDULE, SUBMITTER
from portal.errors import ApplicationError, ConflictError
from portal.policy import Actor, AllowedAction, Policy, Ready, Rule
from review import selectors
from review.models import Comment, EvidenceRequest, ReviewAssignment, Waiver
from submissions.models import CheckRun, Submission
from submissions.selectors import check_run_latest, version_latest
from submissions.workflow import SUBMISSION_FILE_RULES

Status = Submission.Status

__all__ = [
    "Ready",
    "AllowedAction",
    "SUBMISSION",
    "allowed_actions",
    "require",
    "allowed",
]


# --- Who may: predicates over (user, submission), judged at the moment of the action -------------------------


def _submission_of(obj) -> Submission:
    """The submission a row of any review table belongs to (its organisation and reviewers decide who may)."""
    if isinstance(obj, Submission):
        return obj
    if isinstance(obj, Waiver):
        return obj.version.submission
    return obj.submission


ASSIGNED_REVIEWER = Actor(
    "assigned_reviewer",
    "reviewers assigned to the submission who accepted and have no conflict of interest now",
    lambda user, obj: selectors.user_is_assigned_reviewer(user, _submission_of(obj)),
)
ACTIVE_REVIEWER = Actor(
    "active_reviewer",
    "reviewers invited to or assigned to the submission with no conflict of interest now",
    lambda user, obj: (
        selectors.assignment_active(user, _submission_of(obj)) is not None
        and not selectors.user_is_conflicted(user, _submission_of(obj))
    ),
)
ASSIGNEE = Actor(
    "assignee",
    "the reviewer the assignment names, with no conflict of interest now",
    lambda user, assignment: (
        assignment.reviewer_id == user.pk and not selectors.user_is_conflicted(user, assignment.submission)
    ),
)
OBJECTOR = Actor(
    "objector",
    "the objector, with no conflict of interest now",
    lambda user, objection: (
        objection.author_id == user.pk and not selectors.user_is_conflicted(user, objection.submission)
    ),
)


# --- Preconditions: what a row needs besides state and actor ---------------------------------------------------


def _latest_version_passed(submission: Submission) -> Ready:
    """Submit (and resubmit) need the latest version's latest check to have passed, or to have failed only on
    findings the submitter asked to waive (the chair or an auditor decides); that version is frozen for review."""
    version = version_latest(submission)
    check_run = check_run_latest(version) if version is not None else None
    if version is None or check_run is None or check_run.status not in CHECK_JUDGED:
        state = (
            ""
            if version is None
            else f" (version {version.number}: {'no check yet' if check_run is None else check_run.status})"
        )
        raise ConflictError(
            f"Submit needs a version whose latest check passed{state}.", code="check-not-passed"
        )
    if check_run.in_state("failed"):
        if not check_run.findings.filter(severity="error").exists():
            raise ConflictError(
                f"Submit needs a version whose latest check passed (version {version.number}: failed).",
                code="check-not-passed",
            )
        unwaived = selectors.unwaived_errors(version, check_run)
        if unwaived:
            rules = ", ".join(sorted({finding.rule for finding in unwaived})[:5])
            raise ConflictError(
                f"Submit needs a version whose latest check passed (version {version.number}: failed on "
                f"{len(unwaived)} error finding{'s' if len(unwaived) != 1 else ''}: {rules}). Fix them and upload a "
                f"new version, or ask for a waiver of each with a justification.",
                code="check-not-passed",
            )
    return Ready(
        fields={"submitted_version": version},
        audit_data={"version": version.number, "sha256": version.sha256, "check_run": check_run.pk},
    )


CHECK_JUDGED = (CheckRun.Status.PASSED, CheckRun.Status.FAILED)


def _new_version_passed(submission: Submission) -> Ready:
    """Resubmit needs a version newer than the one the reviewers saw, checked like a first submission."""
    latest = version_latest(submission)
    if latest is None or latest.pk == submission.submitted_version_id:
        raise ConflictError(
            "Upload a new version with the requested changes first; the reviewers then see what changed.",
            code="no-new-version",
        )
    ready = _latest_version_passed(submission)
    return Ready(
        fields=ready.fields, audit_data={**ready.audit_data, "previous": submission.submitted_version_id}
    )


def quorum_precondition(submission: Submission) -> Ready:
    """Enough approvals of the frozen version by reviewers without a conflict now, and no open objection."""
    approvals = selectors.approvals_count(submission)
    needed = selectors.quorum_size()
    if approvals < needed:
        raise ConflictError(f"{approvals} of {needed} approvals so far.", code="quorum-not-reached")
    objections = selectors.open_objections(submission).count()
    if objections:
        raise ConflictError(
            f"{objections} objection{'s' if objections != 1 else ''} still open.", code="objection-open"
        )
    return Ready(audit_data={"approvals": approvals, "version": submission.submitted_version_id})


def attestation_precondition(submission: Submission) -> Ready:
    readiness = selectors.attestation_readiness(submission)
    if not readiness.ready:
        raise ConflictError(
            "Attestation needs " + "; ".join(readiness.missing) + ".", code="not-ready-for-audit"
        )
    return Ready(audit_data={"version": submission.submitted_version_id})


# --- The submission's table ----------------------------------------------------------------------------------

# A published result is retracted through a challenge, never withdrawn silently; terminal states stay.
NON_TERMINAL = tuple(
    status for status in Status.values if status not in (*Submission.TERMINAL_STATUSES, Status.PUBLISHED)
)
# Where reviewers and auditors are at work (DESIGN.md: "any review/audit state --> rejected"); the thread is open.
REVIEW_AND_AUDIT = (Status.SUBMITTED, Status.IN_REVIEW, Status.CHANGES_REQUESTED, Status.PEER_REVIEWED)
# Where a reviewer can still be assigned.
REVIEWABLE = (Status.SUBMITTED, Status.IN_REVIEW, Status.CHANGES_REQUESTED)
# Where a waiver can still matter: before and during review and audit (not once audited, published or closed).
WAIVABLE = (Status.DRAFT, *REVIEW_AND_AUDIT)


def _moved_stamp(reason: str) -> dict:
    """What every move of a submission writes beside its status: when, and the reason given (or none)."""
    now = timezone.now()
    return {"status_changed_at": now, "status_reason": reason, "updated_at": now}


SUBMISSION = Policy(
    name="submission",
    states=tuple(Status.values),
    description="Transitions (a `to` state) are taken by `SUBMISSION.take()`; the other rows are writes beside the "
    "submission that its state and the actor's role decide.",
    stamp=_moved_stamp,
    rules=(
        Rule(
            action="submit",
            sources=(Status.DRAFT,),
            target=Status.SUBMITTED,
            actors=(SUBMITTER,),
            label="Submit for review",
            done="submitted",
            precondition=_latest_version_passed,
            needs="the latest version's latest check passed; that version is frozen for review",
        ),
        Rule(
            action="start_review",
            sources=(Status.SUBMITTED,),
            target=Status.IN_REVIEW,
            actors=(ASSIGNED_REVIEWER,),
            label="Accept the review",
            done="taken into review",
            event="submission.in_review",
            automatic=True,
            needs="the first assigned reviewer accepts (review.services.assignments.assignment_accept)",
        ),
        Rule(
            action="request_changes",
            sources=(Status.IN_REVIEW,),
            target=Status.CHANGES_REQUESTED,
            actors=(ASSIGNED_REVIEWER,),
            label="Request changes",
            done="sent back for changes",
            event="submission.changes_requested",
            reason_required=True,
            automatic=True,
            needs="a reviewer's review asks for changes (review.services.reviews.review_submit)",
        ),
        Rule(
            action="resubmit",
            sources=(Status.CHANGES_REQUESTED,),
            target=Status.IN_REVIEW,
            actors=(SUBMITTER,),
            label="Send the new version to the reviewers",
            done="resubmitted",
            event="submission.in_review",
            precondition=_new_version_passed,
            needs="a new version whose latest check passed (or failed only on findings with a waiver asked for)",
        ),
        Rule(
            action="complete_review",
            sources=(Status.IN_REVIEW,),
            target=Status.PEER_REVIEWED,
            actors=(QUORUM,),
            label="Approve",
            done="peer reviewed",
            event="submission.peer_reviewed",
            precondition=quorum_precondition,
            automatic=True,
            needs="a quorum of approvals of the frozen version (PORTAL_REVIEW_QUORUM) by reviewers without a "
            "conflict of interest when counted, and no open objection; taken by the approval (or the chair's "
            "closing of an objection) that completes it",
        ),
        Rule(
            action="attest",
            sources=(Status.PEER_REVIEWED,),
            target=Status.AUDITED,
            actors=(AUDITOR,),
            label="Attest",
            done="audited",
            reason_required=True,
            precondition=attestation_precondition,
            automatic=True,
            needs="notes; every error finding waived, no open objection or evidence request "
            "(review.services.attestations.attestation_record)",
        ),
        Rule(
            action="publish",
            sources=(Status.AUDITED,),
            target=Status.PUBLISHED,
            actors=(SUBMITTER, SCHEDULE),
            label="Publish",
            done="published",
            automatic=True,
            needs="the submitter's choice of date (now, an embargo date, the next cohort); the schedule publishes "
            "what is due (leaderboard.services)",
        ),
        Rule(
            action="withdraw",
            sources=NON_TERMINAL,
            target=Status.WITHDRAWN,
            actors=(SUBMITTER,),
            label="Withdraw",
            done="withdrawn",
            reason_required=True,
            needs="a reason",
        ),
        Rule(
            action="reject",
            sources=REVIEW_AND_AUDIT,
            target=Status.REJECTED,
            actors=(AUDITOR, CHAIR),
            label="Reject",
            done="rejected",
            reason_required=True,
            needs="a reason",
        ),
        # Writes beside the submission: its state stays.
        Rule(
            action="comment",
            sources=REVIEW_AND_AUDIT,
            actors=(MEMBER, ACTIVE_REVIEWER, AUDITOR, CHAIR),
            label="Comment",
            needs="the thread is open (submitted to peer reviewed); a reviewer with a conflict of interest now "
            "is refused (review.services.thread.comment_post)",
        ),
        Rule(
            action="object",
            sources=REVIEW_AND_AUDIT,
            actors=(ACTIVE_REVIEWER, AUDITOR, CHAIR),
            label="Raise an objection",
            needs="a type; never by the submitting organisation (review.services.thread.comment_post)",
        ),
        Rule(
            action="review",
            sources=(Status.IN_REVIEW,),
            actors=(ASSIGNED_REVIEWER,),
            label="Review",
            needs="a decision on the frozen version, once per version (review.services.reviews.review_submit)",
        ),
        Rule(
            action="assign",
            sources=REVIEWABLE,
            actors=(CHAIR,),
            label="Assign a reviewer",
            needs="a reviewer of an organisation without a conflict of interest (review.services.assignments.assignment_create)",
        ),
        Rule(
            action="request_waiver",
            sources=WAIVABLE,
            actors=(SUBMITTER,),
            label="Ask for a waiver",
            needs="an error finding of the version's latest check and a justification (review.services.waivers.waiver_request)",
        ),
        Rule(
            action="waive",
            sources=REVIEW_AND_AUDIT,
            actors=(AUDITOR, CHAIR),
            label="Waive a finding",
            needs="a reason (review.services.waivers.waiver_grant_directly; a waiver's own decision is the waiver table's)",
        ),
        Rule(
            action="extend",
            sources=(Status.PUBLISHED,),
            actors=(SUBMITTER,),
            label="Open an extension",
            needs="its publication published and not retracted (leaderboard.workflow.PUBLICATION's `extend`)",
        ),
        Rule(
            action="request_evidence",
            sources=(Status.PEER_REVIEWED,),
            actors=(AUDITOR,),
            label="Request evidence",
            needs="a question (review.services.attestations.evidence_request)",
        ),
        *SUBMISSION_FILE_RULES,
    ),
)

TRANSITIONS = tuple(rule for rule in SUBMISSION.rules if rule.target)
Transition = Rule  # a row of the submission's table that moves it
TRANSITIONS_BY_ACTION = {row.action: row for row in TRANSITIONS}
BUTTON_TRANSITIONS = tuple(row for row in TRANSITIONS if not row.automatic)


# --- The review's objects ------------------------------------------------------------------------------------

A = ReviewAssignment.Status
ASSIGNMENT = Policy(
    name="assignment",
    states=tuple(A.values),
    event_name="review",
    rules=(
        Rule(
            "accept",
            (A.INVITED,),
            (ASSIGNEE,),
            "Accept",
            target=A.ACCEPTED,
            done="accepted",
            needs="no conflict of interest now; the first acceptance takes the submission into review",
        ),
        Rule(
            "decline",
            (A.INVITED,),
            (ASSIGNEE,),
            "Decline",
            target=A.DECLINED,
            done="declined",
            reason_required=True,
            needs="a reason (the chair reads it)",
        ),
        Rule(
            "release",
            (A.INVITED, A.ACCEPTED),
            (CHAIR, SCHEDULE),
            "Release",
            target=A.RELEASED,
            done="released",
            reason_required=True,
            needs="a reason; also automatic when a conflict is declared, a membership change "
            "makes the reviewer conflicted, or the deadline passes with no review",
        ),
    ),
)

OS = Comment.ObjectionStatus
OBJECTION = Policy(
    name="objection",
    states=tuple(OS.values),
    state_of=lambda comment: comment.objection_status,
    field="objection_status",
    rules=(
        Rule(
            "raise",
            (),
            (ACTIVE_REVIEWER, AUDITOR, CHAIR),
            "Object",
            target=OS.OPEN,
            done="raised",
            creates=True,
            event="review.objection_raised",
            needs="as the submission's `object` row; the answer is due in the configured business days",
        ),
        Rule(
            "answer",
            (OS.OPEN,),
            (MEMBER,),
            "Reply",
            target=OS.ANSWERED,
            done="answered",
            automatic=True,
            event="review.objection_answered",
            needs="a reply in the objection's thread by the submitting organisation",
        ),
        Rule(
            "resolve",
            (OS.OPEN, OS.ANSWERED),
            (OBJECTOR, CHAIR),
            "Resolve",
            target=OS.RESOLVED,
            done="resolved",
            event="review.objection_resolved",
            needs="the objector without a conflict of interest now, or the chair; the quorum may then complete "
            "the review",
        ),
        Rule(
            "overrule",
            (OS.OPEN, OS.ANSWERED),
            (OBJECTOR, CHAIR),
            "Overrule",
            target=OS.OVERRULED,
            done="overruled",
            event="review.objection_overruled",
            needs="as resolve",
        ),
    ),
)

W = Waiver.Status
_OVERSEE_WAIVER_STATES = REVIEW_AND_AUDIT


def _submission_under_review(waiver: Waiver) -> Ready:
    status = waiver.version.submission.status
    if status not in _OVERSEE_WAIVER_STATES:
        raise ConflictError(
            f"Waivers are decided while the submission is submitted, in review or peer reviewed (it is {status}).",
            code="state-conflict",
            extra={"status": status},
        )
    return Ready()


WAIVER = Policy(
    name="waiver",
    states=tuple(W.values),
    rules=(
        Rule(
            "grant",
            (W.REQUESTED,),
            (AUDITOR, CHAIR),
            "Grant",
            target=W.GRANTED,
            done="granted",
            reason_required=True,
            precondition=_submission_under_review,
            needs="a reason; the submission is submitted, in review or peer reviewed",
        ),
        Rule(
            "refuse",
            (W.REQUESTED,),
            (AUDITOR, CHAIR),
            "Refuse",
            target=W.REFUSED,
            done="refused",
            reason_required=True,
            precondition=_submission_under_review,
            needs="as grant",
        ),
    ),
)

E = EvidenceRequest.Status
EVIDENCE_REQUEST = Policy(
    name="evidence request",
    states=tuple(E.values),
    rules=(
        Rule(
            "answer",
            (E.OPEN,),
            (SUBMITTER,),
            "Answer",
            target=E.ANSWERED,
            done="answered",
            event="audit.evidence_answered",
            needs="a text (files go in the thread or a new version)",
        ),
    ),
)

POLICIES = (SUBMISSION, ASSIGNMENT, OBJECTION, WAIVER, EVIDENCE_REQUEST)


# --- The one vocabulary ---------------------------------------------------------------------------------------


def require(user, submission: Submission, action: str, *, reason: str = "") -> Ready:
    """Refuse (403 who / 409 state / the precondition's code) unless `user` may take `action` on the submission."""
    return SUBMISSION.require(user, submission, action, reason=reason)


def allowed(user, submission: Submission, action: str) -> bool:
    return SUBMISSION.allowed(user, submission, action)


def transition_row(action: str) -> Rule:
    try:
        return TRANSITIONS_BY_ACTION[action]
    except KeyError:
        raise ApplicationError(f"No lifecycle action {action!r}.", code="unknown-action") from None


def allowed_actions(user, submission: Submission) -> list[AllowedAction]:
    """The submission's transition buttons this user may take now, in table order (disabled with why)."""
    return [a for a in SUBMISSION.allowed_actions(user, submission) if a.target]
