"""The review thread: comments, questions and objections, and closing an objection."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.selectors import (
    auditors,
    chairs,
    user_org_ids,
)
from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError
from review import selectors
from review.lifecycle import (
    OBJECTION,
    SUBMISSION,
)
from review.models import Comment
from review.services.common import (
    review_complete_if_quorum,
    submission_label,
    submission_locked,
    submission_reviewers,
    submission_submitters,
    submission_url,
    text_within_cap,
)
from submissions.models import Finding, Submission, SubmissionVersion


def _may_post(actor, submission: Submission, visibility: str) -> bool:
    allowed = selectors.comment_visibilities_for(actor, submission)
    return visibility in allowed


# The longest comment, review or answer any door takes (the API's serializers say the same): readers of a review
# page load every comment of the thread.


@transaction.atomic
def comment_post(
    *,
    submission: Submission,
    actor,
    body: str,
    kind: str = Comment.Kind.COMMENT,
    objection_type: str = "",
    visibility: str = Comment.Visibility.ALL,
    parent: Comment | None = None,
    finding: Finding | None = None,
    point_key: str = "",
    file: str = "",
    line: int | None = None,
    version: SubmissionVersion | None = None,
) -> Comment:
    """A comment, an objection (reviewers, auditors, the chair) or a reply. A submitter's reply to an open
    objection answers it; an objection's answer is due in PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS business days."""
    body = text_within_cap((body or "").strip(), what="A comment")
    if not body:
        raise ApplicationError("A comment needs a text.", code="invalid")
    objection = kind == Comment.Kind.OBJECTION
    visibility = _comment_visibility_allowed(
        submission, actor, objection=objection, visibility=visibility, parent=parent
    )
    is_submitter = submission.organisation_id in user_org_ids(actor)
    if objection:
        _objection_allowed(is_submitter=is_submitter, objection_type=objection_type, parent=parent)
    if finding is not None and finding.check_run.version.submission_id != submission.pk:
        raise ApplicationError("The finding belongs to another submission.", code="invalid")
    comment = Comment(
        submission=submission,
        version=version or submission.submitted_version or submission.versions.order_by("-number").first(),
        parent=parent,
        author=actor,
        kind=kind,
        objection_type=objection_type if objection else "",
        visibility=visibility,
        body=body,
        finding=finding,
        point_key=point_key or "",
        file=file or "",
        line=line,
        answer_due_at=(
            selectors.add_business_days(timezone.now(), settings.PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS)
            if objection
            else None
        ),
    )
    data = {
        "submission": submission.pk,
        "visibility": visibility,
        **({"type": objection_type} if objection else {}),
        **({"parent": parent.pk} if parent is not None else {}),
    }
    comment.full_clean()
    if objection:
        OBJECTION.create(actor, comment, "raise", data=data)
    else:
        comment.save()
        audit_event_record(actor=actor, action="review.commented", obj=comment, data=data)
    if parent is not None and parent.kind == Comment.Kind.OBJECTION and is_submitter:
        _objection_answered(parent, answer=comment, actor=actor)
    _comment_announce(comment, actor=actor)
    return comment


def _comment_visibility_allowed(
    submission: Submission, actor, *, objection: bool, visibility: str, parent: Comment | None
) -> str:
    """The visibility the comment gets (a reply's is its parent's), once the thread is open to the actor at it
    (a reviewer with a conflict of interest may not write)."""
    SUBMISSION.require(actor, submission, "object" if objection else "comment")
    if visibility not in Comment.Visibility.values:
        raise ApplicationError(
            f"Visibility must be one of {', '.join(Comment.Visibility.values)}.", code="invalid"
        )
    if parent is not None:
        if parent.submission_id != submission.pk:
            raise ApplicationError("The reply belongs to another submission's thread.", code="invalid")
        visibility = parent.visibility  # a reply is read by whoever read what it answers
    if not _may_post(actor, submission, visibility):
        raise NotAllowedError("You cannot write in this thread at that visibility.")
    return visibility


def _objection_allowed(*, is_submitter: bool, objection_type: str, parent: Comment | None) -> None:
    if is_submitter:
        raise NotAllowedError("Objections are raised by reviewers, auditors and the chair.")
    if objection_type not in Comment.ObjectionType.values:
        raise ApplicationError(
            f"An objection's type is one of {', '.join(Comment.ObjectionType.values)}.", code="invalid"
        )
    if parent is not None:
        raise ApplicationError("An objection starts its own thread.", code="invalid")


def _objection_answered(objection: Comment, *, answer: Comment, actor) -> None:
    """The submitter's reply answers the open objection (once: the policy moves it from `open` only)."""
    OBJECTION.take(
        actor,
        objection,
        "answer",
        data={"submission": objection.submission_id, "answer": answer.pk},
        quiet=True,
    )


def _comment_announce(comment: Comment, *, actor) -> None:
    """Tell the thread's other readers at the comment's visibility."""
    submission = comment.submission
    objection = comment.kind == Comment.Kind.OBJECTION
    readers = _thread_readers(submission, comment.visibility)
    notify(
        users=[user for user in readers if user.pk != actor.pk],
        kind="review.objection" if objection else "review.comment",
        submission_id=submission.pk,
        subject=(
            f"Objection ({comment.get_objection_type_display().lower()}) on {submission_label(submission)}"
            if objection
            else f"New comment on {submission_label(submission)}"
        ),
        body=comment.body[:2000],
        url=submission_url(submission),
    )


def _thread_readers(submission: Submission, visibility: str) -> list:
    readers = auditors() + chairs()
    if visibility in (Comment.Visibility.ALL, Comment.Visibility.REVIEWERS):
        readers += submission_reviewers(submission)
    if visibility == Comment.Visibility.ALL:
        readers += submission_submitters(submission)
    return readers


@transaction.atomic
def objection_close(*, objection: Comment, actor, outcome: str, note: str = "") -> Comment:
    """The objector or the chair resolves or overrules an objection; the quorum may then complete the review."""
    submission = submission_locked(objection.submission)
    objection = Comment.objects.select_for_update().get(pk=objection.pk)
    if objection.kind != Comment.Kind.OBJECTION:
        raise ApplicationError("Only an objection is resolved or overruled.", code="invalid")
    actions = {Comment.ObjectionStatus.RESOLVED: "resolve", Comment.ObjectionStatus.OVERRULED: "overrule"}
    if outcome not in actions:
        raise ApplicationError("Outcome is resolved or overruled.", code="invalid")
    OBJECTION.take(
        actor,
        objection,
        actions[outcome],
        fields={"closed_by": actor, "closed_at": timezone.now()},
        data={"submission": submission.pk, "note": (note or "").strip()},
    )
    if (note or "").strip():
        comment_post(submission=submission, actor=actor, body=note, parent=objection)
    review_complete_if_quorum(submission, actor)
    return objection
