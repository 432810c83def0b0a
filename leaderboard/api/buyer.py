"""The buyer's answers in the public API: the SLO finder (per request from the raw logs, or by the MLPerf
percentiles) and the procurement report. Public, published results only, like the rest of the public API."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.visibility import benchmarks_visible_to
from catalog.models import Benchmark
from leaderboard.api.results import (
    CITED_FIELDS,
    FORMAT_PARAMETER,
    PROVENANCE_FIELDS,
    STANDING_FIELDS,
    PublicViewSet,
    public_publications,
)
from leaderboard.board import exports, selectors
from leaderboard.board.cache import public_cached
from leaderboard.board.goodput.index import GoodputRows
from leaderboard.board.goodput.tables import goodput_index, goodput_ranking
from leaderboard.board.goodput.targets import CONVENTIONS, GoodputTargets, Prices, normalised
from leaderboard.board.procurement import (
    COSTING_FIELDS,
    MAX_MODELS,
    costing_from_query,
    requirements_from_query,
)
from leaderboard.board.slo import NO_INTERPOLATION, SloTargets, interactivity_metric_for
from leaderboard.board.tender import DEFAULT_PUE, TenderPrices, point_energy_and_cost
from portal.errors import ApplicationError

SloRowOut = inline_serializer(
    "SloRow",
    {
        **PROVENANCE_FIELDS,
        "rank": serializers.IntegerField(
            allow_null=True, help_text="Only fully recomputed results rank; the others follow with null."
        ),
        "ranked": serializers.BooleanField(),
        "system": serializers.CharField(),
        "organisation": serializers.CharField(),
        "accelerators": serializers.IntegerField(allow_null=True),
        "accelerator_label": serializers.CharField(help_text='The count beside the type: "8 × AX GPU".'),
        "verification": serializers.CharField(
            help_text="The result's level: fully recomputed, partly, claimed."
        ),
        "point_verification": serializers.CharField(help_text="The point's: recomputed or claimed."),
        **STANDING_FIELDS,
        **CITED_FIELDS,
        "point": serializers.CharField(),
        "basis": serializers.CharField(),
        "concurrency": serializers.FloatField(),
        "system_tps": serializers.FloatField(),
        "tps_per_user": serializers.FloatField(allow_null=True),
        "e2e_interactivity": serializers.FloatField(allow_null=True),
        "ttft_p90_ms": serializers.FloatField(),
        "system_tps_per_kw": serializers.FloatField(allow_null=True),
        "power_kw": serializers.FloatField(
            allow_null=True, help_text="Provisioned kW of the point's configuration"
        ),
        "power_source": serializers.CharField(
            allow_null=True, help_text="measured (the point has a power trace) or provisioned"
        ),
        "system_power_kw": serializers.FloatField(
            allow_null=True, help_text="The point's power, from power_source"
        ),
        "joules_per_token": serializers.FloatField(
            allow_null=True, help_text="system_power_kw x 1000 / system_tps"
        ),
        "cost_per_million_tokens": serializers.FloatField(
            required=False, allow_null=True, help_text="With a price: hourly / (system_tps x 3600) x 10^6"
        ),
        # per-request mode only (ttft_ms, tpot_ms or interactivity given): docs/buyers.md
        "result": serializers.CharField(required=False, help_text="Per request: the result's public id."),
        "tracked_requests": serializers.IntegerField(required=False),
        **{
            f"{prefix}{name}": field
            for prefix in ("", "ttft_", "tpot_")
            for name, field in (
                ("good_requests", serializers.IntegerField(required=False)),
                ("attainment", serializers.FloatField(required=False, help_text="good / tracked requests")),
                ("goodput_rps", serializers.FloatField(required=False, help_text="good requests per second")),
                (
                    "goodput_tps",
                    serializers.FloatField(required=False, help_text="good output tokens per second"),
                ),
            )
        },
    },
)


ProcurementRowOut = inline_serializer(
    "ProcurementRow",
    {
        **PROVENANCE_FIELDS,
        "model": serializers.CharField(),
        "system": serializers.CharField(),
        "organisation": serializers.CharField(),
        "accelerators": serializers.IntegerField(allow_null=True),
        "verification": serializers.CharField(),
        "point": serializers.CharField(),
        "concurrency": serializers.FloatField(),
        "ttft_p90_ms": serializers.FloatField(),
        "interactivity": serializers.FloatField(allow_null=True),
        "tpot_p90_ms": serializers.FloatField(allow_null=True, help_text="1000 / interactivity"),
        "system_tps": serializers.FloatField(),
        "system_tps_per_kw": serializers.FloatField(allow_null=True),
        "power_kw": serializers.FloatField(allow_null=True),
        **STANDING_FIELDS,
        **CITED_FIELDS,
        "meets_delivery": serializers.BooleanField(),
        "meets_expansion": serializers.BooleanField(allow_null=True),
        "accelerator_label": serializers.CharField(help_text='The count beside the type: "8 × AX GPU".'),
        "point_url": serializers.CharField(help_text="The delivery evidence's point on the result page."),
        "delivery": serializers.JSONField(
            help_text="The delivery phase's evidence: meets, point, concurrency, point_url, ttft_p90_ms, "
            "tpot_p90_ms, interactivity, system_tps, system_tps_per_kw, power_kw, and the point's own evidence: "
            "measured_in_revision, bundle_sha256, archive, archive_sha256, archive_url, raw_log_path, raw_log_sha256."
        ),
        "expansion": serializers.JSONField(
            allow_null=True,
            help_text="The expansion phase's evidence (the same keys; meets false when its best point meeting the "
            "latency is below the throughput), null when no point meets its latency or no expansion was asked.",
        ),
    },
)


ProcurementOut = inline_serializer(
    "ProcurementReport",
    {
        "note": serializers.CharField(),
        "models": inline_serializer(
            "ProcurementSection",
            {
                "model": serializers.CharField(),
                "known_model": serializers.BooleanField(),
                "interactivity_metric": serializers.CharField(),
                "requirements": serializers.JSONField(),
                "phases": serializers.JSONField(
                    help_text="delivery and expansion (null when not asked): ttft_p90_ms_max, tpot_ms_max, "
                    "interactivity_min, system_tps_min"
                ),
                "systems_judged": serializers.IntegerField(
                    help_text="Published systems of the model (one each)"
                ),
                "systems_meeting_delivery": serializers.IntegerField(),
                "systems_meeting_both": serializers.IntegerField(),
                "systems": ProcurementRowOut.__class__(many=True),
                "not_fully_recomputed": serializers.JSONField(
                    help_text="Results of the model with claimed points (raw log missing, waived), not judged."
                ),
            },
            many=True,
        ),
    },
)


class SloQuery(serializers.Serializer):
    """Per-request targets (ttft_ms, tpot_ms or interactivity, attainment) or the MLPerf percentile view
    (ttft_p90_ms_max and interactivity_min); per-request targets win when both are given."""

    benchmark = serializers.CharField(help_text="The benchmark's model_id.")
    ttft_ms = serializers.FloatField(
        min_value=0.001, required=False, allow_null=True, help_text="Per request: TTFT at most (ms)."
    )
    tpot_ms = serializers.FloatField(
        min_value=0.001, required=False, allow_null=True, help_text="Per request: TPOT at most (ms)."
    )
    interactivity = serializers.FloatField(
        min_value=0.001,
        required=False,
        allow_null=True,
        help_text="Per request: at least this many tokens/s/user (TPOT at most 1000 / interactivity ms).",
    )
    attainment = serializers.FloatField(
        min_value=0.1,
        max_value=100,
        required=False,
        allow_null=True,
        help_text="Per request: the share of requests (%) that must meet the targets; 95 when left out.",
    )
    ttft_p90_ms_max = serializers.FloatField(
        min_value=0.001, required=False, allow_null=True, help_text="Percentile view: TTFT P90 at most (ms)."
    )
    interactivity_min = serializers.FloatField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text="Percentile view: interactivity at least (tokens/s/user; agentic workloads: end-to-end).",
    )
    power_kw_max = serializers.FloatField(
        min_value=0.001, required=False, allow_null=True, help_text="Provisioned power at most (kW)."
    )
    accelerators_max = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, help_text="Accelerators in the system at most."
    )
    price_per_accelerator_hour = serializers.FloatField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text="Your price per accelerator-hour (both modes).",
    )
    price_per_node_hour = serializers.FloatField(
        min_value=0, required=False, allow_null=True, help_text="Your price per node-hour (both modes)."
    )
    price_per_system_hour = serializers.FloatField(
        min_value=0, required=False, allow_null=True, help_text="Your price per system-hour (both modes)."
    )
    energy_price_per_kwh = serializers.FloatField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text="Your energy price per kWh (on the point's provisioned power; both modes).",
    )

    def validate(self, attrs):
        hourly = [
            name
            for name in ("price_per_accelerator_hour", "price_per_node_hour", "price_per_system_hour")
            if attrs.get(name) is not None
        ]
        if len(hourly) > 1:
            raise serializers.ValidationError(
                {hourly[1]: "Give one hourly price: per accelerator, per node or per system."}
            )
        per_request = any(attrs.get(name) is not None for name in ("ttft_ms", "tpot_ms", "interactivity"))
        if per_request:
            if attrs.get("tpot_ms") is not None and attrs.get("interactivity") is not None:
                raise serializers.ValidationError(
                    {"interactivity": "Give a TPOT target or an interactivity target, not both."}
                )
            attrs["mode"] = "per_request"
            return attrs
        missing = {
            name: "Give this target, or per-request targets (TTFT and TPOT per request) instead."
            for name in ("ttft_p90_ms_max", "interactivity_min")
            if attrs.get(name) is None
        }
        if missing:
            raise serializers.ValidationError(missing)
        attrs["mode"] = "percentile"
        return attrs


def public_benchmarks() -> list[Benchmark]:
    """The benchmark catalog as the public answers read it, kept per public generation in this process: the SLO
    finder's API and its anonymous page asked the database for it on every distinct query. A catalog edit shows
    with the next generation, as the cached public pages and answers already did."""
    return public_cached("benchmarks", lambda: list(benchmarks_visible_to(None)))


def slo_answer(query: dict, *, benchmarks: list[Benchmark] | None = None) -> dict:
    """The SLO finder's answer to validated query values (shared with the page, which passes the benchmarks its
    form lists: one query fewer)."""
    if benchmarks is None:
        benchmarks = public_benchmarks()
    benchmark = next((b for b in benchmarks if b.model_id == query["benchmark"]), None)
    if benchmark is None:
        raise ApplicationError(f"No benchmark {query['benchmark']!r}.", code="unknown-benchmark")
    metric = interactivity_metric_for(benchmark.workload)
    if query.get("mode") == "per_request":
        tpot_ms = query.get("tpot_ms")
        if query.get("interactivity") is not None:
            tpot_ms = 1000.0 / query["interactivity"]
        goal = query.get("attainment")
        targets = GoodputTargets(
            ttft_ms=query.get("ttft_ms"),
            tpot_ms=tpot_ms,
            attainment=(95.0 if goal is None else goal) / 100.0,
            power_kw_max=query.get("power_kw_max"),
            accelerators_max=query.get("accelerators_max"),
        )
        prices = prices_of(query)
        index = goodput_index(public_publications(), benchmark.model_id)
        measured = selectors.measured_power_of_benchmark(benchmark.model_id)

        def added(row: dict) -> dict:
            return {
                "result_url": exports.result_url(row["public_id"]),
                # the count beside the type
                "accelerator_label": index.result(row["public_id"]).get("accelerator_label") or "",
                **point_energy(row, measured),
            }

        # the rows are built when read: the page shows 25, the API a page of them; what `added` adds depends on
        # the point alone (the index, like the measured power, is of one public generation): made once per point
        rows = GoodputRows(
            index, goodput_ranking(index, benchmark.model_id, targets), targets, prices, static=("slo", added)
        )
        return {
            "benchmark": benchmark,
            "mode": "per_request",
            "targets": targets,
            "interactivity_metric": metric,
            "points_without_samples": index.points_without_samples,
            "priced": prices.given,
            "rows": rows,
        }
    targets = SloTargets(
        ttft_p90_ms_max=query["ttft_p90_ms_max"],
        interactivity_min=query["interactivity_min"],
        power_kw_max=query.get("power_kw_max"),
        accelerators_max=query.get("accelerators_max"),
        interactivity_metric=metric,
    )
    prices = prices_of(query)
    measured = selectors.measured_power_of_benchmark(benchmark.model_id)
    index = exports.slo_index(public_publications(), benchmark.model_id)

    def decorate(row: dict) -> None:
        # the buyer's prices (as the per-request mode prices its rows: leaderboard.board.goodput.targets.normalised)
        # and the point's energy per token, measured where a trace exists; only for the rows read (the page's 25,
        # the API's page), not for every qualifying result
        row.update(
            normalised(
                row,
                accelerators=row.get("accelerators"),
                nodes=(index.result_by_id(row["public_id"]) or {}).get("nodes"),
                prices=prices,
            )
        )
        row.update(point_energy(row, measured))

    rows = exports.slo_query(public_publications(), benchmark, targets, decorate=decorate)
    return {
        "benchmark": benchmark,
        "mode": "percentile",
        "interactivity_metric": metric,
        "priced": prices.given,
        "rows": rows,
    }


def prices_of(query: dict) -> Prices:
    """The buyer's prices among validated query values (both modes)."""
    return Prices(
        per_accelerator_hour=query.get("price_per_accelerator_hour"),
        per_node_hour=query.get("price_per_node_hour"),
        per_system_hour=query.get("price_per_system_hour"),
        per_kwh=query.get("energy_price_per_kwh"),
    )


def point_energy(row: dict, measured: dict[str, dict[int, dict]]) -> dict:
    """A row's point power (measured where its point has a trace, else provisioned, and which) and energy per output
    token (leaderboard.board.tender), for both modes of the finder."""
    figures = point_energy_and_cost(
        row,
        accelerators=row.get("accelerators"),
        measured=(measured.get(row["public_id"]) or {}).get(row.get("concurrency")),
        prices=TenderPrices(),
        pue=DEFAULT_PUE,
    )
    return {name: figures[name] for name in ("power_source", "system_power_kw", "joules_per_token")}


class PublicSloViewSet(PublicViewSet):
    """The SLO finder: per published, non-retracted curve, the best measured point meeting every target,
    ranked by system_tps. No interpolation between points."""

    table_name = "slo"

    @extend_schema(
        parameters=[SloQuery, FORMAT_PARAMETER],
        responses=SloRowOut.__class__(many=True),
        description=NO_INTERPOLATION,
    )
    def list(self, request, **kwargs):
        query = SloQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        answer = slo_answer(query.validated_data)
        extra = {}
        if answer["mode"] == "per_request":
            targets = answer["targets"]
            extra = {
                "targets": {
                    "ttft_ms": targets.ttft_ms,
                    "tpot_ms": targets.tpot_ms,
                    "attainment": targets.attainment,
                },
                "conventions": CONVENTIONS,
                "points_without_samples": answer["points_without_samples"],
            }
        return self.paginated(
            answer["rows"],
            benchmark=answer["benchmark"].model_id,
            mode=answer["mode"],
            interactivity_metric=answer["interactivity_metric"],
            note=NO_INTERPOLATION,
            **extra,
        )


def _procurement_parameters() -> list[OpenApiParameter]:
    described = {
        "model": "Model id (benchmark)",
        "ttft_p90_ms_max": "TTFT P90 at most (ms)",
        "tpot_ms_max": "TPOT P90 at most (ms): interactivity >= 1000 / TPOT",
        "interactivity_min": "Interactivity at least (tokens/s/user)",
        "delivery_system_tps_min": "Throughput for the delivery phase, at least (tokens/s)",
        "expansion_system_tps_min": "Throughput for the promised expansion (tokens/s; default: the delivery's)",
        "expansion_ttft_p90_ms_max": "Expansion phase: TTFT P90 at most (ms; default: the delivery's)",
        "expansion_tpot_ms_max": "Expansion phase: TPOT P90 at most (ms; default: the delivery's)",
        "expansion_interactivity_min": "Expansion phase: interactivity at least (default: the delivery's)",
    }
    costing = [
        OpenApiParameter(name, OpenApiTypes.NUMBER, description=f"{label} (optional; PUE 1.3 by default)")
        for name, label in COSTING_FIELDS
    ]
    return costing + [
        OpenApiParameter(
            f"{name}_{index}",
            OpenApiTypes.STR if name == "model" else OpenApiTypes.NUMBER,
            required=(name == "model" and index == 1),
            description=f"{text} (model {index})",
        )
        for index in range(1, MAX_MODELS + 1)
        for name, text in described.items()
    ]


def procurement_answer(query) -> list[dict]:
    """The procurement report for a query string (the page and the API share it): the requirements, the optional
    prices and PUE, and the evidence's measured power where a trace exists. Raises RequirementsError."""
    return procurement_for(requirements_from_query(query), costing_from_query(query))


def procurement_for(requirements: list, costing) -> list[dict]:
    """The procurement report of requirements and prices already read (leaderboard.board.tender_inputs)."""
    measured = {r.model: selectors.measured_power_of_benchmark(r.model) for r in requirements}
    return exports.procurement_query(
        public_publications(), requirements, measured_by_model=measured, costing=costing
    )


class PublicProcurementViewSet(PublicViewSet):
    """The procurement report: per model, the systems whose verified points meet the requirements; as CSV one
    row per model and system."""

    table_name = "procurement"

    @extend_schema(parameters=[*_procurement_parameters(), FORMAT_PARAMETER], responses=ProcurementOut)
    def list(self, request, **kwargs):
        try:
            report = procurement_answer(request.query_params)
        except ValueError as error:
            raise ApplicationError(str(error), code="invalid") from None
        if self.wants_csv():
            return Response(exports.procurement_rows(report))
        return Response({"note": NO_INTERPOLATION, "models": report})


def register(router: BaseRouter) -> None:
    router.register("public/slo", PublicSloViewSet, basename="public-slo")
    router.register("public/procurement", PublicProcurementViewSet, basename="public-procurement")
