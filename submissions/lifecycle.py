"""The lifecycle of a submission as one table: which action moves it from which states to which, who may take
it and what it needs; `transition()` is the only code that changes a submission's status.

The review and publication work adds rows to TRANSITIONS (assign, accept, quorum, attest, publish...), not new
code paths: every row is checked, written by compare-and-set and audited the same way, and `allowed_actions()`
turns the table into the buttons of the pages and the `allowed_actions` of the API. docs/lifecycle.md shows the
table (`python manage.py lifecycle_doc --write` regenerates it; a test fails when the two drift).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from accounts.models import Membership
from accounts.selectors import user_is_auditor, user_is_chair, user_org_ids
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.models import CheckRun, Submission
from submissions.selectors import check_run_latest, version_latest

Status = Submission.Status


# --- Who may: predicates over (user, submission) ------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """A kind of person the table names in its "who may" column."""

    name: str
    description: str  # plural, for messages and docs: "Only {description} can withdraw."
    may: Callable[[object, Submission], bool]
    system: bool = False  # the portal itself (a scheduled job), acting with no user

    def __call__(self, user, submission: Submission) -> bool:
        if self.system:
            return user is None
        if user is None or not user.is_authenticated or not user.is_active:
            return False
        return self.may(user, submission)


SUBMITTER = Actor(
    "submitter",
    "submitters and org admins of the submitting organisation",
    lambda user, submission: (
        submission.organisation_id
        in user_org_ids(user, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    ),
)
AUDITOR = Actor("auditor", "auditors", lambda user, submission: user_is_auditor(user))
SCHEDULE = Actor("schedule", "the publication schedule", lambda user, submission: False, system=True)
CHAIR = Actor("chair", "the chair", lambda user, submission: user_is_chair(user))


# --- Rules that live in a higher app ------------------------------------------------------------
# The review app knows assignments, approvals, objections and waivers; submissions may not import it. It plugs
# its checks in at start-up (review.apps.ReviewConfig.ready), so the table stays one table here.

PLUG_NAMES = ("assigned_reviewer", "unwaived_errors", "quorum_reached", "ready_for_attestation")
_PLUGGED: dict[str, Callable] = {}


def plug(name: str, function: Callable) -> None:
    """Install one of PLUG_NAMES (called once per process by the app that owns the rule)."""
    if name not in PLUG_NAMES:
        raise ValueError(f"unknown lifecycle plug {name!r}")
    _PLUGGED[name] = function


def _plugged(name: str) -> Callable:
    try:
        return _PLUGGED[name]
    except KeyError:  # the review app is not installed or not ready: refuse loudly, never allow silently
        raise RuntimeError(f"lifecycle rule {name!r} is not installed (is the review app ready?)") from None


ASSIGNED_REVIEWER = Actor(
    "assigned_reviewer",
    "reviewers assigned to the submission who accepted",
    lambda user, submission: bool(_plugged("assigned_reviewer")(user, submission)),
)


# --- Preconditions: what a row needs besides state and actor ------------------------------------


@dataclass(frozen=True)
class Ready:
    """A precondition that holds: the extra fields the transition writes and what its audit event records."""

    fields: dict = field(default_factory=dict)
    audit_data: dict = field(default_factory=dict)


def _latest_version_passed(submission: Submission) -> Ready:
    """Submit (and resubmit) need the latest version's latest check to have passed, or to have failed only on
    findings the submitter asked to waive (the chair or an auditor decides); that version is frozen for review."""
    version = version_latest(submission)
    check_run = check_run_latest(version) if version is not None else None
    if (
        version is None
        or check_run is None
        or check_run.status
        not in (
            CheckRun.Status.PASSED,
            CheckRun.Status.FAILED,
        )
    ):
        state = (
            ""
            if version is None
            else f" (version {version.number}: {'no check yet' if check_run is None else check_run.status})"
        )
        raise ConflictError(
            f"Submit needs a version whose latest check passed{state}.", code="check-not-passed"
        )
    if check_run.status == CheckRun.Status.FAILED:
        unwaived = _plugged("unwaived_errors")(version, check_run)
        if not check_run.findings.filter(severity="error").exists():
            raise ConflictError(
                f"Submit needs a version whose latest check passed (version {version.number}: failed).",
                code="check-not-passed",
            )
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


def _quorum_reached(submission: Submission) -> Ready:
    return _plugged("quorum_reached")(submission)


def _ready_for_attestation(submission: Submission) -> Ready:
    return _plugged("ready_for_attestation")(submission)


# --- The table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transition:
    """One row: `action` moves a submission from one of `sources` to `target`, taken by one of `actors`."""

    action: str
    sources: tuple[str, ...]
    target: str
    actors: tuple[Actor, ...]
    label: str  # the button
    done: str  # past participle for messages: "Submission #3 withdrawn."
    reason_required: bool = False
    precondition: Callable[[Submission], Ready] | None = None
    needs: str = ""  # the precondition in words, for docs/lifecycle.md
    # Taken by a review service as the consequence of another step (an acceptance, a decision, an
    # attestation with its record), never by a bare button: no route and no allowed action of its own.
    automatic: bool = False
    event: str = ""  # the audit action, when `done` is not one word

    @property
    def audit_action(self) -> str:
        return self.event or f"submission.{self.done}"

    @property
    def who(self) -> str:
        return " or ".join(actor.description for actor in self.actors)

    def actor_may(self, user, submission: Submission) -> bool:
        return any(actor(user, submission) for actor in self.actors)


# A published result is retracted through a challenge, never withdrawn silently; terminal states stay.
NON_TERMINAL = tuple(
    status for status in Status.values if status not in (*Submission.TERMINAL_STATUSES, Status.PUBLISHED)
)
# Where reviewers and auditors are at work (DESIGN.md: "any review/audit state --> rejected").
REVIEW_AND_AUDIT = (Status.SUBMITTED, Status.IN_REVIEW, Status.CHANGES_REQUESTED, Status.PEER_REVIEWED)

TRANSITIONS: tuple[Transition, ...] = (
    Transition(
        action="submit",
        sources=(Status.DRAFT,),
        target=Status.SUBMITTED,
        actors=(SUBMITTER,),
        label="Submit for review",
        done="submitted",
        precondition=_latest_version_passed,
        needs="the latest version's latest check passed; that version is frozen for review",
    ),
    Transition(
        action="start_review",
        sources=(Status.SUBMITTED,),
        target=Status.IN_REVIEW,
        actors=(ASSIGNED_REVIEWER,),
        label="Accept the review",
        done="taken into review",
        event="submission.in_review",
        automatic=True,
        needs="the first assigned reviewer accepts (review.services.assignment_accept)",
    ),
    Transition(
        action="request_changes",
        sources=(Status.IN_REVIEW,),
        target=Status.CHANGES_REQUESTED,
        actors=(ASSIGNED_REVIEWER,),
        label="Request changes",
        done="sent back for changes",
        event="submission.changes_requested",
        reason_required=True,
        automatic=True,
        needs="a reviewer's review asks for changes (review.services.review_submit)",
    ),
    Transition(
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
    Transition(
        action="complete_review",
        sources=(Status.IN_REVIEW,),
        target=Status.PEER_REVIEWED,
        actors=(ASSIGNED_REVIEWER, CHAIR),
        label="Approve",
        done="peer reviewed",
        event="submission.peer_reviewed",
        precondition=_quorum_reached,
        automatic=True,
        needs="a quorum of approvals of the frozen version (PORTAL_REVIEW_QUORUM) and no open objection; taken "
        "by the approval (or the chair's closing of an objection) that completes it",
    ),
    Transition(
        action="attest",
        sources=(Status.PEER_REVIEWED,),
        target=Status.AUDITED,
        actors=(AUDITOR,),
        label="Attest",
        done="audited",
        reason_required=True,
        precondition=_ready_for_attestation,
        automatic=True,
        needs="notes; every error finding waived, no open objection or evidence request "
        "(review.services.attestation_record)",
    ),
    Transition(
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
    Transition(
        action="withdraw",
        sources=NON_TERMINAL,
        target=Status.WITHDRAWN,
        actors=(SUBMITTER,),
        label="Withdraw",
        done="withdrawn",
        reason_required=True,
        needs="a reason",
    ),
    Transition(
        action="reject",
        sources=REVIEW_AND_AUDIT,
        target=Status.REJECTED,
        actors=(AUDITOR, CHAIR),
        label="Reject",
        done="rejected",
        reason_required=True,
        needs="a reason",
    ),
)
TRANSITIONS_BY_ACTION = {row.action: row for row in TRANSITIONS}
assert len(TRANSITIONS_BY_ACTION) == len(TRANSITIONS), "one row per action"


BUTTON_TRANSITIONS = tuple(row for row in TRANSITIONS if not row.automatic)


def transition_row(action: str) -> Transition:
    try:
        return TRANSITIONS_BY_ACTION[action]
    except KeyError:
        raise ApplicationError(f"No lifecycle action {action!r}.", code="unknown-action") from None


# --- Doing it -----------------------------------------------------------------------------------


def _refuse_state(row: Transition, submission: Submission, current: str) -> ConflictError:
    if len(row.sources) == 1:
        detail = f"Submission #{submission.pk} is {current}, not {row.sources[0]}."
    else:
        detail = f"Submission #{submission.pk} is {current}: it cannot be {row.done}."
    return ConflictError(detail, code="state-conflict", extra={"status": current, "action": row.action})


def _check(row: Transition, *, submission: Submission, actor, reason: str) -> Ready:
    """The row's guards in order: actor, state, reason, precondition. Raises the refusal."""
    if not row.actor_may(actor, submission):
        raise NotAllowedError(f"Only {row.who} can {row.action}.", extra={"action": row.action})
    if submission.status not in row.sources:
        raise _refuse_state(row, submission, submission.status)
    if row.reason_required and not reason:
        raise ApplicationError(f"Say why the submission is {row.done}.", code="invalid")
    return row.precondition(submission) if row.precondition is not None else Ready()


@transaction.atomic
def transition(*, submission: Submission, action: str, actor, reason: str = "", **fields) -> Submission:
    """Take `action` on the submission as `actor`: check the row, write the new status by compare-and-set from
    the status the caller saw (0 rows = someone else changed it first: ConflictError `state-conflict`), and
    record the audit event with the real actor in the same transaction. Returns the refreshed submission."""
    row = transition_row(action)
    reason = (reason or "").strip()
    ready = _check(row, submission=submission, actor=actor, reason=reason)
    old = submission.status
    now = timezone.now()
    updated = Submission.objects.filter(pk=submission.pk, status=old).update(
        status=row.target,
        status_changed_at=now,
        status_reason=reason,
        updated_at=now,
        **ready.fields,
        **fields,
    )
    if not updated:
        current = Submission.objects.filter(pk=submission.pk).values_list("status", flat=True).first()
        raise ConflictError(
            f"Submission #{submission.pk} is {current}, not {old}: it changed meanwhile. Reload and try again.",
            code="state-conflict",
            extra={"status": current, "action": row.action},
        )
    submission.refresh_from_db()
    audit_event_record(
        actor=actor,
        action=row.audit_action,
        obj=submission,
        data={"from": old, "to": row.target, **ready.audit_data, **({"reason": reason} if reason else {})},
    )
    return submission


# --- Which buttons exist ------------------------------------------------------------------------


@dataclass(frozen=True)
class AllowedAction:
    """An action the user may take on the submission in its current state; `blocked` when a precondition
    is missing (the button is shown disabled, with why)."""

    action: str
    label: str
    target: str
    reason_required: bool
    done: str
    blocked_code: str = ""
    blocked_detail: str = ""

    @property
    def enabled(self) -> bool:
        return not self.blocked_code


def allowed_actions(user, submission: Submission) -> list[AllowedAction]:
    """The table's rows this user may take on this submission now, in table order."""
    allowed = []
    for row in TRANSITIONS:
        if row.automatic or submission.status not in row.sources or not row.actor_may(user, submission):
            continue
        blocked_code = blocked_detail = ""
        if row.precondition is not None:
            try:
                row.precondition(submission)
            except ApplicationError as exc:
                blocked_code, blocked_detail = exc.code, exc.detail
        allowed.append(
            AllowedAction(
                action=row.action,
                label=row.label,
                target=row.target,
                reason_required=row.reason_required,
                done=row.done,
                blocked_code=blocked_code,
                blocked_detail=blocked_detail,
            )
        )
    return allowed


# --- The table in docs/lifecycle.md -------------------------------------------------------------

DOC_START = "<!-- lifecycle-table:start (generated from submissions/lifecycle.py: manage.py lifecycle_doc --write) -->"
DOC_END = "<!-- lifecycle-table:end -->"


def table_markdown() -> str:
    """The table as docs/lifecycle.md shows it."""
    lines = [
        "| action | from | to | who may | needs | audit event |",
        "|---|---|---|---|---|---|",
    ]
    for row in TRANSITIONS:
        sources = ", ".join(f"`{status}`" for status in row.sources)
        lines.append(
            f"| `{row.action}` | {sources} | `{row.target}` | {row.who} | {row.needs or '—'} | "
            f"`{row.audit_action}` |"
        )
    return "\n".join(lines)
