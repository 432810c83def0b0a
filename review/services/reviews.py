"""Reviews on the frozen version and the quorum that completes the review."""

from __future__ import annotations

from django.db import transaction

from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review.lifecycle import (
    SUBMISSION,
)
from review.models import Comment, Review, ReviewAssignment
from review.services.common import (
    review_complete_if_quorum,
    submission_label,
    submission_locked,
    submission_submitters,
    text_within_cap,
)
from review.services.thread import comment_post


@transaction.atomic
def review_submit(
    *, assignment: ReviewAssignment, actor, decision: str, body: str = "", objection_type: str = ""
) -> Review:
    """The reviewer's decision on the frozen version: approve (the quorum may complete the review), request
    changes (back to the submitter), or object (an objection is opened in the thread)."""
    submission = submission_locked(assignment.submission)
    assignment = ReviewAssignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.reviewer_id != getattr(actor, "pk", None):
        raise NotAllowedError("Only a reviewer who accepted this assignment can review it.")
    # an accepted assignment, no conflict of interest now, the submission in review
    SUBMISSION.require(actor, submission, "review")
    if decision not in Review.Decision.values:
        raise ApplicationError(
            f"Decision must be one of {', '.join(Review.Decision.values)}.", code="invalid"
        )
    body = text_within_cap((body or "").strip(), what="A review")
    if decision != Review.Decision.APPROVE and not body:
        raise ApplicationError("Say what must change, or what you object to.", code="invalid")
    version = submission.submitted_version
    if Review.objects.filter(assignment=assignment, version=version).exists():
        raise ConflictError(f"You already reviewed version {version.number}.", code="already-reviewed")
    review = Review.objects.create(assignment=assignment, version=version, decision=decision, body=body)
    audit_event_record(
        actor=actor,
        action=f"review.{decision}",
        obj=review,
        data={"submission": submission.pk, "version": version.number},
    )
    if decision == Review.Decision.OBJECT:
        comment_post(
            submission=submission,
            actor=actor,
            body=body,
            kind=Comment.Kind.OBJECTION,
            objection_type=objection_type or Comment.ObjectionType.VALIDITY,
        )
    elif decision == Review.Decision.REQUEST_CHANGES:
        SUBMISSION.take(actor, submission, "request_changes", reason=body)
        notify(
            users=submission_submitters(submission),
            kind="review.changes_requested",
            submission_id=submission.pk,
            subject=f"Changes requested on {submission_label(submission)}",
            body=body,
            url=f"/submissions/{submission.pk}/",
        )
    else:
        review_complete_if_quorum(submission, actor)
    return review
