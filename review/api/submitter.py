"""API of the submitter's side of the review: who reviews a submission (reviews are signed). The thread
(comments, replies answering objections), waiver requests and evidence answers already have their endpoints
(review.api.reviewer, review.api.auditor); this adds the one read the submission page has and they lack."""

from __future__ import annotations

import django_filters
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.routers import BaseRouter

from access.visibility import review_assignments_visible_to, submissions_visible_to
from accounts.permissions import TokenScopeAllows
from review.models import ReviewAssignment


class SubmissionReviewerSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.get_username", read_only=True)
    reviewing_for = serializers.CharField(source="organisation.name", read_only=True)

    class Meta:
        model = ReviewAssignment
        fields = [
            "id",
            "submission",
            "reviewer",
            "reviewing_for",
            "status",
            "assigned_at",
            "due_at",
            "responded_at",
        ]
        read_only_fields = fields


class SubmissionReviewerFilter(django_filters.FilterSet):
    submission = django_filters.NumberFilter(field_name="submission_id")
    status = django_filters.MultipleChoiceFilter(choices=ReviewAssignment.Status.choices)

    class Meta:
        model = ReviewAssignment
        fields = ["submission", "status"]


class SubmissionReviewerViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The reviewers of the submissions you may see: the submitting organisation sees who reviews its
    submissions, a reviewer their own assignments, auditors and the chair all (never a hidden draft's)."""

    serializer_class = SubmissionReviewerSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]
    filterset_class = SubmissionReviewerFilter

    def get_queryset(self):
        user = self.request.user
        return (
            review_assignments_visible_to(user)
            .filter(submission__in=submissions_visible_to(user))
            .select_related("reviewer", "organisation")
            .order_by("submission_id", "assigned_at", "pk")
        )


def register(router: BaseRouter) -> None:
    router.register("submission-reviewers", SubmissionReviewerViewSet, basename="submission-reviewer")
