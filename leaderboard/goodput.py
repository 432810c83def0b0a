"""The SLO finder per request: for every published result, the best measured point whose share of good requests
(checker.recompute.goodput: TTFT <= X ms and TPOT <= Y ms per request, failed requests are violations) meets the buyer's
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
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.core.files.storage import default_storage

from checker.recompute.goodput import SampleSeries, sha256_of
from leaderboard.cliffs import cliff_side, curve_cliffs
from leaderboard.models import Publication, PublicationRevision
from submissions.models import CheckRun, PointMetric

logger = logging.getLogger(__name__)

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


# the arrays a table file holds, one .npy each: per point (P) and per sample (N) in two orders
_POINT_ARRAYS = ("owner", "point_index", "size", "start", "seconds")
_SAMPLE_ARRAYS = ("ttft_t", "tpot_t", "tokens_t", "cum_t", "tpot_s", "cum_s")


def _count_within(values: np.ndarray, start: np.ndarray, size: np.ndarray, known: np.ndarray, limit: float):
    """Per segment [start, start + size) of `values`, each sorted ascending, whose first `known` values are known
    to be <= limit: how many values are <= limit (a binary search on every segment at once, over the rest)."""
    lo = (start + known).astype(np.int64, copy=True)
    hi = (start + size).astype(np.int64, copy=True)
    active = np.flatnonzero(lo < hi)
    while len(active):
        mid = (lo[active] + hi[active]) // 2
        met = values[mid] <= limit
        lo[active[met]] = mid[met] + 1
        hi[active[~met]] = mid[~met]
        active = active[lo[active] < hi[active]]
    return lo - start


def _fewest_good(size: np.ndarray, goal: float) -> np.ndarray:
    """Per point the fewest good requests meeting the goal: the smallest k with k / n >= goal - 1e-12, as the
    float comparison a row's attainment is judged by (k / n rises with k, so it is one threshold)."""
    threshold = goal - 1e-12
    k = np.maximum(np.ceil(threshold * size), 0)
    for _ in range(2):  # the product may round either way by one
        k = np.where((k > 0) & ((k - 1) / size >= threshold), k - 1, k)
        k = np.where(k / size < threshold, k + 1, k)
    return k.astype(np.int64)


# the per-row figures of a ranking (GoodputIndex.ranking): the chosen point's counts, for all three judgements
_COUNTS = ("good", "tokens", "ttft_good", "ttft_tokens", "tpot_good", "tpot_tokens")


class GoodputIndex:
    """The per-sample arrays of a benchmark's ranked results, for many per-request SLO queries.

    Per point its samples are kept twice: sorted by TTFT (with each sample's TPOT and output tokens beside it,
    and the running sum of tokens), and its TPOTs sorted (with their running sum of tokens). A target (X, Y) then
    gives per point, by a binary search, A = #TTFT <= X and B = #TPOT <= Y with their tokens: the TTFT-alone and
    TPOT-alone answers exactly, and min(A, B) as an exact bound on the good requests (a point whose bound misses
    the goal cannot reach it). The good requests of a point still in the running are counted on the shorter side
    of its TTFT order: the A samples within X (those with TPOT <= Y), or the n - A beyond it (B minus those with
    TPOT <= Y); a point that can reach a goal g has n - A <= (1 - g) n, so at 95 % a twentieth of its samples is
    read. The arrays can be written to a directory (`save`) and read back memory-mapped (`load`), so the web
    processes share one copy built by a worker."""

    def __init__(
        self, results: list[dict], samples: dict[tuple[int, int], SampleSeries] | None = None, *, arrays=None
    ) -> None:
        """results: leaderboard.exports.snapshot_results rows; samples: (result index, point index) -> arrays.
        Points without arrays are not candidates (counted in `points_without_samples`). `arrays` (from `load`)
        replaces `samples`."""
        self.results = [r for r in results if not r.get("retracted")]
        self.table: str | None = None  # the table file's name (its identity) when read from one (`load`)
        self.arrays = arrays if arrays is not None else _build_arrays(self.results, samples or {})
        a = self.arrays
        self._owner = np.asarray(a["owner"], dtype=np.int64)
        self._size = np.asarray(a["size"], dtype=np.int64)
        self._start = np.asarray(a["start"], dtype=np.int64)
        self._seconds = np.asarray(a["seconds"], dtype=np.float64)
        self.points: list[dict] = [
            (self.results[int(o)].get("points") or [])[int(i)]
            for o, i in zip(self._owner.tolist(), np.asarray(a["point_index"]).tolist(), strict=True)
        ]
        self.points_without_samples = sum(len(r.get("points") or []) for r in self.results) - len(self.points)
        self._concurrency = np.asarray(
            [float(p.get("concurrency") or 0) for p in self.points], dtype=np.float64
        )
        tps = np.asarray([_number(p.get("system_tps")) for p in self.points], dtype=np.float64)
        per_kw = np.asarray([_number(p.get("system_tps_per_kw")) for p in self.points], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            self._power_kw = np.where(per_kw > 0, tps / per_kw, math.nan)
        self._accelerators = np.asarray(
            [_number(self.results[i].get("accelerators")) for i in self._owner.tolist()], dtype=np.float64
        )
        self._static: dict[int, dict] = {}
        self._result_cliffs: dict[int, list[dict]] = {}
        self._result_of = {result["public_id"]: index for index, result in enumerate(self.results)}
        # the ranking's last tie-breaker: each point's result by its public id, as strings sort
        id_order = sorted(range(len(self.results)), key=lambda i: self.results[i]["public_id"])
        id_rank = np.empty(len(self.results), dtype=np.int64)
        id_rank[id_order] = np.arange(len(self.results))
        self._id_rank = id_rank[self._owner] if len(self._owner) else self._owner
        # per point all its tokens per second (what no goodput can exceed), and the order a query visits the points
        # in: per result, from the most tokens per second down (then concurrency, then position)
        self._total_tps = (
            np.asarray(a["cum_t"])[self._start + self._size] - np.asarray(a["cum_t"])[self._start]
        )
        self._total_tps = self._total_tps / np.maximum(self._seconds, 1e-300)
        self._visit = np.lexsort(
            (np.arange(len(self._owner)), self._concurrency, -self._total_tps, self._owner)
        ).astype(np.int64)
        # the arrays a query reads, as plain ndarrays (a memory map's own indexing costs per call)
        self._ttft_t, self._tpot_t, self._tokens_t, self._tpot_s, self._cum_t, self._cum_s = (
            np.asarray(a[name]).view(np.ndarray)
            for name in ("ttft_t", "tpot_t", "tokens_t", "tpot_s", "cum_t", "cum_s")
        )

    def result(self, public_id: str) -> dict:
        """The ranked result row of `public_id` (empty when the index has none): read from the index built once."""
        position = self._result_of.get(public_id)
        return self.results[position] if position is not None else {}

    @property
    def samples(self) -> int:
        return int(len(self.arrays["ttft_t"]))

    def save(self, directory) -> None:
        """Write the arrays as one .npy per array into `directory` (created; written elsewhere first and renamed,
        so a reader never sees half a table)."""
        import os
        import shutil
        import tempfile
        from pathlib import Path

        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            for name in _POINT_ARRAYS + _SAMPLE_ARRAYS:
                np.save(scratch / f"{name}.npy", np.ascontiguousarray(self.arrays[name]))
            (scratch / "complete").write_text("1\n")
            try:
                os.rename(scratch, target)
            except OSError:  # another process wrote the same table first: its copy is the same
                shutil.rmtree(scratch, ignore_errors=True)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    @classmethod
    def load(cls, directory, results: list[dict]) -> GoodputIndex | None:
        """The table `save` wrote, memory-mapped read-only, or None when it is not (completely) there."""
        from pathlib import Path

        source = Path(directory)
        if not (source / "complete").exists():
            return None
        try:
            arrays = {
                name: np.load(source / f"{name}.npy", mmap_mode="r")
                for name in _POINT_ARRAYS + _SAMPLE_ARRAYS
            }
            index = cls(results, arrays=arrays)
        except (OSError, ValueError, IndexError):
            logger.warning("goodput table %s cannot be read; building it again", source)
            return None
        index.table = source.name
        return index

    def _bound(
        self, bounds: dict, points: np.ndarray, known: np.ndarray, ttft_ns: float, tpot_ns: float
    ) -> None:
        """Into `bounds` (arrays over every point), for `points` (positions, each known to have at least `known`
        samples within both targets): A = #TTFT <= X and its tokens, B = #TPOT <= Y and its tokens (exact: binary
        searches)."""
        start, size = self._start[points], self._size[points]
        within_ttft = _count_within(self._ttft_t, start, size, known, ttft_ns)
        within_tpot = _count_within(self._tpot_s, start, size, known, tpot_ns)
        bounds["ttft_good"][points] = within_ttft
        bounds["ttft_tokens"][points] = self._cum_t[start + within_ttft] - self._cum_t[start]
        bounds["tpot_good"][points] = within_tpot
        bounds["tpot_tokens"][points] = self._cum_s[start + within_tpot] - self._cum_s[start]

    def _evaluate(
        self, points: np.ndarray, tpot_ns: float, bounds: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Exact good counts and good tokens of `points` (positions in self.points), on the shorter side of each
        point's TTFT order."""
        within = bounds["ttft_good"][points]
        sizes = self._size[points]
        direct = within <= sizes - within
        seg_start = self._start[points] + np.where(direct, 0, within)
        seg_size = np.where(direct, within, sizes - within)
        offsets = np.concatenate([[0], np.cumsum(seg_size)[:-1]]).astype(np.int64)
        total = int(seg_size.sum())
        if total:
            index = np.repeat(seg_start - offsets, seg_size) + np.arange(total)
            met = self._tpot_t[index] <= tpot_ns
            tokens = np.where(met, self._tokens_t[index], 0).astype(np.int64)
            # reduceat over empty segments returns the next element: zero them afterwards
            nonempty = seg_size > 0
            safe = np.minimum(offsets, total - 1)
            count = np.where(nonempty, np.add.reduceat(met, safe, dtype=np.int64), 0)
            token_sum = np.where(nonempty, np.add.reduceat(tokens, safe, dtype=np.int64), 0)
        else:
            count = np.zeros(len(points), dtype=np.int64)
            token_sum = np.zeros(len(points), dtype=np.int64)
        return {
            "good": np.where(direct, count, bounds["tpot_good"][points] - count),
            "tokens": np.where(direct, token_sum, bounds["tpot_tokens"][points] - token_sum),
        }

    def ranking(self, targets: GoodputTargets) -> dict[str, np.ndarray]:
        """The answer as arrays, one entry per result with a point meeting the goal, in rank order (token goodput
        highest first; ties: request goodput, then public id): "point" (its position in self.points) and the
        _COUNTS of that point. Small (a few bytes per row), so it is what the answer cache keeps."""
        empty = {name: np.zeros(0, dtype=np.int64) for name in ("point", *_COUNTS)}
        if not len(self._owner):
            return empty
        ttft_ns = _NO_LIMIT if targets.ttft_ms is None else targets.ttft_ms * 1e6
        tpot_ns = _NO_LIMIT if targets.tpot_ms is None else targets.tpot_ms * 1e6
        goal = targets.attainment
        # good <= min(A, B): a point cannot reach the goal unless its k-th smallest TTFT and k-th smallest TPOT
        # are within the targets (k = the fewest good requests meeting the goal; one read per point and array)
        need = _fewest_good(self._size, goal)
        possible = need <= self._size
        if targets.power_kw_max is not None:
            possible &= self._power_kw <= targets.power_kw_max
        if targets.accelerators_max is not None:
            possible &= self._accelerators <= targets.accelerators_max
        probe = np.flatnonzero(possible & (need > 0))
        at = self._start[probe] + need[probe] - 1
        possible[probe] = (self._ttft_t[at] <= ttft_ns) & (self._tpot_s[at] <= tpot_ns)
        # per result, its candidates from the most tokens per second down (all of a point's tokens: no goodput
        # can be more), in the order worked out once for the index
        order = self._visit[possible[self._visit]]
        if not len(order):
            return empty
        owners = self._owner[order]
        group_start = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
        group_end = np.concatenate([group_start[1:], [len(order)]]).astype(np.int64)
        cursor = group_start.astype(np.int64).copy()
        best_tps = np.full(len(group_start), -np.inf)
        best_point = np.full(len(group_start), -1, dtype=np.int64)
        best_rps = np.full(len(group_start), -np.inf)
        best_good = np.zeros(len(group_start), dtype=np.int64)
        best_tokens = np.zeros(len(group_start), dtype=np.int64)
        bounds = {name: np.zeros(len(self._owner), dtype=np.int64) for name in _COUNTS[2:]}
        seconds = np.maximum(self._seconds, 1e-300)
        groups = np.arange(len(group_start))
        while len(groups):
            points = order[cursor[groups]]
            self._bound(bounds, points, need[points], ttft_ns, tpot_ns)
            # the most token goodput the point can have at this target: only a point above its result's best is
            # counted exactly
            bound_tps = (
                np.minimum(bounds["ttft_tokens"][points], bounds["tpot_tokens"][points]) / seconds[points]
            )
            counted = bound_tps > best_tps[groups]
            points, at = points[counted], groups[counted]
            counts = self._evaluate(points, tpot_ns, bounds)
            attainment = counts["good"] / self._size[points]
            tps = counts["tokens"] / self._seconds[points]
            rps = counts["good"] / self._seconds[points]
            better = (attainment >= goal - 1e-12) & (
                (tps > best_tps[at]) | ((tps == best_tps[at]) & (rps > best_rps[at]))
            )
            won = at[better]
            best_tps[won], best_rps[won], best_point[won] = tps[better], rps[better], points[better]
            best_good[won], best_tokens[won] = counts["good"][better], counts["tokens"][better]
            cursor[groups] += 1
            # a group goes on while it has points whose tokens per second can beat its best
            groups = groups[cursor[groups] < group_end[groups]]
            groups = groups[self._total_tps[order[cursor[groups]]] > best_tps[groups]]
        found = np.flatnonzero(best_point >= 0)
        if not len(found):
            return empty
        chosen = best_point[found]
        # the rows' order: token goodput, request goodput (as the rows compute them), public id
        tps = best_tokens[found] / self._seconds[chosen]
        rps = best_good[found] / self._seconds[chosen]
        ranked = np.lexsort((self._id_rank[chosen], -rps, -tps))
        chosen = chosen[ranked]
        return {
            "point": chosen,
            "good": best_good[found][ranked],
            "tokens": best_tokens[found][ranked],
            **{name: bounds[name][chosen] for name in _COUNTS[2:]},
        }

    def rows(
        self,
        ranking: dict[str, np.ndarray],
        targets: GoodputTargets,
        prices: Prices | None = None,
        *,
        ranks: np.ndarray | None = None,
    ) -> list[dict]:
        """The answer rows of `ranking` (or of a slice of it, with the ranks of its entries in the whole)."""
        rows = []
        ranks = np.arange(1, len(ranking["point"]) + 1) if ranks is None else ranks
        columns = {name: ranking[name].tolist() for name in _COUNTS}
        for offset, (point, rank) in enumerate(zip(ranking["point"].tolist(), ranks.tolist(), strict=True)):
            row = self._row(point, {name: columns[name][offset] for name in _COUNTS}, targets)
            result = self.results[int(self._owner[point])]
            row.update(
                normalised(
                    row, accelerators=result.get("accelerators"), nodes=result.get("nodes"), prices=prices
                )
            )
            row["rank"] = rank
            rows.append(row)
        return rows

    def rank(self, targets: GoodputTargets, prices: Prices | None = None) -> list[dict]:
        """One row per result with a point meeting the goal, ranked by that point's token goodput (highest
        first; ties: request goodput, then public id)."""
        return self.rows(self.ranking(targets), targets, prices)

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
                "cliff": cliff_side(
                    result.get("points") or [],
                    point.get("concurrency"),
                    cliffs=self._cliffs(int(self._owner[position])),
                ),
            }
        return row

    def _cliffs(self, result_index: int) -> list[dict]:
        """A result's performance cliffs, worked out once (every row of the result shows its first one)."""
        cliffs = self._result_cliffs.get(result_index)
        if cliffs is None:
            cliffs = self._result_cliffs[result_index] = curve_cliffs(
                self.results[result_index].get("points") or []
            )
        return cliffs

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


class GoodputRows:
    """The rows of a ranking as a read-only sequence, each row built when it is read: a page shows 100 of a
    thousand, the API a page of them. `decorate(row)` adds what the caller adds to every row (its URL)."""

    def __init__(self, index: GoodputIndex, ranking: dict[str, np.ndarray], targets, prices, decorate=None):
        self.index, self.ranking, self.targets, self.prices = index, ranking, targets, prices
        self.decorate = decorate

    def __len__(self) -> int:
        return len(self.ranking["point"])

    def __bool__(self) -> bool:
        return len(self) > 0

    def _built(self, which) -> list[dict]:
        ranks = np.arange(1, len(self) + 1)[which]
        rows = self.index.rows(
            {name: values[which] for name, values in self.ranking.items()},
            self.targets,
            self.prices,
            ranks=ranks,
        )
        if self.decorate is not None:
            for row in rows:
                self.decorate(row)
        return rows

    def __getitem__(self, item):
        if isinstance(item, slice):
            return self._built(item)
        position = range(len(self))[item]  # IndexError past the end, negative positions from the end
        return self._built(slice(position, position + 1))[0]

    def __iter__(self):
        return iter(self._built(slice(None)))


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return math.nan
    return float(value)


def _figure(value) -> float | None:
    number = _number(value)
    return None if math.isnan(number) else number


def _build_arrays(results: list[dict], samples: dict[tuple[int, int], SampleSeries]) -> dict[str, np.ndarray]:
    """The table of GoodputIndex: per point with samples, its samples sorted by TTFT (+inf where a sample
    cannot be good: failed, or no first token) with their TPOT (+inf when failed; 0 with nothing after the first
    chunk) and tokens, the running sum of those tokens, its TPOTs sorted and their running sum of tokens."""
    owner, point_index, sizes, seconds = [], [], [], []
    ttft_parts, tpot_parts, token_parts, tpot_sorted_parts, token_by_tpot_parts = [], [], [], [], []
    for result_index, result in enumerate(results):
        for index, _point in enumerate(result.get("points") or []):
            series = samples.get((result_index, index))
            if series is None or series.tracked == 0 or series.duration_ns <= 0:
                continue
            ttft = np.where(series.ok & (series.ttft_ns >= 0), series.ttft_ns.astype(np.float64), np.inf)
            tpot = np.where(series.ok, np.nan_to_num(series.tpot_ns, nan=0.0), np.inf)
            tokens = series.output_tokens.astype(np.uint32)
            by_ttft = np.argsort(ttft, kind="stable")
            by_tpot = np.argsort(tpot, kind="stable")
            owner.append(result_index)
            point_index.append(index)
            sizes.append(series.tracked)
            seconds.append(series.duration_ns / 1e9)
            ttft_parts.append(ttft[by_ttft])
            tpot_parts.append(tpot[by_ttft])
            token_parts.append(tokens[by_ttft])
            tpot_sorted_parts.append(tpot[by_tpot])
            token_by_tpot_parts.append(tokens[by_tpot])
    size = np.asarray(sizes, dtype=np.int64)

    def joined(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    tokens_t = joined(token_parts, np.uint32)
    tokens_s = joined(token_by_tpot_parts, np.uint32)
    return {
        "owner": np.asarray(owner, dtype=np.int64),
        "point_index": np.asarray(point_index, dtype=np.int64),
        "size": size,
        "start": np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64) if len(size) else size,
        "seconds": np.asarray(seconds, dtype=np.float64),
        "ttft_t": joined(ttft_parts, np.float64),
        "tpot_t": joined(tpot_parts, np.float64),
        "tokens_t": tokens_t,
        "cum_t": np.concatenate([[0], np.cumsum(tokens_t, dtype=np.int64)]),
        "tpot_s": joined(tpot_sorted_parts, np.float64),
        "cum_s": np.concatenate([[0], np.cumsum(tokens_s, dtype=np.int64)]),
    }


# model_id -> (the snapshot list it was built from, its index), in this process
_indexes: dict[str, tuple[list[dict], GoodputIndex]] = {}


def table_directory(model_id: str, results: list[dict], stored: dict[str, dict[str, tuple[str, str]]]):
    """Where the goodput table of this snapshot is kept (setting PORTAL_GOODPUT_TABLE_DIR): named by the model and
    a SHA-256 of what it holds (every ranked result's points and the SHA-256 of their arrays), so a publication,
    retraction or backfill names a new table and a stale one is never read."""
    import hashlib
    import json
    import re

    from django.conf import settings

    digest = hashlib.sha256(model_id.encode())
    for result in results:
        if result.get("retracted"):
            continue
        keys = stored.get(result["public_id"]) or {}
        points = [
            (p.get("point"), (keys.get(p.get("point")) or ("", ""))[1]) for p in result.get("points") or []
        ]
        digest.update(json.dumps([result["public_id"], points]).encode())
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)[:80]
    return settings.PORTAL_GOODPUT_TABLE_DIR / f"{safe}-{digest.hexdigest()[:32]}"


def _build_index(results: list[dict], stored: dict[str, dict[str, tuple[str, str]]]) -> GoodputIndex:
    samples: dict[tuple[int, int], SampleSeries] = {}
    for result_index, result in enumerate(r for r in results if not r.get("retracted")):
        keys = stored.get(result["public_id"]) or {}
        for point_index, point in enumerate(result.get("points") or []):
            where = keys.get(point.get("point"))
            series = load_samples(*where) if where else None
            if series is not None:
                samples[(result_index, point_index)] = series
    return GoodputIndex(results, samples)


def goodput_table(results: list[dict], model_id: str, directory=None) -> tuple[GoodputIndex, bool]:
    """The GoodputIndex of a snapshot from its table file (memory-mapped, shared by every process on the host),
    building and writing the file when it is not there yet. `directory`: the table's name when already known
    (goodput_index), so that nothing is read from the database when the file is there. Returns (index, whether
    it was built here)."""
    if directory is not None:
        index = GoodputIndex.load(directory, results)
        if index is not None:
            return index, False
    stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
    directory = table_directory(model_id, results, stored)
    index = GoodputIndex.load(directory, results)
    if index is not None:
        return index, False
    built = _build_index(results, stored)
    try:
        built.save(directory)
    except OSError:
        logger.warning("goodput table %s cannot be written; answering from memory", directory)
        return built, True
    return GoodputIndex.load(directory, results) or built, True


def _snapshot_fingerprint(results: list[dict]) -> str:
    """What a table's name must agree with, cheap to hash: the snapshot's ranked results and their point counts."""
    import hashlib

    listed = "|".join(
        f"{r['public_id']}:{len(r.get('points') or [])}" for r in results if not r.get("retracted")
    )
    return hashlib.sha256(listed.encode()).hexdigest()[:32]


def goodput_index(publications, model_id: str) -> GoodputIndex:
    """The GoodputIndex of a benchmark's public snapshot, opened once per snapshot object in each process (a
    publication, retraction or backfill starts a new public generation, hence a new snapshot): from the table
    file the publish worker wrote (goodput_table_build_task), or built here when it is not there yet. The
    table's name is worked out (from the points' array keys in the database) by one process per generation and
    shared through the cache, so the others only map the file."""
    from django.conf import settings

    from leaderboard.cache import public_cached
    from leaderboard.exports import snapshot_results_cached

    results = snapshot_results_cached(publications, model_id)
    entry = _indexes.get(model_id)
    if entry is None or entry[0] is not results:

        def name() -> str:
            stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
            return table_directory(model_id, results, stored).name

        table = public_cached(f"goodput:table:{model_id}:{_snapshot_fingerprint(results)}", name, memo=False)
        entry = (results, goodput_table(results, model_id, settings.PORTAL_GOODPUT_TABLE_DIR / table)[0])
        _indexes[model_id] = entry
    return entry[1]


RANKINGS_KEPT = 256  # answers kept in each process (a ranking of 1,000 rows is ~56 KB)
_rankings: OrderedDict[tuple, dict[str, np.ndarray]] = OrderedDict()


def goodput_ranking(index: GoodputIndex, model_id: str, targets: GoodputTargets) -> dict[str, np.ndarray]:
    """index.ranking(targets) through the answer cache: kept per public generation, table and targets (the
    validated numbers, so 300 and 300.0 are one answer, and the page, the API, its CSV and every page of it share
    it), in this process and in the shared cache. A publication, retraction or backfill starts a new generation:
    an answer of the old one is never read again."""
    import json

    from leaderboard.cache import public_cached, public_generation

    generation, _ = public_generation()
    if (
        generation is None or index.table is None
    ):  # the cache is unreachable, or a table only this process has
        return index.ranking(targets)
    asked = json.dumps(
        [targets.ttft_ms, targets.tpot_ms, targets.attainment, targets.power_kw_max, targets.accelerators_max]
    )
    name = f"goodput:answer:{model_id}:{index.table}:{asked}"
    key = (generation, name)
    ranking = _rankings.get(key)
    if ranking is not None:
        _rankings.move_to_end(key)
        return ranking
    ranking = public_cached(name, lambda: index.ranking(targets), generation=generation, memo=False)
    _rankings[key] = ranking
    while len(_rankings) > RANKINGS_KEPT:
        _rankings.popitem(last=False)
    return ranking


def goodput_tables_build(publications, keep: int = 2) -> list[str]:
    """Write the goodput table of every benchmark with a published result (the publish worker, after a
    publication commits), and remove all but the newest `keep` tables of each model. Returns the tables built."""
    import shutil

    from django.conf import settings

    from leaderboard.exports import snapshot_results

    built = []
    models = sorted(set(publications.values_list("submission__benchmark__model_id", flat=True)))
    for model_id in models:
        results = snapshot_results(publications, model_id)
        stored = published_point_samples([r["public_id"] for r in results if not r.get("retracted")])
        directory = table_directory(model_id, results, stored)
        if not (directory / "complete").exists():
            _build_index(results, stored).save(directory)
            built.append(directory.name)
        prefix = directory.name.rsplit("-", 1)[0] + "-"
        root = settings.PORTAL_GOODPUT_TABLE_DIR
        tables = sorted(
            (
                p
                for p in root.iterdir()
                if p.is_dir() and p.name.startswith(prefix) and len(p.name) == len(directory.name)
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in [t for t in tables if t != directory][max(0, keep - 1) :]:
            shutil.rmtree(old, ignore_errors=True)
    return built
