"""Check runs of visible versions; the detail holds every finding and per-point metric."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema_field
from rest_framework import mixins, serializers, viewsets

from access.visibility import check_runs_visible_to
from accounts.permissions import TokenScopeAllows
from checker.judge.portal_rules import PORTAL_ONLY_RULES
from checker.recompute.regions import region_label
from portal.private_cache import PrivateCachedListMixin
from submissions.api.common import ReadAnyoneWriteAuthenticated
from submissions.api.serializers import CheckRunSummarySerializer
from submissions.models import CheckRun, Finding, PointMetric
from submissions.selectors import check_run_findings, check_run_point_metrics


class FindingSerializer(serializers.ModelSerializer):
    portal_only = serializers.SerializerMethodField(
        help_text="Raised by a rule only the portal runs (it needs the submission): `portal check` never reports it."
    )

    class Meta:
        model = Finding
        fields = ["rule", "severity", "file", "line", "pointer", "point", "message", "fix", "portal_only"]

    def get_portal_only(self, finding) -> bool:
        return finding.rule in PORTAL_ONLY_RULES


class PointMetricSerializer(serializers.ModelSerializer):
    region = serializers.SerializerMethodField(help_text="The official region id (point.yaml `region`).")
    region_label = serializers.SerializerMethodField(help_text="A readable label for the region id.")

    class Meta:
        model = PointMetric
        fields = [
            "key",
            "system",
            "model",
            "concurrency",
            "region",
            "region_label",
            "source",
            "claimed",
            "recomputed",
            "extra",
        ]

    def get_region(self, metric) -> str | None:
        extra = metric.extra if isinstance(metric.extra, dict) else {}
        return extra.get("region") if isinstance(extra.get("region"), str) else None

    def get_region_label(self, metric) -> str:
        return region_label(self.get_region(metric))


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


class CheckRunViewSet(
    PrivateCachedListMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Check runs of visible versions; the detail holds every finding and per-point metric."""

    permission_classes = [TokenScopeAllows, ReadAnyoneWriteAuthenticated]
    filterset_class = CheckRunFilter

    def get_serializer_class(self):
        return CheckRunSerializer if self.action == "retrieve" else CheckRunSummarySerializer

    def get_queryset(self):
        runs = check_runs_visible_to(self.request.user).order_by("-id")
        # The whole report and the pipeline's per-point file map are never served here, and a list row shows no
        # curves: leave the blobs in the database.
        if self.action == "retrieve":
            return runs.defer("report", "point_files")
        return runs.defer("report", "curves", "point_files")
