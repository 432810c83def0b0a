"""The SLO finder per request: for every published result, the best measured point whose share of good requests
(checker.goodput: TTFT <= X ms and TPOT <= Y ms per request, failed requests are violations) meets the buyer's
attainment goal, ranked by token goodput. Computed from the per-sample arrays kept per point when its check ran
(PointMetric.samples_key), never from percentiles and never by re-reading a raw log.

GoodputIndex holds the samples of every ranked point of one benchmark in three flat arrays (TTFT and TPOT as
float64 nanoseconds, +inf where a sample cannot be good; output tokens), plus per point its 1 %-step order
statistics of TTFT and TPOT. A query first drops the points that cannot reach the goal (the order statistic at
the goal exceeds a target: exact, not an estimate), then evaluates exactly, per result, its remaining points from
the highest possible goodput down, stopping when no remaining point can beat the best one found.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from django.core.files.storage import default_storage

from checker.goodput import SampleSeries, sha256_of
from leaderboard.cliffs import cliff_side
from leaderboard.models import Publication, PublicationRevision
from submissions.models import CheckRun, PointMetric

logger = logging.getLogger(__name__)

LEVELS = 100  # order statistics kept per point at every 1 % of its tracked samples
_NO_LIMIT = float(np.finfo(np.float64).max)  # finite, so a sample at +inf (cannot be good) never meets it

CONVENTIONS = (
    "Per request, from the raw logs: a tracked request is good when it completed without an error, its time to "
    "first token is within the TTFT target and its time per output token within the TPOT target (a request "
    "with nothing after its first chunk is judged on TTFT alone). Attainment is good requests ÷ tracked "
    "requests: failed and unfinished requests count as violations, as AIPerf and GuideLLM count them "
    "(inference-perf leaves failed requests out, vLLM's goodput ignores them, so their figures read higher "
    "on runs with failures). Goodput is good requests (or their output tokens) per second of the measured "
    "window. A result qualifies at its best measured point meeting the goal; nothing is interpolated."
)


def published_check_runs() -> list[CheckRun]:
    """The check runs every published result's numbers come from (its newest revision and older ones)."""
    ids = set(
        Publication.objects.filter(Publication.states.q("published"), check_run__isnull=False).values_list(
            "check_run_id", flat=True
        )
    )
    ids |= set(
        PublicationRevision.objects.filter(
            Publication.states.q("published", via="publication"),
            PublicationRevision.states.q("published"),
            check_run__isnull=False,
        ).values_list("check_run_id", flat=True)
    )
    return list(
        CheckRun.objects.filter(pk__in=ids).select_related("version__submission__benchmark").order_by("pk")
    )


def published_point_samples(public_ids: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """Per published result, per point key, the (storage key, SHA-256) of its per-sample arrays: from the check
    run of its newest revision first, then older revisions' (an extension's inherited points)."""
    runs: dict[str, list[int]] = {}
    for public_id, run_id in Publication.objects.filter(public_id__in=public_ids).values_list(
        "public_id", "check_run_id"
    ):
        if run_id is not None:
            runs.setdefault(public_id, []).append(run_id)
    for public_id, run_id in (
        PublicationRevision.objects.filter(
            PublicationRevision.states.q("published"),
            publication__public_id__in=public_ids,
            check_run__isnull=False,
        )
        .order_by("-number")
        .values_list("publication__public_id", "check_run_id")
    ):
        if run_id not in runs.setdefault(public_id, []):
            runs[public_id].append(run_id)
    order = {run_id: (public_id, rank) for public_id, ids in runs.items() for rank, run_id in enumerate(ids)}
    found: dict[str, dict[str, tuple[int, str, str]]] = {}
    for run_id, key, samples_key, sha256 in (
        PointMetric.objects.filter(check_run_id__in=list(order))
        .exclude(samples_key="")
        .values_list("check_run_id", "key", "samples_key", "samples_sha256")
    ):
        public_id, rank = order[run_id]
        current = found.setdefault(public_id, {}).get(key)
        if current is None or rank < current[0]:
            found[public_id][key] = (rank, samples_key, sha256)
    return {pid: {k: (v[1], v[2]) for k, v in points.items()} for pid, points in found.items()}


def load_samples(samples_key: str, sha256: str) -> SampleSeries | None:
    """A point's stored arrays, or None (logged) when they are missing or no longer hash to their SHA-256."""
    try:
        with default_storage.open(samples_key, "rb") as stream:
            data = stream.read()
    except OSError:
        logger.warning("per-sample arrays %s are missing from storage", samples_key)
        return None
    if sha256_of(data) != sha256:
        logger.warning("per-sample arrays %s do not match their SHA-256", samples_key)
        return None
    try:
        return SampleSeries.from_npz(data)
    except ValueError:
        logger.warning("per-sample arrays %s cannot be read", samples_key)
        return None


@dataclass(frozen=True)
class GoodputTargets:
    """What a buyer asks per request, and of how many requests."""

    ttft_ms: float | None
    tpot_ms: float | None
    attainment: float  # the share of requests that must be good, 0 < attainment <= 1
    power_kw_max: float | None = None
    accelerators_max: int | None = None


@dataclass(frozen=True)
class Prices:
    """What a buyer pays (the portal prices nothing itself): one hourly price, and optionally energy."""

    per_accelerator_hour: float | None = None
    per_node_hour: float | None = None
    per_system_hour: float | None = None
    per_kwh: float | None = None

    @property
    def given(self) -> bool:
        return any(
            v is not None for v in (self.per_accelerator_hour, self.per_node_hour, self.per_system_hour)
        )

    def system_hour(
        self, *, accelerators: int | None, nodes: int | None, power_kw: float | None
    ) -> float | None:
        """The system's cost per hour at a point, or None when a count (or the power, for energy) is unknown."""
        if self.per_system_hour is not None:
            hourly = self.per_system_hour
        elif self.per_node_hour is not None:
            hourly = self.per_node_hour * nodes if nodes else None
        elif self.per_accelerator_hour is not None:
            hourly = self.per_accelerator_hour * accelerators if accelerators else None
        else:
            return None
        if hourly is None:
            return None
        if self.per_kwh is not None:
            if power_kw is None:
                return None
            hourly += power_kw * self.per_kwh
        return hourly


def normalised(row: dict, *, accelerators: int | None, nodes: int | None, prices: Prices | None) -> dict:
    """Per accelerator, per node and per provisioned kW figures of a row, and its cost per million tokens."""
    out: dict = {}
    for name in ("goodput_tps", "system_tps"):
        value = row.get(name)
        out[f"{name}_per_accelerator"] = value / accelerators if value is not None and accelerators else None
        out[f"{name}_per_node"] = value / nodes if value is not None and nodes else None
        power = row.get("power_kw")
        out[f"{name}_per_kw"] = value / power if value is not None and power else None
    out["nodes"] = nodes
    if prices is not None and prices.given:
        hourly = prices.system_hour(accelerators=accelerators, nodes=nodes, power_kw=row.get("power_kw"))
        out["cost_per_hour"] = hourly
        for name, key in (
            ("system_tps", "cost_per_million_tokens"),
            ("goodput_tps", "cost_per_million_good_tokens"),
        ):
            rate = row.get(name)
            out[key] = hourly / (rate * 3600) * 1e6 if hourly is not None and rate else None
    return out


def _order_statistics(values: np.ndarray) -> np.ndarray:
    """values sorted, at ranks ceil(k n / 100) for k = 1..100 (1-based): entry k-1 is the k %-th statistic."""
    ordered = np.sort(values)
    ranks = np.ceil(np.arange(1, LEVELS + 1) * len(ordered) / LEVELS).astype(np.int64)
    return ordered[np.clip(ranks - 1, 0, len(ordered) - 1)]


class GoodputIndex:
    """The per-sample arrays of a benchmark's ranked results, for many per-request SLO queries."""

    def __init__(self, results: list[dict], samples: dict[tuple[int, int], SampleSeries]) -> None:
        """results: leaderboard.exports.snapshot_results rows; samples: (result index, point index) -> arrays.
        Points without arrays are not candidates (counted in `points_without_samples`)."""
        self.results = [r for r in results if not r.get("retracted")]
        self.points: list[dict] = []
        owners, sizes, seconds, bound_tokens, ttft_stats, tpot_stats = [], [], [], [], [], []
        ttft_parts, tpot_parts, token_parts = [], [], []
        self.points_without_samples = 0
        for result_index, result in enumerate(self.results):
            for point_index, point in enumerate(result.get("points") or []):
                series = samples.get((result_index, point_index))
                if series is None or series.tracked == 0 or series.duration_ns <= 0:
                    self.points_without_samples += 1
                    continue
                ttft = np.where(series.ok & (series.ttft_ns >= 0), series.ttft_ns.astype(np.float64), np.inf)
                tpot = np.where(series.ok, np.nan_to_num(series.tpot_ns, nan=0.0), np.inf)
                self.points.append(point)
                owners.append(result_index)
                sizes.append(series.tracked)
                seconds.append(series.duration_ns / 1e9)
                bound_tokens.append(float(series.output_tokens[np.isfinite(ttft)].sum()))
                ttft_stats.append(_order_statistics(ttft))
                tpot_stats.append(_order_statistics(tpot))
                ttft_parts.append(ttft)
                tpot_parts.append(tpot)
                token_parts.append(series.output_tokens.astype(np.uint32))
        self._owner = np.asarray(owners, dtype=np.int64)
        self._size = np.asarray(sizes, dtype=np.int64)
        self._start = (
            np.concatenate([[0], np.cumsum(self._size)[:-1]]).astype(np.int64) if sizes else self._size
        )
        self._seconds = np.asarray(seconds, dtype=np.float64)
        self._ttft_stats = np.asarray(ttft_stats).reshape(len(sizes), LEVELS)
        self._tpot_stats = np.asarray(tpot_stats).reshape(len(sizes), LEVELS)
        self._ttft = np.concatenate(ttft_parts) if ttft_parts else np.zeros(0)
        self._tpot = np.concatenate(tpot_parts) if tpot_parts else np.zeros(0)
        self._tokens = np.concatenate(token_parts) if token_parts else np.zeros(0, np.uint32)
        self._concurrency = np.asarray(
            [float(p.get("concurrency") or 0) for p in self.points], dtype=np.float64
        )
        tps = np.asarray([_number(p.get("system_tps")) for p in self.points], dtype=np.float64)
        per_kw = np.asarray([_number(p.get("system_tps_per_kw")) for p in self.points], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            self._power_kw = np.where(per_kw > 0, tps / per_kw, math.nan)
        self._accelerators = np.asarray(
            [_number(self.results[i].get("accelerators")) for i in owners], dtype=np.float64
        )
        self._static: dict[int, dict] = {}
        self._result_of = {result["public_id"]: index for index, result in enumerate(self.results)}
        # the most token goodput a point can have: the tokens of its samples that can be good, per second
        self._bound_tps = np.asarray(bound_tokens, dtype=np.float64) / np.maximum(self._seconds, 1e-300)
        # per result, its points from the highest possible token goodput down (the order evaluation goes in)
        self._by_bound = np.lexsort((self._concurrency, -self._bound_tps, self._owner))

    @property
    def samples(self) -> int:
        return int(len(self._ttft))

    def _evaluate(
        self, points: np.ndarray, ttft_ns: float, tpot_ns: float, *, alone: bool = False
    ) -> dict[str, np.ndarray]:
        """Exact good counts and good tokens of `points` (positions in self.points); with `alone`, also per
        target alone (ttft_..., tpot_...)."""
        sizes = self._size[points]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        index = np.repeat(self._start[points] - offsets, sizes) + np.arange(int(sizes.sum()))
        ttft_met = self._ttft[index] <= ttft_ns
        tpot_met = self._tpot[index] <= tpot_ns
        tokens = self._tokens[index]
        variants = [("", ttft_met & tpot_met)]
        if alone:
            variants += [("ttft_", ttft_met), ("tpot_", tpot_met)]
        out = {}
        for name, met in variants:
            out[f"{name}good"] = np.add.reduceat(met, offsets, dtype=np.int64)
            out[f"{name}tokens"] = np.add.reduceat(tokens * met, offsets, dtype=np.int64)
        return out

    def rank(self, targets: GoodputTargets, prices: Prices | None = None) -> list[dict]:
        """One row per result with a point meeting the goal, ranked by that point's token goodput (highest
        first; ties: request goodput, then public id)."""
        if not len(self._owner):
            return []
        ttft_ns = _NO_LIMIT if targets.ttft_ms is None else targets.ttft_ms * 1e6
        tpot_ns = _NO_LIMIT if targets.tpot_ms is None else targets.tpot_ms * 1e6
        goal = targets.attainment
        # good >= goal * tracked needs the ceil(goal * n)-th smallest TTFT (and TPOT) within target; the k %-th
        # statistic (k = floor(100 goal)) is at most that one, so a point failing here cannot reach the goal.
        level = min(LEVELS, math.floor(goal * LEVELS + 1e-9))
        possible = np.ones(len(self._owner), dtype=bool)
        if level >= 1:
            possible &= (self._ttft_stats[:, level - 1] <= ttft_ns) & (
                self._tpot_stats[:, level - 1] <= tpot_ns
            )
        if targets.power_kw_max is not None:
            possible &= self._power_kw <= targets.power_kw_max
        if targets.accelerators_max is not None:
            possible &= self._accelerators <= targets.accelerators_max
        order = self._by_bound[possible[self._by_bound]]
        owners = self._owner[order]
        group_start = (
            np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]])) if len(order) else order
        )
        group_end = np.concatenate([group_start[1:], [len(order)]]).astype(np.int64)
        cursor = group_start.astype(np.int64).copy()
        best_tps = np.full(len(group_start), -np.inf)
        best_point = np.full(len(group_start), -1, dtype=np.int64)
        best_rps = np.full(len(group_start), -np.inf)
        while True:
            active = cursor < group_end
            if active.any():
                active[active] = self._bound_tps[order[cursor[active]]] > best_tps[active]
            groups = np.flatnonzero(active)
            if not len(groups):
                break
            points = order[cursor[groups]]
            counts = self._evaluate(points, ttft_ns, tpot_ns)
            attainment = counts["good"] / self._size[points]
            tps = counts["tokens"] / self._seconds[points]
            rps = counts["good"] / self._seconds[points]
            better = (attainment >= goal - 1e-12) & (
                (tps > best_tps[groups]) | ((tps == best_tps[groups]) & (rps > best_rps[groups]))
            )
            best_tps[groups[better]] = tps[better]
            best_rps[groups[better]] = rps[better]
            best_point[groups[better]] = points[better]
            cursor[groups] += 1
        chosen = best_point[best_point >= 0]
        if not len(chosen):
            return []
        counts = self._evaluate(chosen, ttft_ns, tpot_ns, alone=True)
        rows = [
            self._row(int(point), {k: int(v[i]) for k, v in counts.items()}, targets)
            for i, point in enumerate(chosen.tolist())
        ]
        for row in rows:
            result = self.results[self._result_of[row["public_id"]]]
            row.update(
                normalised(
                    row, accelerators=result.get("accelerators"), nodes=result.get("nodes"), prices=prices
                )
            )
        rows.sort(key=lambda row: (-row["goodput_tps"], -row["goodput_rps"], row["public_id"]))
        for rank, row in enumerate(rows, start=1):
            row["rank"] = rank
        return rows

    def _static_row(self, position: int) -> dict:
        """What a point's row shows whatever the targets: made once per point."""
        row = self._static.get(position)
        if row is None:
            point = self.points[position]
            result = self.results[int(self._owner[position])]
            power_kw = float(self._power_kw[position]) if math.isfinite(self._power_kw[position]) else None
            row = self._static[position] = {
                "result": result["public_id"],
                "public_id": result["public_id"],
                "system": result.get("system"),
                "organisation": result.get("organisation"),
                "accelerators": result.get("accelerators"),
                "bundle_sha256": result.get("bundle_sha256"),
                "point": f"r{point.get('concurrency')}",
                "point_key": point.get("point"),
                "basis": point.get("basis"),
                "concurrency": point.get("concurrency"),
                # the MLPerf percentile view of the same point, beside the per-request answer
                "system_tps": _figure(point.get("system_tps")),
                "tps_per_user": _figure(point.get("tps_per_user")),
                "e2e_interactivity": _figure(point.get("e2e_interactivity")),
                "ttft_p90_ms": _figure(point.get("ttft_p90_ms")),
                "system_tps_per_kw": _figure(point.get("system_tps_per_kw")),
                "power_kw": round(power_kw, 3) if power_kw is not None else None,
                # which side of the curve's first performance cliff this point is on (None: no cliff)
                "cliff": cliff_side(result.get("points") or [], point.get("concurrency")),
            }
        return row

    def _row(self, position: int, counts: dict[str, int], targets: GoodputTargets) -> dict:
        tracked = int(self._size[position])
        seconds = float(self._seconds[position])
        row = {
            **self._static_row(position),
            "ttft_ms": targets.ttft_ms,
            "tpot_ms": targets.tpot_ms,
            "attainment_goal": targets.attainment,
            "tracked_requests": tracked,
        }
        for prefix in ("", "ttft_", "tpot_"):
            good = counts[f"{prefix}good"]
            row[f"{prefix}good_requests"] = good
            row[f"{prefix}attainment"] = good / tracked
            row[f"{prefix}goodput_rps"] = good / seconds
            row[f"{prefix}goodput_tps"] = counts[f"{prefix}tokens"] / seconds
        return row


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return math.nan
    return float(value)


def _figure(value) -> float | None:
    number = _number(value)
    return None if math.isnan(number) else number


# model_id -> (the snapshot list it was built from, its index), in this process
_indexes: dict[str, tuple[list[dict], GoodputIndex]] = {}


def goodput_index(publications, model_id: str) -> GoodputIndex:
    """The GoodputIndex of a benchmark's public snapshot, built once per snapshot object (a publication,
    retraction or backfill starts a new public generation, hence a new snapshot and a new index)."""
    from leaderboard.exports import snapshot_results_cached

    results = snapshot_results_cached(publications, model_id)
    entry = _indexes.get(model_id)
    if entry is None or entry[0] is not results:
        stored = published_point_samples([r["public_id"] for r in results])
        samples: dict[tuple[int, int], SampleSeries] = {}
        for result_index, result in enumerate(r for r in results if not r.get("retracted")):
            keys = stored.get(result["public_id"]) or {}
            for point_index, point in enumerate(result.get("points") or []):
                where = keys.get(point.get("point"))
                series = load_samples(*where) if where else None
                if series is not None:
                    samples[(result_index, point_index)] = series
        entry = (results, GoodputIndex(results, samples))
        _indexes[model_id] = entry
    return entry[1]
