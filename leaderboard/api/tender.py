"""The tender desk in the public API: site sizing (`GET /api/v1/public/sizing/`) and the claims check
(`GET /api/v1/public/claims/`), DESIGN.md "Tender desk". Public, published, fully recomputed results only, one per
system, as the SLO finder and the procurement report count them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.routers import BaseRouter

from access.visibility import benchmarks_visible_to
from catalog.models import Benchmark
from checker.judge.verification import FULLY_RECOMPUTED
from checker.recompute.goodput import SloTarget
from leaderboard.api.buyer import procurement_for
from leaderboard.api.results import FORMAT_PARAMETER, PublicViewSet, public_publications
from leaderboard.board import exports, selectors
from leaderboard.board.claims import CLAIM_FIGURES, Claim, check_claim
from leaderboard.board.levels import levels_from_query, levels_table
from leaderboard.board.normalised import points_goodput
from leaderboard.board.procurement import RequirementsError
from leaderboard.board.scoring import score_phase
from leaderboard.board.slo import NO_INTERPOLATION, SloTargets, interactivity_metric_for
from leaderboard.board.tender import SiteAsk, SizedSite, SizingIndex
from leaderboard.board.tender_inputs import TenderDefinition, costing_of, tender_from_query
from portal.errors import ApplicationError

SIZING_NOTE = (
    "Each system is sized at its sizing point: the measured point meeting the SLO with the largest concurrency C "
    "(a fixed-concurrency run keeps C streams in flight, so one replica serves C users). replicas = ceil(users x "
    "(1 + headroom) / C); power is the point's measured average where a power trace exists, else its provisioned "
    "power (power_source says which); facility power = replicas x power x PUE. A system with no measured point "
    "meeting the SLO is listed with meets: false and no sizing: nothing is extrapolated. " + NO_INTERPOLATION
)

SIZING_LABELS = {
    "benchmark": "Benchmark",
    "users": "Concurrent users, delivery",
    "users_expansion": "Concurrent users, expansion",
    "ttft_p90_ms_max": "TTFT P90 ≤ (ms)",
    "interactivity_min": "Interactivity ≥ (tokens/s/user)",
    "ttft_ms": "TTFT per request ≤ (ms)",
    "tpot_ms": "TPOT per request ≤ (ms)",
    "attainment": "Requests meeting it (%)",
    "pue": "PUE",
    "headroom": "Headroom (fraction)",
    "price_per_accelerator_hour": "Price per accelerator-hour",
    "price_per_kwh": "Energy price per kWh",
}


class SizingQuery(serializers.Serializer):
    """DESIGN.md's parameters: the SLO in percentile mode (ttft_p90_ms_max and interactivity_min) or per request
    (ttft_ms, tpot_ms, attainment in %), the users per phase, PUE, headroom and prices."""

    benchmark = serializers.CharField(help_text="The benchmark's model_id.")
    users = serializers.IntegerField(
        min_value=1, max_value=10**9, help_text="Concurrent users, delivery phase."
    )
    users_expansion = serializers.IntegerField(
        min_value=1,
        max_value=10**9,
        required=False,
        allow_null=True,
        help_text="Concurrent users, expansion.",
    )
    ttft_p90_ms_max = serializers.FloatField(min_value=0.001, required=False, allow_null=True)
    interactivity_min = serializers.FloatField(min_value=0, required=False, allow_null=True)
    ttft_ms = serializers.FloatField(min_value=0.001, required=False, allow_null=True)
    tpot_ms = serializers.FloatField(min_value=0.001, required=False, allow_null=True)
    attainment = serializers.FloatField(
        min_value=0.1,
        max_value=100,
        required=False,
        allow_null=True,
        help_text="Per request, %; 95 by default.",
    )
    # The prices and PUE are read by leaderboard.board.tender_inputs.costing_of, as every buyer view reads them (the same
    # sentence for a bad one wherever it is typed).
    pue = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text="A number from 1 to 5; default 1.3."
    )
    headroom = serializers.FloatField(
        min_value=0,
        max_value=10,
        required=False,
        allow_null=True,
        help_text="0.2 = 20 % more users; default 0.",
    )
    price_per_accelerator_hour = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text="A number from 0 to 10^9."
    )
    price_per_kwh = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text="A number from 0 to 10^9."
    )

    def validate(self, attrs):
        try:
            attrs["costing"] = costing_of(attrs)
        except RequirementsError as error:
            raise serializers.ValidationError(
                {name: sentence for name, _, sentence in error.problems}
            ) from None
        if attrs.get("ttft_ms") is not None or attrs.get("tpot_ms") is not None:
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


def _benchmark(model_id: str) -> Benchmark:
    benchmark = benchmarks_visible_to(None).filter(model_id=model_id).first()
    if benchmark is None:
        raise ApplicationError(f"No benchmark {model_id!r}.", code="unknown-benchmark")
    return benchmark


def _judged_results(benchmark: Benchmark) -> list[dict]:
    """The benchmark's published, fully recomputed results, newest per system (what the tender desk judges)."""
    return _judged(benchmark)[0]


# model_id -> (the snapshot list, its judged results, their SizingIndex, each one's bundle SHA-256), in this process:
# one per public snapshot
_judged_by_model: dict[str, tuple[list[dict], list[dict], SizingIndex, dict[str, str]]] = {}


def _judged(benchmark: Benchmark) -> tuple[list[dict], SizingIndex, dict[str, str]]:
    """The judged results, their SizingIndex and each one's bundle SHA-256 by result id, made once per public
    snapshot (a publication or retraction makes a new snapshot, hence new ones)."""
    snapshot = exports.snapshot_results_cached(public_publications(), benchmark.model_id)
    entry = _judged_by_model.get(benchmark.model_id)
    if entry is None or entry[0] is not snapshot:
        judged = [result for result in snapshot if result.get("verification") == FULLY_RECOMPUTED]
        bundles = {result["public_id"]: result["bundle_sha256"] for result in judged}
        entry = (snapshot, judged, SizingIndex(judged), bundles)
        _judged_by_model[benchmark.model_id] = entry
    return entry[1], entry[2], entry[3]


def sizing_answer(query: dict) -> dict:
    """The sizing of validated query values (the page and the API share it)."""
    benchmark = _benchmark(query["benchmark"])
    metric = interactivity_metric_for(benchmark.workload)
    results, index, bundle_of = _judged(benchmark)
    chosen = concurrency = None
    ask = SiteAsk(
        users=query["users"],
        users_expansion=query.get("users_expansion"),
        pue=query["costing"].pue,
        headroom=query.get("headroom") or 0.0,
        prices=query["costing"].prices,
    )
    if query["mode"] == "per_request":
        target = SloTarget(ttft_ms=query.get("ttft_ms"), tpot_ms=query.get("tpot_ms"))
        goal = (95.0 if query.get("attainment") is None else query["attainment"]) / 100.0
        attained = {r["public_id"]: points_goodput(r["public_id"], r["points"], target) for r in results}

        def meets(result: dict, point: dict) -> bool:
            counted = attained[result["public_id"]].get(point.get("concurrency"))
            return counted is not None and (counted.get("attainment") or 0.0) >= goal

        slo = {"ttft_ms": target.ttft_ms, "tpot_ms": target.tpot_ms, "attainment": goal}
    else:
        targets = SloTargets(
            ttft_p90_ms_max=query["ttft_p90_ms_max"],
            interactivity_min=query["interactivity_min"],
            interactivity_metric=metric,
        )
        meets = None
        chosen, concurrency = index.choose(
            targets
        )  # sizing_point under percentile_meets(targets), vectorised
        slo = {"ttft_p90_ms_max": targets.ttft_p90_ms_max, "interactivity_min": targets.interactivity_min}

    def decorate(row: dict) -> None:
        row["bundle_sha256"] = bundle_of[row["result"]]

    # the rows are built when read: the page shows 25 a phase, the API a page, the CSV all of them
    rows = SizedSite(
        results,
        ask,
        meets=meets,
        chosen=chosen,
        concurrency=concurrency,
        index=index,
        measured=selectors.measured_power_of_benchmark(benchmark.model_id),
        decorate=decorate,
    )
    return {
        "benchmark": benchmark,
        "mode": query["mode"],
        "interactivity_metric": metric,
        "slo": slo,
        "ask": ask,
        "rows": rows,
    }


class PublicSizingViewSet(PublicViewSet):
    """Site sizing: per phase and per system, replicas, accelerators, nodes, power, energy and cost at the point
    that serves the most users per replica within the SLO; systems that cannot meet it with meets: false."""

    table_name = "sizing"

    @extend_schema(parameters=[SizingQuery, FORMAT_PARAMETER], description=SIZING_NOTE)
    def list(self, request, **kwargs):
        query = SizingQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        answer = sizing_answer(query.validated_data)
        if self.wants_csv():
            return Response(list(answer["rows"]))
        ask = answer["ask"]
        return self.paginated(
            answer["rows"],
            **{
                "benchmark": answer["benchmark"].model_id,
                "mode": answer["mode"],
                "interactivity_metric": answer["interactivity_metric"],
                "slo": answer["slo"],
                "users": ask.users,
                "users_expansion": ask.users_expansion,
                "pue": ask.pue,
                "headroom": ask.headroom,
                "price_per_accelerator_hour": ask.prices.per_accelerator_hour,
                "price_per_kwh": ask.prices.per_kwh,
                "note": SIZING_NOTE,
                "meeting": answer["rows"].meeting,
            },
        )


CLAIMS_LABELS = {
    "benchmark": "Benchmark",
    "system": "System (name or result id)",
    "concurrency": "At concurrency",
    "at_interactivity": "Or at interactivity (tokens/s/user)",
    **{
        name: f"Claimed {label if label[:2].isupper() else label[0].lower() + label[1:]}"
        for name, label, _ in CLAIM_FIGURES
    },
}


class ClaimsQuery(serializers.Serializer):
    """A bid's claimed figures for one system, at a concurrency or at an interactivity level."""

    benchmark = serializers.CharField(help_text="The benchmark's model_id.")
    system = serializers.CharField(max_length=200, help_text="The system's name, or its result's public id.")
    concurrency = serializers.IntegerField(min_value=1, max_value=10**6, required=False, allow_null=True)
    at_interactivity = serializers.FloatField(
        min_value=0.001,
        required=False,
        allow_null=True,
        help_text="Instead of a concurrency: judged at the nearest published point at or below it.",
    )
    system_tps = serializers.FloatField(min_value=0, max_value=1e12, required=False, allow_null=True)
    interactivity = serializers.FloatField(min_value=0, max_value=1e9, required=False, allow_null=True)
    ttft_p90_ms = serializers.FloatField(min_value=0, max_value=1e9, required=False, allow_null=True)
    tpot_p90_ms = serializers.FloatField(min_value=0, max_value=1e9, required=False, allow_null=True)
    power_kw = serializers.FloatField(min_value=0, max_value=1e9, required=False, allow_null=True)

    def validate(self, attrs):
        if (attrs.get("concurrency") is None) == (attrs.get("at_interactivity") is None):
            raise serializers.ValidationError(
                {
                    "concurrency": "Give the concurrency of the claim, or the interactivity it is claimed at (one)."
                }
            )
        if not any(attrs.get(name) is not None for name, _, _ in CLAIM_FIGURES):
            raise serializers.ValidationError(
                {
                    "system_tps": "Give at least one claimed figure (throughput, interactivity, TTFT, TPOT, power)."
                }
            )
        return attrs


def claims_answer(query: dict) -> dict:
    """The verdict on a bid's claims (the page and the API share it)."""
    benchmark = _benchmark(query["benchmark"])
    metric = interactivity_metric_for(benchmark.workload)
    claim = Claim(
        system=query["system"].strip(),
        concurrency=query.get("concurrency"),
        at_interactivity=query.get("at_interactivity"),
        figures=tuple((name, query[name]) for name, _, _ in CLAIM_FIGURES if query.get(name) is not None),
    )
    checked = check_claim(
        claim,
        _judged_results(benchmark),
        interactivity_metric=metric,
        measured=selectors.measured_power_of_benchmark(benchmark.model_id),
    )
    return {"benchmark": benchmark.model_id, "interactivity_metric": metric, "note": CLAIMS_NOTE, **checked}


CLAIMS_NOTE = (
    "Each claimed figure is judged against the published point of the same system at the claimed concurrency (or the "
    "nearest published point at or below the claimed interactivity), recomputed from its raw log: supported when "
    "a higher-is-better figure (throughput, interactivity) is at most the evidence x 1.05, or a lower-is-better one "
    "(TTFT, TPOT, power) at least the evidence x 0.95; supported by a comparable system at 10 % against another "
    "system of the same accelerator model and count; otherwise not supported; no evidence when no published point "
    "can judge it. Power is the point's measured average where a trace exists, else its provisioned power."
)


class PublicClaimsViewSet(PublicViewSet):
    """The claims check: each figure a bid claims for a system, judged against the published recomputed points."""

    table_name = "claims"

    @extend_schema(parameters=[ClaimsQuery, FORMAT_PARAMETER], description=CLAIMS_NOTE)
    def list(self, request, **kwargs):
        query = ClaimsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        answer = claims_answer(query.validated_data)
        if self.wants_csv():
            return Response(
                [
                    {"system": answer["system"], "result": answer["result"], **figure}
                    for figure in answer["figures"]
                ]
            )
        return Response(answer)


SCORING_NOTE = (
    "Scored from published, recomputed evidence only: each system's value of a criterion is read at its evidence "
    "point for the phase (the procurement report's: the verified point with the highest system_tps meeting the "
    "phase's latency). score = weight x value / best for a higher-is-better criterion, weight x best / value for a "
    "lower-is-better one, best over the eligible systems (their evidence meets every requirement of the phase); "
    "total = the sum of the scores."
)


def scoring_answer(query) -> dict:
    """The score sheets of a tender defined in a query string (or a saved tender's parameters): model_1 and its
    phases' requirements (the procurement report's parameters), optional prices and PUE, and criterion_N,
    weight_N, direction_N, all read by leaderboard.board.tender_inputs.tender_from_query. Raises RequirementsError naming
    every bad parameter."""
    return scoring_of(tender_from_query(query))


def scoring_of(definition: TenderDefinition) -> dict:
    """The score sheets of a tender's definition, over the published evidence as it is now."""
    criteria = list(definition.criteria)
    report = procurement_for([definition.requirement], definition.costing)
    section = report[0]
    phases = ["delivery"] + (["expansion"] if section["phases"]["expansion"] else [])
    return {
        "model": section["model"],
        "phases": section["phases"],
        "criteria": [
            {"criterion": c.name, "label": c.label, "weight": c.weight, "direction": c.direction}
            for c in criteria
        ],
        "note": SCORING_NOTE,
        "sheets": [score_phase(section["systems"], phase, criteria) for phase in phases],
    }


def score_sheet_rows(answer: dict) -> list[dict]:
    """The score sheets as one table for the CSV: a row per phase and system, a column per criterion's value and
    score, the total, the point and the evidence pack."""
    rows = []
    for sheet in answer["sheets"]:
        for entry in sheet["systems"]:
            row = {
                "phase": sheet["phase"],
                "rank": entry["rank"],
                "system": entry["system"],
                "organisation": entry["organisation"],
                "public_id": entry["public_id"],
                "point": entry["point"],
                "point_url": entry["point_url"],
                "evidence_pack_url": entry["evidence_pack_url"],
            }
            for score in entry["scores"]:
                row[f"{score['criterion']}_value"] = score["value"]
                row[f"{score['criterion']}_best"] = score["best"]
                row[f"{score['criterion']}_score"] = score["score"]
            row["total"] = entry["total"]
            rows.append(row)
    return rows


class PublicTenderScoreViewSet(PublicViewSet):
    """A tender's score sheet per phase over the published evidence; as CSV a row per phase and system."""

    table_name = "score-sheet"

    @extend_schema(description=SCORING_NOTE, parameters=[FORMAT_PARAMETER])
    def list(self, request, **kwargs):
        try:
            answer = scoring_answer(request.query_params)
        except ValueError as error:
            raise ApplicationError(str(error), code="invalid") from None
        if self.wants_csv():
            return Response(score_sheet_rows(answer))
        return Response(answer)


LEVELS_NOTE = (
    "Each system's throughput at an interactivity level is its published step function read there: the highest "
    "system_tps among its recomputed points whose interactivity is at least the level (the official frontier), "
    "never interpolated; past its last point it has none. The area is under that step function from 0 to its "
    "highest interactivity (tokens/s x tokens/s/user). % against the baseline = 100 x (value - baseline) / baseline."
)


def levels_answer(query) -> dict:
    """Throughput at the query's interactivity levels per system (benchmark, levels, optional baseline public id,
    per=accelerator), over the published, fully recomputed results, newest per system. Raises ValueError."""
    model_id = (query.get("benchmark") or "").strip()
    if not model_id:
        raise ValueError("benchmark: choose a benchmark (benchmark=<model id>).")
    benchmark = _benchmark(model_id)
    levels = levels_from_query(query.get("levels") or "")
    per = (query.get("per") or "system").strip()
    if per not in ("system", "accelerator"):
        raise ValueError(f"per: enter system or accelerator, not '{per[:20]}'.")
    table = levels_table(
        _judged_results(benchmark),
        levels,
        metric=interactivity_metric_for(benchmark.workload),
        baseline=(query.get("baseline") or "").strip() or None,
        per_accelerator=per == "accelerator",
    )
    return {"benchmark": benchmark.model_id, "note": LEVELS_NOTE, **table}


class PublicLevelsViewSet(PublicViewSet):
    """Throughput at fixed interactivity levels per system, with the area under the step function and % against a
    baseline system; as CSV a row per system."""

    table_name = "throughput-at-levels"

    @extend_schema(description=LEVELS_NOTE, parameters=[FORMAT_PARAMETER])
    def list(self, request, **kwargs):
        try:
            answer = levels_answer(request.query_params)
        except ValueError as error:
            raise ApplicationError(str(error), code="invalid") from None
        if self.wants_csv():
            rows = []
            for group in answer["groups"]:
                for row in group["rows"]:
                    flat = {k: v for k, v in row.items() if k not in ("at_levels", "vs_baseline_pct")}
                    for level, value, pct in zip(
                        answer["levels"], row["at_levels"], row["vs_baseline_pct"], strict=True
                    ):
                        flat[f"tps_at_{level:g}"] = value
                        flat[f"vs_baseline_pct_at_{level:g}"] = pct
                    rows.append(flat)
            return Response(rows)
        return Response(answer)


def register(router: BaseRouter) -> None:
    router.register("public/sizing", PublicSizingViewSet, basename="public-sizing")
    router.register("public/claims", PublicClaimsViewSet, basename="public-claims")
    router.register("public/tender-score", PublicTenderScoreViewSet, basename="public-tender-score")
    router.register("public/levels", PublicLevelsViewSet, basename="public-levels")
