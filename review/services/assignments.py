"""Reviewer assignments: created by the chair (or drawn), accepted, declined, released, and released when a
membership change makes them conflicted."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Membership
from accounts.selectors import (
    chairs,
    user_org_ids,
)
from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError
from review import selectors
from review.lifecycle import (
    ASSIGNMENT,
    SUBMISSION,
)
from review.models import ReviewAssignment
from review.services.common import submission_label, submission_locked, submission_submitters
from submissions.models import Submission


@transaction.atomic
def assignment_create(
    *, submission: Submission, reviewer, actor, due_at: datetime | None = None
) -> ReviewAssignment:
    """The chair asks `reviewer` to review the submission (they accept or decline)."""
    submission = submission_locked(submission)
    SUBMISSION.require(actor, submission, "assign")
    organisation_id = selectors.reviewer_organisation_for(reviewer, submission)
    if organisation_id is None:
        raise ApplicationError(
            f"{reviewer} cannot review submission #{submission.pk}: they are not a reviewer of an organisation "
            "without a conflict of interest with the submitter.",
            code="reviewer-not-eligible",
        )
    if selectors.assignment_active(reviewer, submission) is not None:
        raise ConflictError(
            f"{reviewer} is already assigned to submission #{submission.pk}.", code="already-assigned"
        )
    now = timezone.now()
    assignment = ReviewAssignment.objects.create(
        submission=submission,
        reviewer=reviewer,
        organisation_id=organisation_id,
        assigned_by=actor,
        due_at=due_at or now + timedelta(days=settings.PORTAL_REVIEW_DEADLINE_DAYS),
    )
    audit_event_record(
        actor=actor,
        action="review.assigned",
        obj=assignment,
        data={
            "submission": submission.pk,
            "reviewer": reviewer.username,
            "due_at": assignment.due_at.isoformat(),
        },
    )
    notify(
        users=[reviewer],
        kind="review.assigned",
        submission_id=submission.pk,
        subject=f"Please review {submission_label(submission)}",
        body=f"The chair asks you to review {submission_label(submission)} by {assignment.due_at:%Y-%m-%d}. Accept or decline "
        "on your review dashboard.",
        url="/review/",
    )
    return assignment


@transaction.atomic
def assignments_draw(*, submission: Submission, actor, count: int | None = None) -> list[ReviewAssignment]:
    """The chair asks for N reviewers (PORTAL_REVIEWERS_PER_SUBMISSION): drawn from eligible organisations with the
    least open load, one per organisation while there are enough organisations."""
    SUBMISSION.require(actor, submission, "assign")
    count = count or settings.PORTAL_REVIEWERS_PER_SUBMISSION
    candidates = selectors.eligible_reviewers(submission)
    if not candidates:
        raise ApplicationError(
            f"No reviewer is eligible for submission #{submission.pk}: every reviewer's organisation is the "
            "submitter's or in conflict with it.",
            code="no-eligible-reviewer",
        )
    org_load, reviewer_load = selectors.open_load_by_organisation(), selectors.open_load_by_reviewer()
    already_orgs = set(
        ReviewAssignment.objects.filter(
            ReviewAssignment.states.q("active"), submission=submission
        ).values_list("organisation_id", flat=True)
    )
    ranked = sorted(
        candidates,
        key=lambda pair: (
            pair[1] in already_orgs,
            org_load.get(pair[1], 0),
            reviewer_load.get(pair[0].pk, 0),
            pair[0].username,
        ),
    )
    chosen, used_orgs = [], set(already_orgs)
    for reviewer, organisation_id in ranked:  # one per organisation first
        if len(chosen) < count and organisation_id not in used_orgs:
            chosen.append(reviewer)
            used_orgs.add(organisation_id)
    for reviewer, _ in ranked:  # then fill from the least loaded, if organisations ran out
        if len(chosen) < count and reviewer not in chosen:
            chosen.append(reviewer)
    return [assignment_create(submission=submission, reviewer=reviewer, actor=actor) for reviewer in chosen]


def _locked(assignment: ReviewAssignment) -> ReviewAssignment:
    """The assignment, locked for the caller's transaction."""
    return ReviewAssignment.objects.select_for_update().select_related("submission").get(pk=assignment.pk)


@transaction.atomic
def assignment_accept(*, assignment: ReviewAssignment, actor) -> ReviewAssignment:
    """The reviewer accepts; the submission moves to `in_review` when its first reviewer accepts."""
    submission = submission_locked(assignment.submission)
    assignment = _locked(assignment)
    ASSIGNMENT.take(  # the assignee, with no conflict now
        actor,
        assignment,
        "accept",
        fields={"responded_at": timezone.now()},
        data={"submission": submission.pk},
    )
    if SUBMISSION.state_allows(submission, "start_review"):
        SUBMISSION.take(actor, submission, "start_review")
    notify(
        users=submission_submitters(submission),
        kind="review.accepted",
        submission_id=submission.pk,
        subject=f"A reviewer accepted {submission_label(submission)}",
        url=f"/submissions/{submission.pk}/",
    )
    return assignment


@transaction.atomic
def assignment_decline(*, assignment: ReviewAssignment, actor, reason: str) -> ReviewAssignment:
    if not (reason or "").strip():
        raise ApplicationError("Say why you decline (the chair reads it).", code="invalid")
    assignment = _locked(assignment)
    ASSIGNMENT.take(
        actor,
        assignment,
        "decline",
        reason=reason,
        fields={"responded_at": timezone.now(), "reason": reason.strip()},
        data={"submission": assignment.submission_id},
    )
    notify(
        users=chairs(),
        kind="review.declined",
        submission_id=assignment.submission_id,
        subject=f"{actor} declined to review {submission_label(assignment.submission)}",
        body=reason.strip(),
        url="/review/chair/",
    )
    return assignment


@transaction.atomic
def assignment_release(*, assignment: ReviewAssignment, actor, reason: str) -> bool:
    """The chair takes an assignment back (with a reason the reviewer and the log read)."""
    if not (reason or "").strip():
        raise ApplicationError("Say why the reviewer is released.", code="invalid")
    return _release(assignment, actor=actor, reason=reason.strip(), by=actor)


def assignment_release_automatic(assignment: ReviewAssignment, *, actor, reason: str) -> bool:
    """Release an active assignment as the consequence of another step (a declared conflict, a membership change
    by `actor`, or the missed deadline when actor is None): the portal takes the `release` row; its event names
    `actor`. False when it was no longer active (someone else released it first)."""
    return _release(assignment, actor=actor, reason=reason, by=None)


def _release(assignment: ReviewAssignment, *, actor, reason: str, by) -> bool:
    released = ASSIGNMENT.take(
        by,
        assignment,
        "release",
        reason=reason,
        fields={"reason": reason, "responded_at": timezone.now()},
        data={"submission": assignment.submission_id},
        quiet=by is None,
        caused_by=actor,
    )
    if not released:
        return False
    notify(
        users=[assignment.reviewer],
        kind="review.released",
        submission_id=assignment.submission_id,
        subject=f"You were released from {submission_label(assignment.submission)}",
        body=reason,
        url="/review/",
    )
    notify(
        users=chairs(),
        kind="review.released",
        submission_id=assignment.submission_id,
        subject=f"{assignment.reviewer} was released from {submission_label(assignment.submission)}",
        body=reason,
        url="/review/chair/",
        dedupe_key=f"released:{assignment.pk}",
    )
    return True


def assignments_release_conflicted(*, user, actor=None, reason: str = "") -> int:
    """After `user`'s memberships changed (they joined or left an organisation, a role changed): release each of
    their active assignments that they may no longer hold now (a conflict of interest with the submitter, or no
    longer a reviewer of the organisation they were assigned for), saying so to the reviewer and the chair.
    Called by accounts' membership services in their transaction (accounts.signals.membership_changed)."""
    released = 0
    for assignment in (
        ReviewAssignment.objects.select_for_update()
        .filter(ASSIGNMENT.sources_q("release"), reviewer=user)
        .select_related("submission", "reviewer")
    ):
        reviewing = user_org_ids(user, roles=(Membership.Role.REVIEWER,))
        if selectors.user_is_conflicted(user, assignment.submission):
            why = reason or "a membership change gave the reviewer a conflict of interest with the submitter"
        elif assignment.organisation_id not in reviewing:
            why = reason or "the reviewer is no longer a reviewer of the organisation they were assigned for"
        else:
            continue
        released += assignment_release_automatic(assignment, actor=actor, reason=why)
    return released


def membership_changed_release(sender, *, user, actor=None, **kwargs) -> None:
    """accounts.signals.membership_changed's receiver: the rule is assignments_release_conflicted's."""
    assignments_release_conflicted(user=user, actor=actor)
