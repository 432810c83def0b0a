"""The public API of the leaderboard, read-only and without login, under /api/v1/public/: benchmarks, results,
points, curves, the SLO query and the procurement query, each as JSON or CSV (?format=csv or .csv).

Every answer is the anonymous view (access.visibility.publications_visible_to(None): published results only,
whoever asks), so it is shared: cached under the public generation (leaderboard.board.cache), with ETag and
Last-Modified. Lists are paginated (limit/offset, at most MAX_PAGE_SIZE rows a page).
"""

from __future__ import annotations

import django_filters
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.visibility import annotations_visible_to, benchmarks_visible_to, publications_visible_to
from checker.judge.verification import RESULT_LEVELS
from leaderboard.board import exports, selectors
from leaderboard.board.cache import cached_response
from leaderboard.models import Publication
from portal.errors import ApplicationError
from portal.pagination import PortalPagination
from portal.renderers import FastJSONRenderer

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


def public_publications():
    """What the public sees, whoever asks: the answers are shared through the cache."""
    return publications_visible_to(None)


class PublicPagination(PortalPagination):
    default_limit = DEFAULT_PAGE_SIZE
    max_limit = MAX_PAGE_SIZE


class CSVRenderer(BaseRenderer):
    """A table as CSV: a list's rows, or a single object as one row (errors included)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            rows = data["results"]
        elif isinstance(data, list):
            rows = data
        else:
            rows = [data or {}]
        return exports.rows_to_csv(rows).encode("utf-8")


class PublicViewSet(viewsets.ViewSet):
    """No login, no session: the same answer for everyone, from the cache when it is there."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [FastJSONRenderer, CSVRenderer]
    pagination_class = PublicPagination
    table_name = "table"

    def dispatch(self, request, *args, **kwargs):
        return cached_response(request, lambda: super(PublicViewSet, self).dispatch(request, *args, **kwargs))

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if (
            getattr(request, "accepted_renderer", None) is not None
            and request.accepted_renderer.format == "csv"
        ):
            response["Content-Disposition"] = f'attachment; filename="{self.table_name}.csv"'
        return response

    def wants_csv(self) -> bool:
        return self.request.accepted_renderer.format == "csv"

    def paginated(self, rows: list, **extra) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, self.request, view=self)
        response = paginator.get_paginated_response(page)
        if extra:
            response.data = {**extra, **response.data}
        return response


def _not_found(what: str) -> Http404:
    return Http404(f"No published {what}.")


# --- Output shapes (for the OpenAPI schema; the tables are plain rows) ----------------------------------------

_HEADLINE = {
    "points": serializers.IntegerField(allow_null=True),
    "max_system_tps": serializers.FloatField(allow_null=True),
    "max_tps_per_user": serializers.FloatField(allow_null=True),
    "min_ttft_p90_ms": serializers.FloatField(allow_null=True),
    "max_system_tps_per_kw": serializers.FloatField(allow_null=True),
    "max_concurrency": serializers.IntegerField(allow_null=True),
}
PROVENANCE_FIELDS = {
    "public_id": serializers.CharField(),
    "result_url": serializers.CharField(help_text="The result page, /results/<public_id>/."),
    "bundle_sha256": serializers.CharField(
        help_text="SHA-256 of the published bundle the numbers come from."
    ),
}
STANDING_FIELDS = {
    "ruleset": serializers.CharField(help_text="The rule set the result was checked under."),
    "preview": serializers.BooleanField(
        help_text="True under a preview rule set (or none known): not an official result."
    ),
    "standing": serializers.CharField(help_text='"official" or "preview, not official".'),
    "revision": serializers.IntegerField(help_text="The revision of the result this answer is about."),
    "evidence_pack_url": serializers.CharField(help_text="That revision's evidence pack."),
}
CITED_FIELDS = {  # leaderboard.board.slo.CITED: where the point's raw log is
    "measured_in_revision": serializers.IntegerField(
        help_text="The revision whose version holds its raw log."
    ),
    "bundle_sha256": serializers.CharField(help_text="SHA-256 of that revision's bundle."),
    "archive": serializers.CharField(allow_null=True, help_text="The archive (file) holding the raw log."),
    "archive_sha256": serializers.CharField(allow_null=True),
    "archive_url": serializers.CharField(allow_null=True, help_text="Downloads that archive."),
    "raw_log_path": serializers.CharField(
        allow_null=True, help_text="The raw log's path inside the archive."
    ),
    "raw_log_sha256": serializers.CharField(allow_null=True),
}
POINT_CITATION_FIELDS = {
    **CITED_FIELDS,
    "version": serializers.IntegerField(allow_null=True, help_text="That revision's version number."),
    "check": serializers.CharField(help_text="The verdict of the check run that measured it."),
    "waivers": serializers.ListField(child=serializers.CharField(), help_text="Rules waived on this point."),
    "standing": serializers.CharField(help_text='The result\'s: "official" or "preview, not official".'),
}
BenchmarkOut = inline_serializer(
    "PublicBenchmark",
    {
        "model_id": serializers.CharField(),
        "display_name": serializers.CharField(),
        "workload": serializers.CharField(),
        "interactivity_metric": serializers.CharField(),
        "published_results": serializers.IntegerField(),
        "ranked_results": serializers.IntegerField(help_text="Published and not retracted."),
        "latest_published_at": serializers.DateTimeField(allow_null=True),
    },
)
_RESULT_FIELDS = {
    **PROVENANCE_FIELDS,
    "benchmark": serializers.CharField(),
    "system": serializers.CharField(),
    "organisation": serializers.CharField(),
    "division": serializers.CharField(),
    "availability": serializers.CharField(),
    "accelerators": serializers.IntegerField(allow_null=True),
    "verification": serializers.CharField(
        help_text="fully recomputed (every point from its raw log), partly recomputed or claimed."
    ),
    "recomputed_points": serializers.IntegerField(),
    "ranked_by_default": serializers.BooleanField(
        help_text="Only fully recomputed, not retracted results rank by default."
    ),
    "check": serializers.CharField(help_text='The check\'s verdict: "passed" or "passed with N waived".'),
    **STANDING_FIELDS,
    "published_at": serializers.DateTimeField(),
    "retracted": serializers.BooleanField(),
    "retracted_at": serializers.DateTimeField(allow_null=True),
    "retraction_reason": serializers.CharField(allow_null=True),
    **_HEADLINE,
}
ResultOut = inline_serializer("PublicResult", _RESULT_FIELDS)
_POINT_FIELDS = {
    **PROVENANCE_FIELDS,
    "benchmark": serializers.CharField(),
    "system": serializers.CharField(),
    "organisation": serializers.CharField(),
    "retracted": serializers.BooleanField(),
    "point": serializers.CharField(),
    "basis": serializers.CharField(help_text="recomputed (from the raw log) or claimed"),
    "verification": serializers.CharField(
        help_text="recomputed (from its raw log) or claimed (raw log missing, waived)"
    ),
    "concurrency": serializers.FloatField(allow_null=True),
    "system_tps": serializers.FloatField(allow_null=True),
    "tps_per_user": serializers.FloatField(allow_null=True),
    "e2e_interactivity": serializers.FloatField(allow_null=True),
    "ttft_p90_ms": serializers.FloatField(allow_null=True),
    "system_tps_per_kw": serializers.FloatField(allow_null=True),
    "region": serializers.CharField(allow_null=True),
    "revision": serializers.IntegerField(help_text="The result revision that published this measurement."),
    "stack": serializers.CharField(help_text="The software stack it was measured with."),
    "accelerators": serializers.IntegerField(allow_null=True),
    "nodes": serializers.IntegerField(allow_null=True),
    "power_source": serializers.CharField(
        allow_null=True, help_text="measured (a power trace was submitted) or provisioned"
    ),
    "system_power_kw": serializers.FloatField(
        allow_null=True, help_text="The point's power, from power_source."
    ),
    "joules_per_token": serializers.FloatField(
        allow_null=True, help_text="system_power_kw x 1000 / system_tps"
    ),
    "tokens_per_s_per_kw": serializers.FloatField(allow_null=True, help_text="system_tps / system_power_kw"),
    "ruleset": serializers.CharField(help_text="The rule set of the check run that measured it."),
    **POINT_CITATION_FIELDS,
}
PointOut = inline_serializer("PublicPoint", _POINT_FIELDS)
ResultDetailOut = inline_serializer(
    "PublicResultDetail",
    {
        **_RESULT_FIELDS,
        "system_description": serializers.JSONField(),
        "revision": serializers.IntegerField(
            help_text="The revision shown (?revision=N; default the newest)."
        ),
        "revisions": inline_serializer(
            "PublicResultRevision",
            {
                "revision": serializers.IntegerField(),
                "url": serializers.CharField(),
                "published_at": serializers.DateTimeField(),
                "stack": serializers.CharField(),
                "changes": serializers.JSONField(),
                "bundle_sha256": serializers.CharField(),
                "points": serializers.IntegerField(),
                "max_system_tps": serializers.FloatField(allow_null=True),
                "replaced": serializers.JSONField(),
            },
            many=True,
        ),
        "official": serializers.JSONField(allow_null=True, help_text="The official checker's kept verdict."),
        "official_verdict": serializers.JSONField(
            help_text="The official cross-check in the portal's words: status (passed, failed, not_run), label, why."
        ),
        "ruleset": serializers.CharField(allow_null=True),
        "annotations": inline_serializer(
            "PublicAnnotation",
            {"text": serializers.CharField(), "created_at": serializers.DateTimeField()},
            many=True,
        ),
        "points": PointOut.__class__(many=True),
        "pareto": serializers.JSONField(
            help_text="Per interactivity axis: the front's points and step vertices."
        ),
    },
)
CurveOut = inline_serializer(
    "PublicCurveVertex",
    {
        **PROVENANCE_FIELDS,
        "benchmark": serializers.CharField(),
        "system": serializers.CharField(),
        "retracted": serializers.BooleanField(),
        "x_metric": serializers.CharField(),
        "y_metric": serializers.CharField(),
        "vertex": serializers.IntegerField(),
        "x": serializers.FloatField(),
        "y": serializers.FloatField(),
    },
)

FILTER_PARAMETERS = [
    OpenApiParameter("benchmark", OpenApiTypes.STR, description="A benchmark's model_id"),
    OpenApiParameter("organisation", OpenApiTypes.STR, description="An organisation's slug"),
    OpenApiParameter("system", OpenApiTypes.STR, description="A system's name"),
    OpenApiParameter("division", OpenApiTypes.STR),
    OpenApiParameter("availability", OpenApiTypes.STR),
    OpenApiParameter("result", OpenApiTypes.STR, description="A result's public id"),
    OpenApiParameter("retracted", OpenApiTypes.BOOL, description="true: retracted only; false: ranked only"),
]
FORMAT_PARAMETER = OpenApiParameter(
    "format", OpenApiTypes.STR, enum=["json", "csv"], description="json (default) or csv (the same table)"
)


# --- Filters ---------------------------------------------------------------------------------------------------


class PublicResultFilter(django_filters.FilterSet):
    benchmark = django_filters.CharFilter(field_name="submission__benchmark__model_id")
    # Every filter reads the published record (leaderboard.publishing.snapshot), never the live system.
    organisation = django_filters.CharFilter(field_name="snapshot__organisation__slug")
    system = django_filters.CharFilter(field_name="snapshot__system__name")
    division = django_filters.CharFilter(field_name="snapshot__division")
    availability = django_filters.CharFilter(field_name="snapshot__availability")
    verification = django_filters.ChoiceFilter(
        field_name="snapshot__verification__level",
        choices=[(level, level) for level in RESULT_LEVELS],
        help_text="fully recomputed, partly recomputed or claimed (checker.judge.verification).",
    )
    result = django_filters.CharFilter(field_name="public_id", help_text="A result's public id.")
    retracted = django_filters.BooleanFilter(
        field_name="retracted_at", lookup_expr="isnull", exclude=True, help_text="true: retracted only"
    )

    class Meta:
        model = Publication
        fields: list[str] = []


def _filtered(request, queryset):
    filterset = PublicResultFilter(request.query_params, queryset=queryset)
    if not filterset.is_valid():
        raise ApplicationError(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in filterset.errors.items()), code="invalid"
        )
    return filterset.qs


# --- Endpoints -------------------------------------------------------------------------------------------------


class PublicBenchmarkViewSet(PublicViewSet):
    """Benchmarks with their counts of published results."""

    lookup_field = "model_id"
    table_name = "benchmarks"

    def _rows(self):
        return exports.benchmark_rows(benchmarks_visible_to(None), public_publications())

    @extend_schema(responses=BenchmarkOut.__class__(many=True), parameters=[FORMAT_PARAMETER])
    def list(self, request, **kwargs):
        return self.paginated(self._rows())

    @extend_schema(responses=BenchmarkOut, parameters=[FORMAT_PARAMETER])
    def retrieve(self, request, model_id=None, **kwargs):
        row = next((r for r in self._rows() if r["model_id"] == model_id), None)
        if row is None:
            raise _not_found("benchmark")
        return Response(row)


class PublicResultViewSet(PublicViewSet):
    """Published results (retracted ones flagged: they keep their page but leave the rankings)."""

    lookup_field = "public_id"
    lookup_value_regex = r"[A-Za-z0-9_-]+"
    table_name = "results"

    @extend_schema(
        responses=ResultOut.__class__(many=True),
        parameters=[
            *FILTER_PARAMETERS,
            FORMAT_PARAMETER,
            OpenApiParameter(
                "order",
                OpenApiTypes.STR,
                enum=["rank"],
                description="rank (with benchmark): the board's order, a `rank` column first (empty for a result "
                "the board does not rank: another verification level, an older result of a system, retracted)",
            ),
        ],
    )
    def list(self, request, **kwargs):
        queryset = _filtered(request, exports.published_only(public_publications()).defer("curve"))
        order = request.query_params.get("order", "")
        if order not in ("", "rank"):
            raise ApplicationError("order: use rank (the board's order) or leave it out.", code="invalid")
        paginator = self.pagination_class()
        if order == "rank":
            ranked = _board_ranked(request.query_params.get("benchmark", ""), queryset)
            page = paginator.paginate_queryset(ranked, request, view=self)
            return paginator.get_paginated_response(
                [{"rank": rank, **exports.result_row(p)} for rank, p in page]
            )
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([exports.result_row(p) for p in page])

    @extend_schema(
        responses=ResultDetailOut,
        parameters=[
            FORMAT_PARAMETER,
            OpenApiParameter(
                "revision", OpenApiTypes.INT, description="A revision number (default: the newest, as ranked)"
            ),
        ],
        description="One published result with its points, curve, annotations and revisions; as CSV: its points. "
        "?revision=N serves that revision of the result.",
    )
    def retrieve(self, request, public_id=None, **kwargs):
        newest = exports.published_only(public_publications()).filter(public_id=public_id).first()
        if newest is None:
            raise _not_found("result")
        revision = selectors.parse_revision(request.query_params.get("revision"))
        publication = selectors.publication_at_revision(newest, revision)
        if self.wants_csv():
            self.table_name = public_id if revision is None else f"{public_id}-r{revision}"
            return Response(exports.point_rows(publication))
        annotations = list(annotations_visible_to(None).filter(publication=newest))
        revisions = selectors.publication_revisions_public(newest)
        return Response(exports.result_detail(publication, annotations, revisions))


class PublicPointViewSet(PublicViewSet):
    """Every measured point of the published results (filter by benchmark or result)."""

    table_name = "points"

    @extend_schema(responses=PointOut.__class__(many=True), parameters=[*FILTER_PARAMETERS, FORMAT_PARAMETER])
    def list(self, request, **kwargs):
        publications = list(_filtered(request, exports.published_only(public_publications())))
        measured = selectors.measured_power_of_results([p.public_id for p in publications])
        return self.paginated(
            [row for p in publications for row in exports.point_rows(p, measured.get(p.public_id))]
        )


class PublicCurveViewSet(PublicViewSet):
    """The published step functions (one row per vertex) of the published results."""

    table_name = "curves"

    @extend_schema(responses=CurveOut.__class__(many=True), parameters=[*FILTER_PARAMETERS, FORMAT_PARAMETER])
    def list(self, request, **kwargs):
        queryset = _filtered(request, exports.published_only(public_publications()))
        return self.paginated([row for p in queryset for row in exports.curve_rows(p)])


def _board_ranked(model_id: str, queryset) -> list[tuple[int | None, Publication]]:
    """The filtered results in the board's order (selectors.leaderboard_for with every verification level): each
    with its rank on the board, or None (not ranked by default, or not on the board); those off the board last."""
    if not model_id:
        raise ApplicationError(
            "order=rank needs benchmark=<model_id>: a rank is a place on one benchmark's board.",
            code="invalid",
        )
    benchmark = selectors.benchmark_public(model_id)
    board = selectors.leaderboard_for(
        benchmark, selectors.LeaderboardFilters.from_query({"level": selectors.LEVEL_ALL}), with_curves=False
    )
    position = {p.pk: i for i, p in enumerate(board.results)}
    ranks = {p.pk: i + 1 for i, p in enumerate(board.results) if p.record.verification.ranks_by_default}
    rows = sorted(queryset, key=lambda p: (position.get(p.pk, len(position)), p.public_id))
    return [(ranks.get(p.pk), p) for p in rows]


def register(router: BaseRouter) -> None:
    router.register("public/benchmarks", PublicBenchmarkViewSet, basename="public-benchmark")
    router.register("public/results", PublicResultViewSet, basename="public-result")
    router.register("public/points", PublicPointViewSet, basename="public-point")
    router.register("public/curves", PublicCurveViewSet, basename="public-curve")
