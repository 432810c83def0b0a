"""API of the submissions app: the public benchmark catalog and the caller's identity."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import BaseRouter
from rest_framework.views import APIView

from submissions.models import Benchmark
from submissions.selectors import benchmark_list, user_roles


class BenchmarkFilter(django_filters.FilterSet):
    class Meta:
        model = Benchmark
        fields = ["workload", "ruleset_version"]


class BenchmarkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The benchmark catalog (public, read-only)."""

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Benchmark
            fields = [
                "model_id",
                "display_name",
                "dataset",
                "dataset_sample_count",
                "workload",
                "ruleset_version",
                "tokenizer_is_placeholder",
            ]

    serializer_class = OutputSerializer
    permission_classes = [AllowAny]
    filterset_class = BenchmarkFilter
    lookup_field = "model_id"

    def get_queryset(self):
        return benchmark_list()


class MeApi(APIView):
    """Who the caller is and what they may act as (useful to check an API token)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "username": serializers.CharField(),
                "organisations": serializers.DictField(
                    child=serializers.ListField(child=serializers.CharField())
                ),
                "auditor": serializers.BooleanField(),
                "chair": serializers.BooleanField(),
            },
        )
    )
    def get(self, request):
        return Response({"username": request.user.get_username(), **user_roles(request.user)})


def register(router: BaseRouter) -> None:
    router.register("benchmarks", BenchmarkViewSet, basename="benchmark")
    register_submissions(router)
    register_systems(router)


# --- Submissions, versions, uploads, check runs ----------------------------------------------
# Every queryset below starts from a visibility selector: what a user may not see answers 404.

import io  # noqa: E402
import json  # noqa: E402

from django.conf import settings  # noqa: E402
from django.db import transaction  # noqa: E402
from django.shortcuts import get_object_or_404  # noqa: E402
from drf_spectacular.types import OpenApiTypes  # noqa: E402
from drf_spectacular.utils import OpenApiParameter, extend_schema_field  # noqa: E402
from rest_framework import parsers, status  # noqa: E402
from rest_framework.decorators import action  # noqa: E402
from rest_framework.permissions import SAFE_METHODS, BasePermission  # noqa: E402

from portal.errors import ApplicationError, NotAllowedError  # noqa: E402
from submissions import checks, services, uploads  # noqa: E402
from submissions.idempotency import HEADER as IDEMPOTENCY_HEADER  # noqa: E402
from submissions.idempotency import idempotency_begin, idempotency_end, idempotent  # noqa: E402
from submissions.models import CheckRun, Finding, PointMetric, Submission, SubmissionVersion, Upload  # noqa: E402
from submissions.selectors import (  # noqa: E402
    check_run_findings,
    check_run_latest,
    check_run_point_metrics,
    check_runs_visible_to,
    submissions_visible_to,
    submissions_with_latest,
    systems_submittable_by,
    systems_visible_to,
    uploads_visible_to,
    version_latest,
    versions_visible_to,
    versions_with_latest_check,
)

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="Any unique string; a retry with the same key and body returns the first response.",
)


class ReadAnyoneWriteAuthenticated(BasePermission):
    """Reads are filtered by visibility (anonymous: published only); writes need a signed-in user."""

    def has_permission(self, request, view):
        return request.method in SAFE_METHODS or bool(request.user and request.user.is_authenticated)


class CheckRunSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = CheckRun
        fields = [
            "id",
            "version",
            "status",
            "attempts",
            "max_attempts",
            "created_at",
            "started_at",
            "heartbeat_at",
            "finished_at",
            "checker_version",
            "ruleset",
            "error_message",
            "progress_stage",
            "progress_done",
            "progress_total",
            "counts",
        ]


class VersionFileSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    original_filename = serializers.CharField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()


class VersionSerializer(serializers.ModelSerializer):
    files = VersionFileSerializer(many=True, read_only=True)
    uploader = serializers.CharField(source="uploader.username", read_only=True)
    latest_check_run = serializers.SerializerMethodField()

    class Meta:
        model = SubmissionVersion
        fields = [
            "id",
            "submission",
            "number",
            "kind",
            "size_bytes",
            "sha256",
            "uploader",
            "created_at",
            "files",
            "latest_check_run",
        ]

    @extend_schema_field(CheckRunSummarySerializer(allow_null=True))
    def get_latest_check_run(self, version):
        run = check_run_latest(version)
        return CheckRunSummarySerializer(run).data if run is not None else None


class SubmissionSerializer(serializers.ModelSerializer):
    organisation = serializers.CharField(source="organisation.slug", read_only=True)
    system = serializers.CharField(source="system.name", read_only=True)
    system_id = serializers.IntegerField(read_only=True)
    benchmark = serializers.CharField(source="benchmark.model_id", read_only=True)
    submitted_version = serializers.IntegerField(
        source="submitted_version.number", read_only=True, allow_null=True
    )
    latest_version = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "organisation",
            "system",
            "system_id",
            "benchmark",
            "division",
            "availability",
            "title",
            "status",
            "status_changed_at",
            "status_reason",
            "submitted_version",
            "created_at",
            "updated_at",
            "latest_version",
        ]

    @extend_schema_field(VersionSerializer(allow_null=True))
    def get_latest_version(self, submission):
        version = version_latest(submission)
        return VersionSerializer(version).data if version is not None else None


class SubmissionCreateSerializer(serializers.Serializer):
    system = serializers.CharField(help_text="Id or name of one of your organisation's systems.")
    benchmark = serializers.CharField(help_text="The benchmark's model_id, e.g. llama3_1-8b.")
    division = serializers.ChoiceField(
        choices=Submission.Division.choices, default=Submission.Division.STANDARDIZED
    )
    availability = serializers.ChoiceField(
        choices=Submission.Availability.choices, default=Submission.Availability.AVAILABLE
    )
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


def _submission_create_from(user, data) -> Submission:
    systems = systems_submittable_by(user)
    system_ref = str(data["system"])
    matches = list(systems.filter(pk=int(system_ref))) if system_ref.isdigit() else []
    if not matches:
        matches = list(systems.filter(name=system_ref))
    if len(matches) != 1:
        raise ApplicationError(
            f"No single system {system_ref!r} among your organisations' systems. Register it first: on the "
            "portal's Systems page (/systems/), or POST /api/v1/systems/ with its name and system_desc.json; "
            "or give the id of an existing system.",
            code="unknown-system",
            extra={"system": system_ref, "register_url": "/systems/", "register_api": "/api/v1/systems/"},
        )
    benchmark = Benchmark.objects.filter(model_id=data["benchmark"]).first()
    if benchmark is None:
        raise ApplicationError(f"No benchmark {data['benchmark']!r}.", code="unknown-benchmark")
    return services.submission_create(
        actor=user,
        system=matches[0],
        benchmark=benchmark,
        division=data["division"],
        availability=data["availability"],
        title=data.get("title", ""),
    )


class SubmissionFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=Submission.Status.choices)
    benchmark = django_filters.CharFilter(field_name="benchmark__model_id")
    system = django_filters.CharFilter(field_name="system__name")
    organisation = django_filters.CharFilter(field_name="organisation__slug")

    class Meta:
        model = Submission
        fields = ["status", "benchmark", "system", "organisation", "division", "availability"]


class WithdrawSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Submissions the caller may see (DESIGN.md visibility); create drafts, submit, withdraw."""

    serializer_class = SubmissionSerializer
    permission_classes = [ReadAnyoneWriteAuthenticated]
    filterset_class = SubmissionFilter

    def get_queryset(self):
        return (
            submissions_with_latest(submissions_visible_to(self.request.user))
            .select_related("submitted_version")
            .order_by("-id")
        )

    @extend_schema(
        request=SubmissionCreateSerializer,
        responses={201: SubmissionSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        data = SubmissionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        submission = _submission_create_from(request.user, data.validated_data)
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: SubmissionSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @action(detail=True, methods=["post"])
    @idempotent
    def submit(self, request, pk=None):
        submission = services.submission_submit(submission=self.get_object(), actor=request.user)
        return Response(SubmissionSerializer(submission).data)

    @extend_schema(
        request=WithdrawSerializer, responses={200: SubmissionSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def withdraw(self, request, pk=None):
        submission = self.get_object()  # first: outside the visibility table it is a 404, whatever the body
        data = WithdrawSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        submission = services.submission_withdraw(
            submission=submission, actor=request.user, reason=data.validated_data["reason"]
        )
        return Response(SubmissionSerializer(submission).data)


class VersionFilter(django_filters.FilterSet):
    # A plain number, not a model choice: a choice field validates against every row and would tell a hidden id
    # (empty list) from a missing one (400).
    submission = django_filters.NumberFilter(field_name="submission_id")

    class Meta:
        model = SubmissionVersion
        fields = ["submission"]


class VersionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Immutable versions of visible submissions; their stored files; the chair's re-check."""

    serializer_class = VersionSerializer
    permission_classes = [ReadAnyoneWriteAuthenticated]
    filterset_class = VersionFilter

    def get_queryset(self):
        return versions_with_latest_check(versions_visible_to(self.request.user)).order_by("-id")

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<position>\d+)", filterset_class=None)
    def file(self, request, pk=None, position=None):
        """The stored bytes exactly as uploaded (streamed; visibility-checked like the submission)."""
        # get_object() is the viewset's own visibility lookup: a malformed, unknown or hidden id is one 404.
        version_file = get_object_or_404(self.get_object().files, position=int(position))
        return uploads.version_file_response(version_file)

    @extend_schema(
        request=None, responses={201: CheckRunSummarySerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    @idempotent
    def recheck(self, request, pk=None):
        """The chair runs the checks again on this version (a new check run; earlier runs stay)."""
        check_run = checks.check_run_requeue(version=self.get_object(), actor=request.user)
        return Response(CheckRunSummarySerializer(check_run).data, status=status.HTTP_201_CREATED)


class FindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Finding
        fields = ["rule", "severity", "file", "line", "pointer", "point", "message", "fix"]


class PointMetricSerializer(serializers.ModelSerializer):
    class Meta:
        model = PointMetric
        fields = ["key", "system", "model", "concurrency", "source", "claimed", "recomputed", "extra"]


class CheckRunSerializer(CheckRunSummarySerializer):
    findings = serializers.SerializerMethodField()
    point_metrics = serializers.SerializerMethodField()
    curves = serializers.JSONField()

    class Meta(CheckRunSummarySerializer.Meta):
        fields = [*CheckRunSummarySerializer.Meta.fields, "curves", "findings", "point_metrics"]

    @extend_schema_field(FindingSerializer(many=True))
    def get_findings(self, run):
        return FindingSerializer(check_run_findings(run), many=True).data

    @extend_schema_field(PointMetricSerializer(many=True))
    def get_point_metrics(self, run):
        return PointMetricSerializer(check_run_point_metrics(run), many=True).data


class CheckRunFilter(django_filters.FilterSet):
    version = django_filters.NumberFilter(field_name="version_id")  # a number, as in VersionFilter

    class Meta:
        model = CheckRun
        fields = ["version", "status"]


class CheckRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Check runs of visible versions; the detail holds every finding and per-point metric."""

    permission_classes = [ReadAnyoneWriteAuthenticated]
    filterset_class = CheckRunFilter

    def get_serializer_class(self):
        return CheckRunSerializer if self.action == "retrieve" else CheckRunSummarySerializer

    def get_queryset(self):
        runs = check_runs_visible_to(self.request.user).order_by("-id")
        # The whole report is never served here, and a list row shows no curves: leave the blobs in the database.
        return runs.defer("report") if self.action == "retrieve" else runs.defer("report", "curves")


class UploadSerializer(serializers.ModelSerializer):
    missing_parts = serializers.SerializerMethodField()
    received_parts = serializers.SerializerMethodField()
    version = serializers.SerializerMethodField()

    class Meta:
        model = Upload
        fields = [
            "id",
            "submission",
            "filename",
            "size_bytes",
            "sha256",
            "part_size",
            "parts_expected",
            "status",
            "received_parts",
            "missing_parts",
            "version",
            "created_by",
            "created_at",
            "updated_at",
        ]

    created_by = serializers.CharField(source="created_by.username", read_only=True)

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_missing_parts(self, upload):
        if upload.status != Upload.Status.OPEN:
            return []
        present = {part.index for part in upload.parts.all()}  # the list prefetches the parts
        return [index for index in range(upload.parts_expected) if index not in present]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_received_parts(self, upload):
        parts = sorted(upload.parts.all(), key=lambda part: part.index)  # the list prefetches the parts
        return [{"index": part.index, "sha256": part.sha256, "size_bytes": part.size_bytes} for part in parts]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_version(self, upload):
        return upload.version_id


class UploadStartSerializer(serializers.Serializer):
    submission = serializers.IntegerField(
        required=False, help_text="An existing draft; or give system + benchmark."
    )
    system = serializers.CharField(required=False)
    benchmark = serializers.CharField(required=False)
    division = serializers.ChoiceField(
        choices=Submission.Division.choices, default=Submission.Division.STANDARDIZED
    )
    availability = serializers.ChoiceField(
        choices=Submission.Availability.choices, default=Submission.Availability.AVAILABLE
    )
    filename = serializers.CharField(max_length=255)
    size = serializers.IntegerField(min_value=1)
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$")

    def validate(self, attrs):
        if "submission" not in attrs and not ("system" in attrs and "benchmark" in attrs):
            raise serializers.ValidationError("Give submission, or system and benchmark for a new draft.")
        return attrs


class UploadFinishSerializer(serializers.Serializer):
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$")
    create_version = serializers.BooleanField(default=True)
    include_uploads = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        default=list,
        help_text="Other verified uploads of the submission to join this version.",
    )
    kind = serializers.ChoiceField(choices=SubmissionVersion.Kind.choices, required=False)


class UploadFinishResponseSerializer(serializers.Serializer):
    upload = UploadSerializer()
    version = VersionSerializer(allow_null=True)


class RawBodyParser(parsers.BaseParser):
    """Declares the part body for the schema; the view reads request.stream itself, chunk by chunk."""

    media_type = "application/octet-stream"

    def parse(self, stream, media_type=None, parser_context=None):  # pragma: no cover - never called
        return stream


class UploadFilter(django_filters.FilterSet):
    """Find an upload to resume: the same file (sha256 + size) for the same submission, still open."""

    status = django_filters.MultipleChoiceFilter(choices=Upload.Status.choices)
    sha256 = django_filters.CharFilter(method="filter_sha256")
    size = django_filters.NumberFilter(field_name="size_bytes")
    system = django_filters.CharFilter(field_name="submission__system__name")
    benchmark = django_filters.CharFilter(field_name="submission__benchmark__model_id")
    submission_status = django_filters.MultipleChoiceFilter(
        field_name="submission__status", choices=Submission.Status.choices
    )
    mine = django_filters.BooleanFilter(
        method="filter_mine", help_text="true: only uploads the caller started."
    )
    submission = django_filters.NumberFilter(field_name="submission_id")  # a number, as in VersionFilter

    class Meta:
        model = Upload
        fields = [
            "submission",
            "status",
            "sha256",
            "size",
            "system",
            "benchmark",
            "submission_status",
            "mine",
        ]

    def filter_sha256(self, queryset, name, value):
        return queryset.filter(sha256=value.lower())

    def filter_mine(self, queryset, name, value):
        return queryset.filter(created_by=self.request.user) if value else queryset


class UploadViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Chunked, resumable uploads: start, PUT parts (raw bytes, any order), check status, finish, abort;
    the list (filter by sha256, size, status, submission, mine) finds an upload to resume."""

    serializer_class = UploadSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = UploadFilter

    def get_queryset(self):
        return (
            uploads_visible_to(self.request.user)
            .select_related("created_by")
            .prefetch_related("parts")
            .order_by("-created_at")
        )

    @extend_schema(request=None, responses={200: UploadSerializer}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def destroy(self, request, pk=None):
        """Abort an upload not yet part of a version: its stored parts are deleted and its bytes stop counting
        against the organisation's quota. The row stays (status `aborted`); aborting again answers the same."""
        upload = uploads.upload_abort(upload=self.get_object(), actor=request.user)
        return Response(UploadSerializer(upload).data)

    @extend_schema(
        request=UploadStartSerializer, responses={201: UploadSerializer}, parameters=[IDEMPOTENCY_PARAMETER]
    )
    @idempotent
    def create(self, request):
        data = UploadStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        with transaction.atomic():
            if "submission" in values:
                submission = get_object_or_404(submissions_visible_to(request.user), pk=values["submission"])
            else:
                submission = _submission_create_from(request.user, values)
            upload = uploads.upload_start(
                actor=request.user,
                submission=submission,
                filename=values["filename"],
                size=values["size"],
                sha256=values["sha256"],
            )
        return Response(UploadSerializer(upload).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={200: UploadSerializer},
        parameters=[
            IDEMPOTENCY_PARAMETER,
            OpenApiParameter("index", OpenApiTypes.INT, OpenApiParameter.PATH),
        ],
    )
    @action(detail=True, methods=["put"], url_path=r"parts/(?P<index>\d+)", parser_classes=[RawBodyParser])
    def part(self, request, pk=None, index=None):
        """Store one part (exactly part_size bytes, the last one the rest). Same bytes again: accepted."""
        upload = self.get_object()
        stream = request.stream or io.BytesIO(b"")
        stored = uploads.upload_part(upload=upload, index=int(index), data_stream=stream, actor=request.user)
        key = request.headers.get(IDEMPOTENCY_HEADER)
        record = None
        if key:
            record, replay = idempotency_begin(
                user=request.user, key=key, endpoint=f"PUT {request.path}", request_hash=stored.sha256
            )
            if replay is not None:
                return replay
        upload.refresh_from_db()
        response = Response(UploadSerializer(upload).data)
        idempotency_end(record, response)
        return response

    @extend_schema(
        request=UploadFinishSerializer,
        responses={200: UploadFinishResponseSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def finish(self, request, pk=None):
        """Verify size and SHA-256 of the whole file; then it becomes (part of) a new version, checked at once."""
        upload = self.get_object()
        data = UploadFinishSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        others = [get_object_or_404(self.get_queryset(), pk=other) for other in values["include_uploads"]]
        version = uploads.upload_finish(
            upload=upload,
            sha256=values["sha256"],
            actor=request.user,
            create_version=values["create_version"],
            include_uploads=others,
            kind=values.get("kind"),
        )
        upload.refresh_from_db()
        return Response(
            {
                "upload": UploadSerializer(upload).data,
                "version": VersionSerializer(version).data if version is not None else None,
            }
        )


def register_submissions(router: BaseRouter) -> None:
    router.register("submissions", SubmissionViewSet, basename="submission")
    router.register("versions", VersionViewSet, basename="version")
    router.register("check-runs", CheckRunViewSet, basename="check-run")
    router.register("uploads", UploadViewSet, basename="upload")


# --- Systems ---------------------------------------------------------------------------------
# Members see their organisations' systems, auditors and the chair all, everyone the systems of published
# results; submitters register systems and give each a new description (a new revision, audited).

from django.db.models import OuterRef, Subquery  # noqa: E402
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser  # noqa: E402

from submissions.models import Organisation, System, SystemDescriptionRevision  # noqa: E402
from submissions.selectors import (  # noqa: E402
    organisations_registering_systems,
    system_description_revisions,
)
from submissions.system_desc import system_desc_read, system_desc_validate  # noqa: E402


class SystemRevisionSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    sha256 = serializers.CharField()
    changed_keys = serializers.ListField(child=serializers.CharField())
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class SystemSerializer(serializers.ModelSerializer):
    organisation = serializers.CharField(source="organisation.slug", read_only=True)
    description_revision = serializers.SerializerMethodField()

    class Meta:
        model = System
        fields = [
            "id",
            "organisation",
            "name",
            "description",
            "description_revision",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_description_revision(self, system):
        if hasattr(system, "latest_revision_number"):  # annotated by the list
            return system.latest_revision_number
        return system.description_revisions.order_by("-number").values_list("number", flat=True).first()


class SystemDetailSerializer(SystemSerializer):
    revisions = serializers.SerializerMethodField()

    class Meta(SystemSerializer.Meta):
        fields = [*SystemSerializer.Meta.fields, "revisions"]

    @extend_schema_field(SystemRevisionSerializer(many=True))
    def get_revisions(self, system):
        return SystemRevisionSerializer(system_description_revisions(system), many=True).data


class SystemDescriptionInputSerializer(serializers.Serializer):
    description = serializers.JSONField(
        required=False, help_text="The system_desc.json content as a JSON object."
    )
    system_desc = serializers.FileField(
        required=False, help_text="Or the system_desc.json file itself (multipart)."
    )

    def validate(self, attrs):
        if ("description" in attrs) == ("system_desc" in attrs):
            raise serializers.ValidationError(
                "Give exactly one of description (JSON) or system_desc (a file)."
            )
        return attrs


class SystemCreateSerializer(SystemDescriptionInputSerializer):
    organisation = serializers.CharField(
        required=False, help_text="Slug of your organisation (needed when you belong to several)."
    )
    name = serializers.CharField(max_length=100, help_text="As in the bundle's results/<system>/ folder.")


def _description_from(request, values) -> dict:
    """The description given as JSON or as a file, refused with every schema finding (`system-desc-invalid`)."""
    if "system_desc" in values:
        upload = values["system_desc"]
        read = system_desc_read(upload, display=upload.name or "system_desc.json")
        problems, description = read.problems, read.description
    else:
        description = values["description"]
        cap = settings.PORTAL_SYSTEM_DESC_MAX_BYTES
        if len(json.dumps(description, default=str)) > cap:
            raise ApplicationError(
                f"The description is larger than {cap:,} bytes.", code="system-desc-too-large"
            )
        problems = system_desc_validate(description)
    if problems or description is None:
        raise ApplicationError(
            f"The system description has {len(problems)} problem{'s' if len(problems) != 1 else ''}: "
            + "; ".join(f"{p.pointer or '/'} {p.message}" for p in problems[:3]),
            code="system-desc-invalid",
            extra={"problems": [p.as_dict() for p in problems]},
        )
    return description


class SystemFilter(django_filters.FilterSet):
    organisation = django_filters.CharFilter(field_name="organisation__slug")

    class Meta:
        model = System
        fields = ["organisation", "name"]


class SystemViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Systems under test with their system_desc.json: list, register, update the description (history kept)."""

    permission_classes = [ReadAnyoneWriteAuthenticated]
    filterset_class = SystemFilter
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def get_serializer_class(self):
        return SystemDetailSerializer if self.action == "retrieve" else SystemSerializer

    def get_queryset(self):
        latest_revision = SystemDescriptionRevision.objects.filter(system_id=OuterRef("pk")).order_by(
            "-number"
        )
        return (
            systems_visible_to(self.request.user)
            .annotate(latest_revision_number=Subquery(latest_revision.values("number")[:1]))
            .order_by("organisation__name", "name")
        )

    @extend_schema(
        request={"application/json": SystemCreateSerializer, "multipart/form-data": SystemCreateSerializer},
        responses={201: SystemDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        data = SystemCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        organisations = organisations_registering_systems(request.user)
        if values.get("organisation"):
            organisation = Organisation.objects.filter(slug=values["organisation"]).first()
            if organisation is None:
                raise ApplicationError(
                    f"No organisation {values['organisation']!r}.", code="unknown-organisation"
                )
        elif organisations.count() == 1:
            organisation = organisations.get()
        else:
            raise ApplicationError(
                "Say which organisation the system belongs to (organisation: its slug).",
                code="organisation-required",
            )
        description = _description_from(request, values)
        system = services.system_register(
            organisation=organisation, name=values["name"], description=description, actor=request.user
        )
        return Response(SystemDetailSerializer(system).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={
            "application/json": SystemDescriptionInputSerializer,
            "multipart/form-data": SystemDescriptionInputSerializer,
        },
        responses={200: SystemDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"], url_path="description", filterset_class=None)
    @idempotent
    def update_description(self, request, pk=None):
        """A new system_desc.json for the system: a new revision (the earlier ones stay), audited."""
        system = self.get_object()  # first: outside the visibility table it is a 404, whatever the body
        if not systems_submittable_by(request.user).filter(pk=system.pk).exists():
            raise NotAllowedError(f"Only submitters of {system.organisation.name} can describe its systems.")
        data = SystemDescriptionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        description = _description_from(request, data.validated_data)
        system = services.system_update_description(
            system=system, description=description, actor=request.user
        )
        return Response(SystemDetailSerializer(system).data)


def register_systems(router: BaseRouter) -> None:
    router.register("systems", SystemViewSet, basename="system")
