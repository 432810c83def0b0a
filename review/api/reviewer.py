"""The reviewer's API: assignments (mine; accept, decline), reviews (create for an assignment; list visible),
the thread (list visible; post comment, objection or reply; close an objection), the diff between two
versions and the file browser of a version's stored archives.

Every queryset starts from access.visibility; a review belongs to the submitting organisation, its assigned
reviewers, auditors and the chair (access.visibility.review_submissions_visible_to): anyone else gets 404.
Refusals are the services' ApplicationErrors ({"code", "detail"}); writes accept an Idempotency-Key.
"""

from __future__ import annotations

import django_filters
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from access.visibility import (
    comments_visible_to,
    findings_visible_to,
    review_assignments_visible_to,
    review_submissions_visible_to,
    reviews_visible_to,
    thread_of,
)
from accounts.permissions import TokenScopeAllows
from portal.errors import ApplicationError
from portal.parsers import parse_id, parse_positive
from review import bundle_files, selectors
from review.models import Comment, Review, ReviewAssignment
from review.services.assignments import assignment_accept, assignment_decline
from review.services.reviews import review_submit
from review.services.thread import comment_post, objection_close
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.idempotency import idempotent
from submissions.models import Submission, SubmissionVersion

# --- Serializers ----------------------------------------------------------------------------------


class AssignmentSerializer(serializers.ModelSerializer):
    submission_status = serializers.CharField(source="submission.status", read_only=True)
    benchmark = serializers.CharField(source="submission.benchmark.model_id", read_only=True)
    system = serializers.CharField(source="submission.system.name", read_only=True)
    reviewing_for = serializers.CharField(source="organisation.name", read_only=True)
    overdue = serializers.SerializerMethodField()
    review_url = serializers.SerializerMethodField()

    class Meta:
        model = ReviewAssignment
        fields = [
            "id",
            "submission",
            "submission_status",
            "benchmark",
            "system",
            "reviewing_for",
            "status",
            "assigned_at",
            "due_at",
            "overdue",
            "responded_at",
            "reason",
            "review_url",
        ]

    def get_overdue(self, assignment) -> bool:
        return assignment.in_state("active") and assignment.due_at < timezone.now()

    def get_review_url(self, assignment) -> str:
        return f"/review/submissions/{assignment.submission_id}/"


class DeclineSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, help_text="Why you decline (the chair reads it).")


class ReviewSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="assignment.submission_id", read_only=True)
    version_number = serializers.IntegerField(source="version.number", read_only=True)
    reviewer = serializers.CharField(source="assignment.reviewer.username", read_only=True)
    reviewing_for = serializers.CharField(source="assignment.organisation.name", read_only=True)

    class Meta:
        model = Review
        fields = [
            "id",
            "submission",
            "assignment",
            "version",
            "version_number",
            "reviewer",
            "reviewing_for",
            "decision",
            "body",
            "created_at",
        ]


class ReviewCreateSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(help_text="Your accepted assignment's id.")
    decision = serializers.ChoiceField(choices=Review.Decision.choices)
    body = serializers.CharField(required=False, allow_blank=True, default="", max_length=20000)
    objection_type = serializers.ChoiceField(
        choices=Comment.ObjectionType.choices,
        required=False,
        allow_blank=True,
        default="",
        help_text="With decision=object: the objection's type (default validity).",
    )


class CommentSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True)
    version_number = serializers.IntegerField(source="version.number", read_only=True)
    closed_by = serializers.CharField(source="closed_by.username", read_only=True, default=None)

    class Meta:
        model = Comment
        fields = [
            "id",
            "submission",
            "version",
            "version_number",
            "parent",
            "author",
            "kind",
            "objection_type",
            "objection_status",
            "visibility",
            "body",
            "finding",
            "point_key",
            "file",
            "line",
            "answer_due_at",
            "closed_by",
            "closed_at",
            "created_at",
        ]


class CommentCreateSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    body = serializers.CharField(max_length=20000)
    kind = serializers.ChoiceField(choices=Comment.Kind.choices, default=Comment.Kind.COMMENT)
    objection_type = serializers.ChoiceField(
        choices=Comment.ObjectionType.choices, required=False, allow_blank=True, default=""
    )
    visibility = serializers.ChoiceField(choices=Comment.Visibility.choices, default=Comment.Visibility.ALL)
    parent = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Reply to this."
    )
    finding = serializers.IntegerField(required=False, allow_null=True, default=None)
    point_key = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    file = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)
    line = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1)


class ObjectionCloseSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=[
            (Comment.ObjectionStatus.RESOLVED, "Resolved"),
            (Comment.ObjectionStatus.OVERRULED, "Overruled"),
        ]
    )
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=20000)


class VersionDiffSerializer(serializers.Serializer):
    old_version = serializers.IntegerField()
    new_version = serializers.IntegerField()
    files_added = serializers.ListField(child=serializers.CharField())
    files_removed = serializers.ListField(child=serializers.CharField())
    files_changed = serializers.ListField(child=serializers.CharField())
    findings_added = serializers.ListField(child=serializers.DictField())
    findings_removed = serializers.ListField(child=serializers.DictField())
    points = serializers.ListField(
        child=serializers.DictField(),
        help_text='{"key", "old": {metric: value}, "new": {...}} per load point',
    )


class MemberSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()
    kind = serializers.CharField()
    viewable = serializers.BooleanField()


class StoredFileSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    original_filename = serializers.CharField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()
    members = MemberSerializer(many=True)
    members_truncated = serializers.BooleanField()
    single_file = serializers.BooleanField()
    problem = serializers.CharField()


class LineSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    text = serializers.CharField()
    cut = serializers.BooleanField(help_text=f"The line was longer than {bundle_files.LINE_BYTES_MAX} bytes.")


class MemberPageSerializer(serializers.Serializer):
    file = serializers.IntegerField(help_text="The stored file's position in the version.")
    member = serializers.CharField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()
    first_line = serializers.IntegerField()
    has_next = serializers.BooleanField()
    binary = serializers.BooleanField()
    decompressed = serializers.CharField()
    lines = LineSerializer(many=True)


FINDING_FIELDS = ("rule", "severity", "point", "file", "message")


def diff_data(old: SubmissionVersion, new: SubmissionVersion) -> dict:
    diff = selectors.version_diff(old, new)
    return {
        "old_version": old.number,
        "new_version": new.number,
        "files_added": diff.files_added,
        "files_removed": diff.files_removed,
        "files_changed": diff.files_changed,
        "findings_added": [dict(zip(FINDING_FIELDS, row, strict=False)) for row in diff.findings_added],
        "findings_removed": [dict(zip(FINDING_FIELDS, row, strict=False)) for row in diff.findings_removed],
        "points": diff.points,
    }


def _review_submission(user, pk) -> Submission:
    return get_object_or_404(review_submissions_visible_to(user), pk=pk)


# --- Assignments ----------------------------------------------------------------------------------


class AssignmentFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=ReviewAssignment.Status.choices)
    submission = django_filters.NumberFilter(field_name="submission_id")

    class Meta:
        model = ReviewAssignment
        fields = ["status", "submission"]


class ReviewAssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your review assignments (soonest due first); accept or decline an invitation."""

    serializer_class = AssignmentSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]
    filterset_class = AssignmentFilter

    def get_queryset(self):
        user = self.request.user
        return (
            review_assignments_visible_to(user)
            .filter(reviewer=user)
            .select_related("submission__benchmark", "submission__system", "organisation")
            .order_by("due_at", "pk")
        )

    @extend_schema(request=None, responses={200: AssignmentSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @action(detail=True, methods=["post"], filterset_class=None)
    @idempotent
    def accept(self, request, pk=None):
        """Accept the invitation: the submission moves to in review when its first reviewer accepts."""
        assignment = assignment_accept(assignment=self.get_object(), actor=request.user)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(
        request=DeclineSerializer, responses={200: AssignmentSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    @idempotent
    def decline(self, request, pk=None):
        """Decline the invitation, saying why (the chair reads it)."""
        assignment = self.get_object()
        body = DeclineSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment = assignment_decline(
            assignment=assignment, actor=request.user, reason=body.validated_data["reason"]
        )
        return Response(AssignmentSerializer(assignment).data)


# --- Reviews --------------------------------------------------------------------------------------


class ReviewFilter(django_filters.FilterSet):
    submission = django_filters.NumberFilter(field_name="assignment__submission_id")
    version = django_filters.NumberFilter(field_name="version_id")

    class Meta:
        model = Review
        fields = ["submission", "version"]


class ReviewViewSet(mixins.ListModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Reviews you may read (a reviewer reads the others' reviews of a version after their own); create your
    review of the frozen version: approve, request changes, or object (opens an objection)."""

    serializer_class = ReviewSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]
    filterset_class = ReviewFilter

    def get_queryset(self):
        user = self.request.user
        return (
            reviews_visible_to(user)
            .filter(assignment__submission__in=review_submissions_visible_to(user))
            .select_related("assignment__reviewer", "assignment__organisation", "version")
            .order_by("created_at", "pk")
        )

    def get_serializer_class(self):
        return ReviewCreateSerializer if self.action == "create" else ReviewSerializer

    @extend_schema(
        request=ReviewCreateSerializer, responses={201: ReviewSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        body = ReviewCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user = request.user
        assignment = get_object_or_404(
            review_assignments_visible_to(user).filter(reviewer=user), pk=data["assignment"]
        )
        review = review_submit(
            assignment=assignment,
            actor=user,
            decision=data["decision"],
            body=data["body"],
            objection_type=data["objection_type"],
        )
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)


# --- The thread -----------------------------------------------------------------------------------


class CommentFilter(django_filters.FilterSet):
    submission = django_filters.NumberFilter(field_name="submission_id")
    kind = django_filters.ChoiceFilter(choices=Comment.Kind.choices)
    objection_status = django_filters.ChoiceFilter(choices=Comment.ObjectionStatus.choices)

    class Meta:
        model = Comment
        fields = ["submission", "kind", "objection_status"]


class CommentViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """The thread entries you may read (their visibility level decides: submitter + reviewers + auditors,
    reviewers + auditors, auditors only); post a comment, an objection or a reply; close an objection."""

    serializer_class = CommentSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]
    filterset_class = CommentFilter

    def get_queryset(self):
        return (
            comments_visible_to(self.request.user)
            .filter(submission__in=review_submissions_visible_to(self.request.user))
            .select_related("author", "version", "closed_by")
            .order_by("created_at", "pk")
        )

    def get_serializer_class(self):
        if self.action == "create":
            return CommentCreateSerializer
        if self.action == "close":
            return ObjectionCloseSerializer
        return CommentSerializer

    @extend_schema(
        request=CommentCreateSerializer,
        responses={201: CommentSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        body = CommentCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user = request.user
        submission = _review_submission(user, data["submission"])
        parent = None
        if data["parent"] is not None:
            parent = thread_of(user, submission).filter(pk=data["parent"]).first()
            if parent is None:
                raise serializers.ValidationError({"parent": "No such entry in this submission's thread."})
        finding = None
        if data["finding"] is not None:
            finding = (
                findings_visible_to(user)
                .filter(pk=data["finding"], check_run__version__submission=submission)
                .select_related("check_run__version")
                .first()
            )
            if finding is None:
                raise serializers.ValidationError({"finding": "No such finding on this submission."})
        comment = comment_post(
            submission=submission,
            actor=user,
            body=data["body"],
            kind=data["kind"],
            objection_type=data["objection_type"],
            visibility=data["visibility"],
            parent=parent,
            finding=finding,
            point_key=data["point_key"],
            file=data["file"],
            line=data["line"],
        )
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=ObjectionCloseSerializer,
        responses={200: CommentSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    @idempotent
    def close(self, request, pk=None):
        """The objector or the chair resolves or overrules an objection (an optional note is posted as a reply)."""
        objection = self.get_object()
        body = ObjectionCloseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        objection = objection_close(
            objection=objection,
            actor=request.user,
            outcome=body.validated_data["outcome"],
            note=body.validated_data["note"],
        )
        return Response(CommentSerializer(objection).data)


# --- Versions under review: the diff and the file browser ----------------------------------------


class ReviewVersionViewSet(viewsets.GenericViewSet):
    """A version of a submission under review: what changed since another version, its stored files'
    members, and one member's lines, page by page."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]
    serializer_class = VersionDiffSerializer
    filterset_class = None
    pagination_class = None

    def get_queryset(self):
        return (
            SubmissionVersion.objects.filter(submission__in=review_submissions_visible_to(self.request.user))
            .select_related("submission")
            .prefetch_related("files")
        )

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "against",
                OpenApiTypes.INT,
                description="The version number to compare with (default: the one before).",
            )
        ],
        responses={200: VersionDiffSerializer},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request, pk=None):
        """Files added, removed and changed, findings added and removed, metrics per point side by side."""
        new = self.get_object()
        against = request.query_params.get("against", "")
        siblings = new.submission.versions.all()
        if parse_id(against) is not None:
            old = siblings.filter(number=parse_id(against)).first()
        else:
            old = siblings.filter(number__lt=new.number).order_by("-number").first()
        if old is None:
            raise ApplicationError(
                f"Submission #{new.submission_id} has no version {against or 'before ' + str(new.number)} "
                "to compare with.",
                code="no-version-to-compare",
            )
        return Response(VersionDiffSerializer(diff_data(old, new)).data)

    @extend_schema(responses={200: StoredFileSerializer(many=True)})
    @action(detail=True, methods=["get"], serializer_class=StoredFileSerializer)
    def files(self, request, pk=None):
        """The version's stored files, each with the members of its archive (at most 5000 listed)."""
        rows = []
        for version_file in self.get_object().files.order_by("position"):
            listing = bundle_files.version_file_members(version_file)
            rows.append(
                {
                    "position": version_file.position,
                    "original_filename": version_file.original_filename,
                    "size_bytes": version_file.size_bytes,
                    "sha256": version_file.sha256,
                    "members": listing.members,
                    "members_truncated": listing.truncated,
                    "single_file": listing.single_file,
                    "problem": listing.problem,
                }
            )
        return Response(StoredFileSerializer(rows, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "member", OpenApiTypes.STR, required=True, description="A file inside the archive."
            ),
            OpenApiParameter("page", OpenApiTypes.INT, description="1-based page (default 1)."),
            OpenApiParameter(
                "per_page", OpenApiTypes.INT, description="Lines per page (default 200, at most 1000)."
            ),
            OpenApiParameter(
                "line", OpenApiTypes.INT, description="Show the page holding this line instead."
            ),
        ],
        responses={
            200: MemberPageSerializer,
            400: inline_serializer(
                "PathRefused", {"code": serializers.CharField(), "detail": serializers.CharField()}
            ),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"files/(?P<position>\d+)/lines",
        url_name="lines",
        serializer_class=MemberPageSerializer,
    )
    def lines(self, request, pk=None, position=None):
        """One member of a stored archive, page by page with line numbers (streamed; long lines cut)."""
        version_file = get_object_or_404(self.get_object().files, position=parse_id(position))
        params = request.query_params
        per_page = parse_positive(params.get("per_page"), default=bundle_files.LINES_PER_PAGE)
        page = parse_positive(params.get("page"), default=1)
        if parse_id(params.get("line", "")) is not None:
            page = bundle_files.page_of_line(parse_id(params["line"]), per_page)
        member_page = bundle_files.version_file_page(
            version_file, params.get("member", ""), page=page, per_page=per_page
        )
        data = {
            "file": version_file.position,
            "member": member_page.member,
            "page": member_page.page,
            "per_page": member_page.per_page,
            "first_line": member_page.first_line,
            "has_next": member_page.has_next,
            "binary": member_page.binary,
            "decompressed": member_page.decompressed,
            "lines": member_page.lines,
        }
        return Response(MemberPageSerializer(data).data)


def register(router) -> None:
    router.register("review-assignments", ReviewAssignmentViewSet, basename="review-assignment")
    router.register("reviews", ReviewViewSet, basename="review")
    router.register("comments", CommentViewSet, basename="comment")
    router.register("review-versions", ReviewVersionViewSet, basename="review-version")
