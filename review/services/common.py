"""What the review's writes share: the submission's submitters and reviewers, its page and label, and the
submission row locked for a write."""

from __future__ import annotations

from accounts.selectors import (
    auditors,
    organisation_submitters,
)
from accounts.services.notifications import notify
from portal.errors import ApplicationError, ConflictError
from review.lifecycle import (
    SUBMISSION,
)
from review.models import ReviewAssignment
from submissions.models import Submission

Status = Submission.Status


def submission_submitters(submission: Submission):
    return organisation_submitters(submission.organisation_id)


def submission_reviewers(submission: Submission, *, accepted_only: bool = True):
    states = ReviewAssignment.states.q("accepted" if accepted_only else "active")
    return [
        assignment.reviewer
        for assignment in ReviewAssignment.objects.filter(states, submission=submission).select_related(
            "reviewer"
        )
    ]


def submission_url(submission: Submission) -> str:
    return f"/review/submissions/{submission.pk}/"


def submission_label(submission: Submission) -> str:
    """How notifications name a submission: its number and benchmark (the system name stays on the page,
    which checks who may see it)."""
    return f"submission #{submission.pk} ({submission.benchmark.model_id})"


def submission_locked(submission: Submission) -> Submission:
    """The submission row locked for this transaction: review steps on one submission run one at a time."""
    return Submission.objects.select_for_update().get(pk=submission.pk)


def review_complete_if_quorum(submission: Submission, actor) -> bool:
    """Move to peer_reviewed when the quorum holds (called after every approval and objection closed, whose own
    row already judged `actor`): the portal takes the row, the event names `actor`."""
    if not SUBMISSION.state_allows(submission, "complete_review"):
        return False
    try:  # the row's precondition is the quorum: judged once, by the take
        SUBMISSION.take(None, submission, "complete_review", caused_by=actor)
    except ConflictError as exc:
        if exc.code not in ("quorum-not-reached", "objection-open"):
            raise
        return False
    notify(
        users=submission_submitters(submission) + auditors(),
        kind="review.peer_reviewed",
        submission_id=submission.pk,
        subject=f"{submission_label(submission)} is peer reviewed",
        body="A quorum of reviewers approved it; it waits for an auditor.",
        url=submission_url(submission),
    )
    return True


TEXT_MAX_CHARS = 20_000


def text_within_cap(text: str, *, what: str) -> str:
    if len(text) > TEXT_MAX_CHARS:
        raise ApplicationError(
            f"{what} can be at most {TEXT_MAX_CHARS:,} characters (this one has {len(text):,}): shorten it, or "
            "attach the long part as a file to a new version.",
            code="text-too-long",
            extra={"max_chars": TEXT_MAX_CHARS},
        )
    return text
