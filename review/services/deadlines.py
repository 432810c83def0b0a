"""The deadline jobs (Celery beat): overdue assignments, reminders and escalations."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.selectors import (
    chairs,
)
from accounts.services.notifications import notify
from review.models import Comment, EvidenceRequest, Review, ReviewAssignment
from review.services.assignments import assignment_release_automatic
from review.services.common import submission_label, submission_submitters, submission_url


def deadlines_run(*, now: datetime | None = None) -> dict[str, int]:
    """Release reviewers past their due date, remind submitters a day before an objection's answer is due,
    escalate overdue objections and evidence requests to the chair. Each event is handled once: every step
    is a compare-and-set on its own timestamp, so two beat processes do not double it."""
    now = now or timezone.now()
    released = reminded = escalated = 0
    for assignment in ReviewAssignment.objects.filter(
        ReviewAssignment.states.q("active"), due_at__lt=now
    ).select_related("submission", "reviewer"):
        reviewed = Review.objects.filter(
            assignment=assignment, version_id=assignment.submission.submitted_version_id
        )
        if reviewed.exists():
            continue
        with transaction.atomic():
            if assignment_release_automatic(assignment, actor=None, reason="the review deadline passed"):
                released += 1
    for objection in Comment.objects.filter(
        Comment.states.q("waiting_for_submitter"),
        kind=Comment.Kind.OBJECTION,
        reminded_at__isnull=True,
        answer_due_at__lte=now + timedelta(days=1),
        answer_due_at__gt=now,
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if Comment.objects.filter(pk=objection.pk, reminded_at__isnull=True).update(reminded_at=now):
                notify(
                    users=submission_submitters(objection.submission),
                    kind="review.objection_due",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {submission_label(objection.submission)} is due tomorrow",
                    body=objection.body[:2000],
                    url=f"/submissions/{objection.submission_id}/",
                    dedupe_key=f"objection-due:{objection.pk}",
                )
                reminded += 1
    for objection in Comment.objects.filter(
        Comment.states.q("waiting_for_submitter"),
        kind=Comment.Kind.OBJECTION,
        escalated_at__isnull=True,
        answer_due_at__lte=now,
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if Comment.objects.filter(pk=objection.pk, escalated_at__isnull=True).update(escalated_at=now):
                notify(
                    users=chairs(),
                    kind="review.objection_overdue",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {submission_label(objection.submission)} is overdue",
                    body=objection.body[:2000],
                    url=submission_url(objection.submission),
                    dedupe_key=f"objection-overdue:{objection.pk}",
                )
                notify(
                    users=submission_submitters(objection.submission),
                    kind="review.objection_overdue",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {submission_label(objection.submission)} is overdue",
                    url=f"/submissions/{objection.submission_id}/",
                    dedupe_key=f"objection-overdue:{objection.pk}",
                )
                escalated += 1
    for request in EvidenceRequest.objects.filter(
        EvidenceRequest.states.q("open"), due_at__lte=now, reminded_at__isnull=True
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if EvidenceRequest.objects.filter(pk=request.pk, reminded_at__isnull=True).update(
                reminded_at=now
            ):
                notify(
                    users=chairs() + [request.auditor],
                    kind="audit.evidence_overdue",
                    submission_id=request.submission_id,
                    subject=f"Evidence on {submission_label(request.submission)} is overdue",
                    url=submission_url(request.submission),
                    dedupe_key=f"evidence-overdue:{request.pk}",
                )
                escalated += 1
    return {"released": released, "reminded": reminded, "escalated": escalated}
