"""API of the chair: the dashboard, assignment (by hand, "assign N", release) and conflicts of interest (the
chair's are pinned; an organisation's admins declare and remove their own organisation's other ones).

Querysets start from access.visibility (404 for what the caller may not see); the services refuse what the
caller may not do, as {"code", "detail"} JSON; writes accept an Idempotency-Key.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.permissions import can
from access.visibility import conflicts_visible_to, review_assignments_visible_to, submissions_visible_to
from accounts.models import Organisation
from accounts.permissions import TokenScopeAllows
from portal.errors import ApplicationError, ConflictError
from portal.parsers import parse_id
from review import selectors
from review.models import Conflict, ReviewAssignment
from review.services.assignments import assignment_create, assignment_release, assignments_draw
from review.services.conflicts import conflict_declare, conflict_remove
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.idempotency import idempotent


class ChairAssignmentSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id", read_only=True)
    reviewer = serializers.CharField(source="reviewer.username", read_only=True)
    organisation = serializers.CharField(source="organisation.slug", read_only=True)

    class Meta:
        model = ReviewAssignment
        fields = ["id", "submission", "reviewer", "organisation", "status", "assigned_at", "due_at", "reason"]
        read_only_fields = fields


class AssignSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    reviewer = serializers.CharField(help_text="The reviewer's username.")


class DrawSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    count = serializers.IntegerField(min_value=1, max_value=10, required=False)


class ReleaseReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)


def _chair_only(user) -> None:
    if not can(user, "chair"):
        raise PermissionDenied("Only the chair assigns reviewers.")


def _submission(user, pk: int):
    return get_object_or_404(submissions_visible_to(user), pk=pk)


class ChairAssignmentViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Every review assignment (the chair's view): assign a reviewer by hand, draw N from the least loaded
    eligible organisations, release one with a reason."""

    serializer_class = ChairAssignmentSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        rows = review_assignments_visible_to(self.request.user).select_related("reviewer", "organisation")
        submission = self.request.query_params.get("submission", "")
        submission_id = parse_id(submission)
        return rows.filter(submission_id=submission_id) if submission_id is not None else rows

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.action == "list":
            _chair_only(request.user)

    @extend_schema(
        request=AssignSerializer,
        responses={201: ChairAssignmentSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        """Ask one reviewer (no conflict, not yet assigned) to review the submission."""
        data = AssignSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        submission = _submission(request.user, data.validated_data["submission"])
        _chair_only(request.user)
        reviewer = get_user_model().objects.filter(username=data.validated_data["reviewer"]).first()
        if reviewer is None:
            raise ApplicationError("No such reviewer.", code="reviewer-not-eligible")
        assignment = assignment_create(submission=submission, reviewer=reviewer, actor=request.user)
        return Response(ChairAssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=DrawSerializer,
        responses={201: ChairAssignmentSerializer(many=True)},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=False, methods=["post"])
    @idempotent
    def draw(self, request):
        """Assign N reviewers (PORTAL_REVIEWERS_PER_SUBMISSION unless `count`), least-loaded organisations first."""
        data = DrawSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        submission = _submission(request.user, data.validated_data["submission"])
        _chair_only(request.user)
        drawn = assignments_draw(
            submission=submission, actor=request.user, count=data.validated_data.get("count")
        )
        return Response(ChairAssignmentSerializer(drawn, many=True).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=ReleaseReasonSerializer,
        responses={200: ChairAssignmentSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def release(self, request, pk=None):
        """Take an assignment back, with a reason the reviewer reads; 409 when it was no longer active."""
        assignment = get_object_or_404(self.get_queryset(), pk=pk)
        _submission(request.user, assignment.submission_id)
        _chair_only(request.user)
        data = ReleaseReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if not assignment_release(
            assignment=assignment, actor=request.user, reason=data.validated_data["reason"]
        ):
            raise ConflictError("This assignment was no longer active.", code="state-conflict")
        assignment.refresh_from_db()
        return Response(ChairAssignmentSerializer(assignment).data)


class ChairDashboardViewSet(viewsets.ViewSet):
    """What needs the chair: unassigned, overdue assignments and objections, stuck, awaiting audit, waivers."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]

    @extend_schema(
        responses=inline_serializer(
            "ChairDashboard",
            {
                "unassigned": serializers.ListField(child=serializers.IntegerField()),
                "overdue_assignments": serializers.ListField(child=serializers.IntegerField()),
                "overdue_objections": serializers.ListField(child=serializers.IntegerField()),
                "stuck": serializers.ListField(child=serializers.IntegerField()),
                "awaiting_audit": serializers.ListField(child=serializers.IntegerField()),
                "waivers_requested": serializers.ListField(child=serializers.IntegerField()),
            },
        )
    )
    def list(self, request):
        """Ids: submissions (unassigned, stuck, awaiting_audit), assignments, objections (comments), waivers."""
        _chair_only(request.user)
        board = selectors.chair_dashboard(now=timezone.now())
        return Response(
            {
                "unassigned": [s.pk for s in board.unassigned],
                "overdue_assignments": [a.pk for a in board.overdue_assignments],
                "overdue_objections": [c.pk for c in board.overdue_objections],
                "stuck": [s.pk for s in board.stuck],
                "awaiting_audit": [s.pk for s in board.awaiting_audit],
                "waivers_requested": [w.pk for w in board.waivers_requested],
            }
        )


class ConflictSerializer(serializers.ModelSerializer):
    organisation = serializers.SlugRelatedField(slug_field="slug", queryset=Organisation.objects.all())
    other = serializers.SlugRelatedField(slug_field="slug", queryset=Organisation.objects.all())
    declared_by = serializers.CharField(source="declared_by.username", read_only=True)

    class Meta:
        model = Conflict
        fields = ["id", "organisation", "other", "kind", "reason", "pinned", "declared_by", "created_at"]
        read_only_fields = ["id", "pinned", "declared_by", "created_at"]
        validators = []  # the service says "conflict-exists" (409), in either direction


class ConflictViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Conflicts of interest: the chair and auditors see all, members their organisations'. The chair declares
    pinned ones; an organisation admin declares and removes their own organisation's non-pinned ones."""

    serializer_class = ConflictSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]

    def get_queryset(self):
        return conflicts_visible_to(self.request.user).select_related("declared_by")

    @extend_schema(parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def create(self, request, *args, **kwargs):
        data = ConflictSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        conflict = conflict_declare(
            organisation=values["organisation"],
            other=values["other"],
            kind=values["kind"],
            reason=values["reason"],
            actor=request.user,
        )
        return Response(ConflictSerializer(conflict).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[IDEMPOTENCY_PARAMETER])
    def destroy(self, request, *args, **kwargs):
        conflict_remove(conflict=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def register(router: BaseRouter) -> None:
    router.register("chair/assignments", ChairAssignmentViewSet, basename="chair-assignment")
    router.register("chair/dashboard", ChairDashboardViewSet, basename="chair-dashboard")
    router.register("conflicts", ConflictViewSet, basename="conflict")
