"""`/api/v1/previews/`: upload another tool's output as a preview of a system, read its check, re-check or
delete it (its organisation's members only; never a submission)."""

from __future__ import annotations

import base64
import binascii

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from accounts.actors import SUBMITTER_ROLES
from accounts.permissions import TokenScopeAllows
from accounts.selectors import user_org_ids
from catalog.models import Benchmark
from portal.errors import ApplicationError
from portal.parsers import PARSER_CLASSES, parse_id
from previews import selectors, services
from previews.models import Preview
from submissions.models import System

NOT_MLPERF = "Not an MLPerf result: a preview recomputed by the portal for its organisation only."


class PreviewSerializer(serializers.ModelSerializer):
    system = serializers.CharField(source="system.name")
    benchmark = serializers.CharField(source="benchmark.model_id")
    organisation = serializers.CharField(source="organisation.slug")
    notice = serializers.SerializerMethodField()

    class Meta:
        model = Preview
        fields = [
            "id",
            "name",
            "organisation",
            "system",
            "benchmark",
            "status",
            "tool",
            "tool_version",
            "error_count",
            "created_at",
            "checked_at",
            "notice",
        ]

    def get_notice(self, obj) -> str:
        return NOT_MLPERF


class PreviewDetailSerializer(PreviewSerializer):
    class Meta(PreviewSerializer.Meta):
        fields = [*PreviewSerializer.Meta.fields, "files", "findings", "result", "curve"]


class PreviewFileSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255)
    content = serializers.CharField(help_text="The file's bytes in base64.")


class PreviewCreateSerializer(serializers.Serializer):
    system = serializers.CharField(help_text="The system's id or name (one of your organisation's).")
    benchmark = serializers.CharField(help_text="The benchmark's model id, e.g. llama3_1-8b.")
    name = serializers.CharField(max_length=120)
    files = PreviewFileSerializer(many=True, required=False)


class PreviewViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """An organisation's previews of other tools' outputs: never submissions, never public."""

    permission_classes = [TokenScopeAllows, IsAuthenticated]
    parser_classes = PARSER_CLASSES

    def get_serializer_class(self):
        return PreviewDetailSerializer if self.action == "retrieve" else PreviewSerializer

    def get_queryset(self):
        return selectors.previews_visible_to(self.request.user).order_by("-created_at", "-id")

    @extend_schema(
        request={"application/json": PreviewCreateSerializer, "multipart/form-data": PreviewCreateSerializer},
        responses={201: PreviewDetailSerializer},
    )
    def create(self, request):
        data = PreviewCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        orgs = user_org_ids(request.user, roles=SUBMITTER_ROLES)
        systems = System.objects.filter(organisation_id__in=orgs)
        given = values["system"].strip()
        pk = parse_id(given)
        system = (systems.filter(pk=pk) if pk is not None else systems.filter(name=given)).first()
        if system is None:
            raise ApplicationError(
                f"No system {given!r} of an organisation you upload for; register it on the Systems page first.",
                code="unknown-system",
            )
        benchmark = Benchmark.objects.filter(model_id=values["benchmark"].strip()).first()
        if benchmark is None:
            raise ApplicationError(f"No benchmark {values['benchmark']!r}.", code="unknown-benchmark")
        files: list = list(request.FILES.getlist("files"))
        for entry in values.get("files") or []:
            try:
                files.append((entry["name"], base64.b64decode(entry["content"], validate=True)))
            except (binascii.Error, ValueError):
                raise ApplicationError(
                    f"{entry['name']}: the content is not base64.", code="preview-bad-encoding"
                ) from None
        preview = services.preview_create(
            actor=request.user, system=system, benchmark=benchmark, name=values["name"], files=files
        )
        preview.refresh_from_db()
        return Response(PreviewDetailSerializer(preview).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: PreviewDetailSerializer})
    @action(detail=True, methods=["post"])
    def recheck(self, request, pk=None):
        preview = services.preview_recheck(actor=request.user, preview=self.get_object())
        return Response(PreviewDetailSerializer(preview).data)

    def destroy(self, request, pk=None):
        services.preview_delete(actor=request.user, preview=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


PreviewViewSet.http_method_names = ["get", "post", "delete", "head", "options"]
