"""`/api/v1/spotchecks/`: the portal's re-measurements of a declared endpoint (docs/remeasurement.md)."""

from __future__ import annotations

from django_filters import rest_framework as filters
from rest_framework import mixins, serializers, viewsets
from rest_framework.permissions import AllowAny

from access.visibility import spotchecks_visible_to
from accounts.permissions import TokenScopeAllows
from spotchecks import selectors
from spotchecks.models import SpotCheck


class SpotCheckSerializer(serializers.ModelSerializer):
    public_id = serializers.SerializerMethodField()
    figures = serializers.SerializerMethodField()
    evidence = serializers.SerializerMethodField()
    endpoint_url = serializers.SerializerMethodField()
    detail = serializers.SerializerMethodField()

    class Meta:
        model = SpotCheck
        fields = [
            "id",
            "submission",
            "public_id",
            "source",
            "status",
            "point",
            "concurrency",
            "duration_s",
            "tool",
            "tool_version",
            "figures",
            "evidence",
            "endpoint_url",
            "challenge",
            "detail",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def _user(self):
        request = self.context.get("request")
        return getattr(request, "user", None)

    def get_public_id(self, obj) -> str | None:
        return obj.publication.public_id if obj.publication_id else None

    def get_figures(self, obj) -> list[dict]:
        """Claim beside re-measurement per judged figure: shortfall (fraction of the claim; negative: better),
        its 95 % bootstrap interval (interval_low, interval_high), MLPerf's margin, the verdict (within, outside,
        inconclusive, not compared), run_longer_s (inconclusive: the run length that would decide; null when none
        does), basis (both: both sides' requests drawn; remeasurement: the published point kept no samples)."""
        return [
            {
                "figure": row["figure"],
                "claimed": row["claimed"],
                "measured": row["measured"],
                "shortfall": row["shortfall"],
                "interval_low": row["low"],
                "interval_high": row["high"],
                "margin": row["margin"],
                "verdict": row["verdict"],
                "run_longer_s": row["run_longer_s"],
                "basis": row.get("basis"),
            }
            for row in selectors.spotcheck_rows(obj)
        ]

    def get_evidence(self, obj) -> list[dict]:
        return [
            {"name": item["name"], "size_bytes": item["size_bytes"], "sha256": item["sha256"]}
            for item in obj.evidence
        ]

    def get_endpoint_url(self, obj) -> str | None:
        return selectors.endpoint_url_shown(self._user(), obj)

    def get_detail(self, obj) -> str:
        # Why it could not reach the endpoint names its host: for those who see the endpoint.
        return obj.detail if selectors.endpoint_url_shown(self._user(), obj) else ""


class SpotCheckFilter(filters.FilterSet):
    class Meta:
        model = SpotCheck
        fields = ["submission", "status"]


class SpotCheckViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Spot-checks: one point of a curve measured again against the declared endpoint (docs/remeasurement.md)."""

    permission_classes = [TokenScopeAllows, AllowAny]
    serializer_class = SpotCheckSerializer
    filterset_class = SpotCheckFilter

    def get_queryset(self):
        return (
            spotchecks_visible_to(self.request.user)
            .select_related("publication", "submission")
            .order_by("-created_at", "-id")
        )
