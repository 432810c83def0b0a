"""Review models: who reviews which submission (conflicts, objections and approvals arrive with the review issue)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ReviewAssignment(models.Model):
    """A reviewer assigned to a submission; assigned reviewers see it from `submitted` on, never as a draft."""

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="review_assignments"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_assignments"
    )
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "reviewer"], name="review_assignment_unique"),
        ]
        ordering = ["-assigned_at"]

    def __str__(self) -> str:
        return f"{self.reviewer} reviews {self.submission_id}"
