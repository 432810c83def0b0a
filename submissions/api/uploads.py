"""Chunked, resumable uploads: start, PUT parts, finish (a new version, checked at once), abort."""

from __future__ import annotations

import io

import django_filters
from django.conf import settings
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, parsers, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from access.visibility import submissions_visible_to, uploads_visible_to
from accounts.permissions import TokenScopeAllows
from portal.private_cache import PrivateCachedListMixin
from submissions import uploads
from submissions.api.common import IDEMPOTENCY_PARAMETER
from submissions.api.serializers import VersionSerializer
from submissions.api.submissions import submission_create_from
from submissions.checks.queue import check_start_pending
from submissions.idempotency import HEADER as IDEMPOTENCY_HEADER
from submissions.idempotency import idempotency_begin, idempotency_end, idempotent
from submissions.models import Submission, SubmissionVersion, Upload
from submissions.workflow import UPLOAD


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
            "transfer",
            "error_message",
            "received_parts",
            "missing_parts",
            "version",
            "created_by",
            "created_at",
            "updated_at",
        ]

    created_by = serializers.CharField(source="created_by.username", read_only=True)

    def _received(self, upload) -> list[dict]:
        """The parts stored so far (asked once per upload and answer: a direct upload's come from the bucket; the
        list prefetches a proxied upload's)."""
        cache = self.context.setdefault("received_parts", {})
        if upload.pk not in cache:
            cache[upload.pk] = uploads.upload_parts_received(upload)
        return cache[upload.pk]

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_missing_parts(self, upload):
        if not UPLOAD.state_allows(upload, "put_part"):
            return []
        present = {part["index"] for part in self._received(upload)}
        return [index for index in range(upload.parts_expected) if index not in present]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_received_parts(self, upload):
        return self._received(upload)

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
    transfer = serializers.ChoiceField(
        choices=["proxied", "direct", "auto"],
        default="proxied",
        help_text="direct: the parts go straight to the bucket (S3 storage only); auto: direct when the portal "
        "stores in S3, else proxied; proxied: PUT parts to the portal.",
    )

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


class UploadSignPartSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    content_md5 = serializers.CharField(
        max_length=64, help_text="The part's MD5 digest, base64 (as Content-MD5)."
    )


class UploadSignSerializer(serializers.Serializer):
    parts = UploadSignPartSerializer(many=True)


class SignedPartSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    method = serializers.CharField()
    url = serializers.CharField()
    headers = serializers.DictField(child=serializers.CharField())


class UploadSignResponseSerializer(serializers.Serializer):
    parts = SignedPartSerializer(many=True)
    expires_in_s = serializers.IntegerField()


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


def _part_body(request):
    """The raw body of a part, streamed. A body sent with `Transfer-Encoding: chunked` has no Content-Length, so
    Django's request.stream reads it as empty; the WSGI server (gunicorn) de-chunks wsgi.input and ends it at the
    last chunk, so it is read from there (upload_part reads at most the part's size plus one byte)."""
    meta = request.META
    if "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower() and not meta.get("CONTENT_LENGTH"):
        return meta["wsgi.input"]
    return request.stream or io.BytesIO(b"")


class UploadViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Chunked, resumable uploads: start, PUT parts (raw bytes, any order), check status, finish, abort;
    the list (filter by sha256, size, status, submission, mine) finds an upload to resume."""

    serializer_class = UploadSerializer
    permission_classes = [TokenScopeAllows, IsAuthenticated]
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
                submission = submission_create_from(request.user, values)
            upload = uploads.upload_start(
                actor=request.user,
                submission=submission,
                filename=values["filename"],
                size=values["size"],
                sha256=values["sha256"],
                transfer=values["transfer"],
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
        stream = _part_body(request)
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
        request=UploadSignSerializer,
        responses={200: UploadSignResponseSerializer},
    )
    @action(detail=True, methods=["post"])
    def sign(self, request, pk=None):
        """Presigned URLs to PUT a direct upload's parts straight to the bucket (up to 100 per call). Each URL
        takes exactly that part's length with the given Content-MD5: the bucket refuses other bytes."""
        upload = self.get_object()
        data = UploadSignSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        parts = uploads.upload_sign(
            upload=upload, parts=[dict(item) for item in data.validated_data["parts"]], actor=request.user
        )
        return Response({"parts": parts, "expires_in_s": settings.PORTAL_UPLOAD_SIGN_EXPIRY_S})

    @extend_schema(
        request=UploadFinishSerializer,
        responses={200: UploadFinishResponseSerializer, 202: UploadFinishResponseSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def finish(self, request, pk=None):
        """Verify size and SHA-256 of the whole file; then it becomes (part of) a new version, checked at once.
        202 instead of 200: the version is stored and its check queued, but the check queue is unreachable just
        now; the check starts by itself when it is back. Concurrent finishes of one upload get the same answer."""
        upload = self.get_object()
        data = UploadFinishSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        others = [get_object_or_404(self.get_queryset(), pk=other) for other in values["include_uploads"]]
        finished = uploads.upload_finish(
            upload=upload,
            sha256=values["sha256"],
            actor=request.user,
            create_version=values["create_version"],
            include_uploads=others,
            kind=values.get("kind"),
        )
        version = finished.version
        body = {
            "upload": UploadSerializer(finished.upload).data,
            "version": VersionSerializer(version).data if version is not None else None,
        }
        if finished.verifying:
            body["detail"] = (
                "The file is complete in the bucket; a worker is verifying its SHA-256 (GET the upload: its status "
                "becomes verified or done, with the version, or aborted with the reason)."
            )
            return Response(body, status=status.HTTP_202_ACCEPTED)
        if version is not None and check_start_pending(version):
            # Stored and queued, but the check queue is unreachable: its start message waits in the outbox.
            body["detail"] = (
                "The version is stored and its check is queued. The check queue cannot be reached just now; "
                "the check starts by itself as soon as it is back. Nothing needs to be uploaded again."
            )
            return Response(body, status=status.HTTP_202_ACCEPTED)
        return Response(body)
