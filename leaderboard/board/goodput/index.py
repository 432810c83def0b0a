"""GoodputIndex: the per-sample arrays of every ranked point of one benchmark in flat arrays, and the ranking of a
per-request SLO query over them; GoodputRows: the rows of a ranking, built when read.

A query first drops the points that cannot reach the goal (the k-th smallest TTFT or TPOT exceeds its target, k the
fewest good requests meeting the goal: exact, not an estimate), then evaluates exactly, per result, its remaining
points from the highest possible goodput down, stopping when no remaining point can beat the best one found.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cached_property

import numpy as np

from checker.recompute.goodput import SampleSeries
from leaderboard.board.cliffs import cliff_side, curve_cliffs
from leaderboard.board.goodput.targets import GoodputTargets, Prices, costs, divided, normalised

logger = logging.getLogger(__name__)

GOALS_KEPT = 8  # attainment goals whose k-th values an index keeps (GoodputIndex._goal)
# the goals whose k-th values are written with a table (the form's default and the goals buyers ask): a web process
# maps them instead of reading one scattered value per point of the table on its first ask of each. In percent, as
# the finder asks them: its goal is pct / 100.0 (and 99.9 / 100 is not 0.999)
TABLE_GOALS_PCT = (90.0, 95.0, 99.0, 99.9)
_NO_LIMIT = float(np.finfo(np.float64).max)  # finite, so a sample at +inf (cannot be good) never meets it

# the arrays a table file holds, one .npy each: per point (P) and per sample (N) in two orders
_POINT_ARRAYS = ("owner", "point_index", "size", "start", "seconds")
_SAMPLE_ARRAYS = ("ttft_t", "tpot_t", "tokens_t", "cum_t", "tpot_s", "cum_s")
# and what is worked out from them once (GoodputIndex._edges, the k-th values of TABLE_GOALS_PCT), per point, written
# after them by the same writer so that no web process works them out again
_EDGE_ARRAYS = (
    "finite_ttft",
    "last_ttft",
    "tokens_ttft",
    "finite_tpot",
    "last_tpot",
    "tokens_tpot",
    "tail_finite",
    "tail_tokens",
    "tail_last",
)


def _count_within(values: np.ndarray, start: np.ndarray, size: np.ndarray, known: np.ndarray, limit: float):
    """Per segment [start, start + size) of `values`, each sorted ascending, whose first `known` values are known
    to be <= limit: how many values are <= limit (a binary search on every segment at once, over the rest).

    The first value above the limit lies in [base, base + left]; each step looks at base + left // 2 and keeps the
    half that holds it, the same few whole-array operations for every segment (no segment is set apart when it is
    done: one with nothing left looks at its own base again and keeps it)."""
    base = (start + known).astype(np.int64, copy=True)
    left = (size - known).astype(np.int64, copy=True)
    while len(left) and left.max() > 1:
        half = left // 2
        probe = base + half
        base = np.where(values[probe] <= limit, probe, base)
        left -= half
    last = np.flatnonzero(left == 1)  # the first value above the limit is base or base + 1
    base[last] += values[base[last]] <= limit
    return base - start


def _narrowed(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as int32 when every one fits (the same numbers), else as they are."""
    if len(values) and int(values.max()) > np.iinfo(np.int32).max:
        return values
    return values.astype(np.int32)


def _segments(start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The positions of the segments [start, start + size), one after the other."""
    size = size.astype(np.int64, copy=False)
    total = int(size.sum())
    offsets = np.cumsum(size) - size
    return np.repeat(start.astype(np.int64, copy=False) - offsets, size) + np.arange(total, dtype=np.int64)


def _segment_sums(values: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per segment of `values` (consecutive, of these sizes) the sum of its values (0 for an empty one)."""
    return _segment_reduce(np.add, values, size, np.zeros(len(size), dtype=np.int64))


def _segment_max(values: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per segment of `values` its largest value (-inf for an empty one)."""
    return _segment_reduce(np.maximum, values, size, np.full(len(size), -np.inf))


def _segment_reduce(ufunc: np.ufunc, values: np.ndarray, size: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`ufunc` reduced over each non-empty segment of `values` into `out` (whose value an empty one keeps:
    reduceat would give it the next segment's first value)."""
    nonempty = np.flatnonzero(size > 0)
    if len(nonempty):
        offsets = (np.cumsum(size) - size)[nonempty]
        out[nonempty] = ufunc.reduceat(values, offsets, dtype=out.dtype)
    return out


def _tokens_within(
    cum: np.ndarray, start: np.ndarray, within: np.ndarray, finite: np.ndarray, finite_tokens: np.ndarray
) -> np.ndarray:
    """The tokens of the first `within` values of each segment from the running sums `cum`: those of all the
    finite ones (known) when `within` is all of them, else read."""
    tokens = finite_tokens.copy()
    read = np.flatnonzero(within != finite)
    if len(read):
        tokens[read] = cum[start[read] + within[read]] - cum[start[read]]
    return tokens


def _count_within_finite(
    values: np.ndarray,
    start: np.ndarray,
    known: np.ndarray,
    limit: float,
    finite: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """_count_within for segments whose first `finite` values are finite, the largest of them `last`, and the rest
    +inf (never within a limit): all the finite ones when `last` is within, else a search among them only."""
    count = finite.copy()
    search = np.flatnonzero(last > limit)
    if len(search):
        count[search] = _count_within(values, start[search], finite[search], known[search], limit)
    return count


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
# and the names a row shows them under (GoodputIndex.rows), per judgement
_ROW_FIGURES = tuple(
    (f"{p}good", f"{p}tokens", f"{p}good_requests", f"{p}attainment", f"{p}goodput_rps", f"{p}goodput_tps")
    for p in ("", "ttft_", "tpot_")
)


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
        """results: leaderboard.board.exports.snapshot_results rows; samples: (result index, point index) -> arrays.
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
        self._parts: dict[int, tuple[dict, dict]] = {}  # _static_parts
        self._extras: dict[tuple[str, int], dict] = {}  # _static_extra
        # per attainment goal its k-th values (_goal), shared by a threaded server's requests
        self._goals: OrderedDict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
        self._goals_lock = threading.Lock()
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
        self._seconds_positive = np.maximum(self._seconds, 1e-300)
        self._total_tps = self._total_tps / self._seconds_positive
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
        with _table_scratch(directory) as scratch:
            for name in _POINT_ARRAYS + _SAMPLE_ARRAYS:
                np.save(scratch / f"{name}.npy", np.ascontiguousarray(self.arrays[name]))
            self._save_derived(scratch)

    def _save_derived(self, directory) -> None:
        """Write what a query works out once per index (its edges and the k-th values of TABLE_GOALS_PCT) beside the
        table's arrays, for `load` to map."""
        for name, values in self._edges.items():
            np.save(directory / f"edge_{name}.npy", values)
        for pct in TABLE_GOALS_PCT:
            need, kth_ttft, kth_tpot = self._kth(pct / 100.0)
            np.save(directory / f"goal_{pct!r}.npy", np.stack([need.astype(np.float64), kth_ttft, kth_tpot]))

    def _load_derived(self, directory) -> None:
        """Take the edges and goals `_save_derived` wrote (memory-mapped), where they are there and of this
        table's points; anything missing (a table written before they were) is worked out when first asked."""
        points = len(self._size)
        try:
            edges = {name: np.load(directory / f"edge_{name}.npy", mmap_mode="r") for name in _EDGE_ARRAYS}
        except (OSError, ValueError):
            edges = None
        if edges is not None and all(values.shape == (points,) for values in edges.values()):
            self.__dict__["_edges"] = {
                name: np.asarray(values).view(np.ndarray) for name, values in edges.items()
            }
        for pct in TABLE_GOALS_PCT:
            try:
                stored = np.load(directory / f"goal_{pct!r}.npy", mmap_mode="r")
            except (OSError, ValueError):
                continue
            if stored.shape != (3, points):
                continue
            need = np.asarray(stored[0]).astype(np.int64)
            self._goals[pct / 100.0] = (
                need,
                np.asarray(stored[1])[self._visit],
                np.asarray(stored[2])[self._visit],
            )

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
        index._load_derived(source)
        return index

    @cached_property
    def _edges(self) -> dict[str, np.ndarray]:
        """What answers most points of most targets without reading their samples, worked out once per index.
        Per point, in its TTFT order and in its TPOT order: how many values are finite (+inf: the sample cannot be
        good), the largest finite one (-inf when none is) and their tokens: a target at or above it counts them all
        and their tokens without a search. And of the samples after its finite TTFTs (those that cannot be good:
        failed, or no first token), how many have a finite TPOT, the largest, and their tokens (_evaluate)."""
        edges = {}
        zeros = np.zeros_like(self._size)
        for name, values, cum in (("ttft", self._ttft_t, self._cum_t), ("tpot", self._tpot_s, self._cum_s)):
            finite = _count_within(values, self._start, self._size, zeros, _NO_LIMIT)
            last = np.full(len(self._size), -np.inf)
            some = np.flatnonzero(finite > 0)
            last[some] = values[self._start[some] + finite[some] - 1]
            edges[f"finite_{name}"], edges[f"last_{name}"] = finite, last
            edges[f"tokens_{name}"] = cum[self._start + finite] - cum[self._start]
        tail = self._size - edges["finite_ttft"]
        index = _segments(self._start + edges["finite_ttft"], tail)
        tpot = self._tpot_t[index]
        finite = np.isfinite(tpot)
        edges["tail_finite"] = _segment_sums(finite, tail)
        edges["tail_tokens"] = _segment_sums(np.where(finite, self._tokens_t[index], 0), tail)
        edges["tail_last"] = _segment_max(np.where(finite, tpot, -np.inf), tail)
        return edges

    def _bound(
        self, bounds: dict, points: np.ndarray, known: np.ndarray, ttft_ns: float, tpot_ns: float
    ) -> None:
        """Into `bounds` (arrays over every point), for `points` (positions, each known to have at least `known`
        samples within both targets): A = #TTFT <= X and its tokens, B = #TPOT <= Y and its tokens (exact: binary
        searches)."""
        start = self._start[points]
        edges = self._edges
        within_ttft = _count_within_finite(
            self._ttft_t, start, known, ttft_ns, edges["finite_ttft"][points], edges["last_ttft"][points]
        )
        within_tpot = _count_within_finite(
            self._tpot_s, start, known, tpot_ns, edges["finite_tpot"][points], edges["last_tpot"][points]
        )
        bounds["ttft_good"][points] = within_ttft
        bounds["ttft_tokens"][points] = _tokens_within(
            self._cum_t, start, within_ttft, edges["finite_ttft"][points], edges["tokens_ttft"][points]
        )
        bounds["tpot_good"][points] = within_tpot
        bounds["tpot_tokens"][points] = _tokens_within(
            self._cum_s, start, within_tpot, edges["finite_tpot"][points], edges["tokens_tpot"][points]
        )

    def _evaluate(
        self, points: np.ndarray, tpot_ns: float, bounds: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Exact good counts and good tokens of `points` (positions in self.points): those within the TPOT target
        less those of them beyond the TTFT target. Those beyond are known without reading a sample when every one
        of them with a TPOT is within the TPOT target: when the target is at or above the point's largest finite
        TPOT, or when every finite TTFT is within its target and the samples that cannot be good have no TPOT
        above it. They are then the finite TTFTs beyond the target (all with a TPOT) and the samples that cannot be
        good with one, their tokens from the running sums (_edges, _bound). Otherwise the samples are read, on the
        shorter side of the point's TTFT order."""
        within = bounds["ttft_good"][points]
        sizes = self._size[points]
        edges = self._edges
        finite = edges["finite_ttft"][points]
        known = (edges["last_tpot"][points] <= tpot_ns) | (
            (within == finite) & (edges["tail_last"][points] <= tpot_ns)
        )
        direct = ~known & (within <= sizes - within)
        count = np.where(known, finite - within + edges["tail_finite"][points], 0)
        token_sum = np.where(
            known,
            edges["tokens_ttft"][points] - bounds["ttft_tokens"][points] + edges["tail_tokens"][points],
            0,
        )
        read = np.flatnonzero(~known)
        if len(read):
            seg_start = self._start[points[read]] + np.where(direct[read], 0, within[read])
            seg_size = np.where(direct[read], within[read], sizes[read] - within[read])
            index = _segments(seg_start, seg_size)
            met = self._tpot_t[index] <= tpot_ns
            count[read] = _segment_sums(met, seg_size)
            token_sum[read] = _segment_sums(np.where(met, self._tokens_t[index], 0), seg_size)
        return {
            "good": np.where(direct, count, bounds["tpot_good"][points] - count),
            "tokens": np.where(direct, token_sum, bounds["tpot_tokens"][points] - token_sum),
        }

    def _goal(self, goal: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per point, for an attainment goal: k, the fewest good requests meeting it (in the points' order), and
        the k-th smallest TTFT and TPOT (in the order a query visits the points; -inf when k is 0, +inf when the
        point has fewer than k samples: no target is met by +inf). A point can reach the goal only when both are
        within the targets. Read from the table once per goal and kept (GOALS_KEPT goals, ~24 bytes a point
        each): buyers ask a handful of goals, and the k-th values are one scattered read per point of a table of
        gigabytes."""
        with self._goals_lock:  # a threaded server's requests share the index
            entry = self._goals.get(goal)
            if entry is not None:
                self._goals.move_to_end(goal)
                return entry
        need, kth_ttft, kth_tpot = self._kth(goal)
        # in the order a query visits the points (ranking), so that its candidates are one mask of these
        entry = (need, kth_ttft[self._visit], kth_tpot[self._visit])
        with self._goals_lock:
            self._goals[goal] = entry
            while len(self._goals) > GOALS_KEPT:
                self._goals.popitem(last=False)
        return entry

    def _kth(self, goal: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """_goal's values in the points' own order, read from the table."""
        need = _fewest_good(self._size, goal)
        kth_ttft = np.where(need > 0, np.inf, -np.inf)
        kth_tpot = kth_ttft.copy()
        probe = np.flatnonzero((need > 0) & (need <= self._size))
        at = self._start[probe] + need[probe] - 1
        kth_ttft[probe] = self._ttft_t[at]
        kth_tpot[probe] = self._tpot_s[at]
        return need, kth_ttft, kth_tpot

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
        # are within the targets (k = the fewest good requests meeting the goal; read once per goal: _goal)
        need, kth_ttft, kth_tpot = self._goal(goal)
        possible = (kth_ttft <= ttft_ns) & (kth_tpot <= tpot_ns)  # in visit order
        if targets.power_kw_max is not None:
            possible &= self._power_kw[self._visit] <= targets.power_kw_max
        if targets.accelerators_max is not None:
            possible &= self._accelerators[self._visit] <= targets.accelerators_max
        # per result, its candidates from the most tokens per second down (all of a point's tokens: no goodput
        # can be more), in the order worked out once for the index
        order = self._visit[possible]
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
        # read only where _bound wrote them (the points it was given)
        bounds = {name: np.empty(len(self._owner), dtype=np.int64) for name in _COUNTS[2:]}
        seconds = self._seconds_positive
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
        ranked = np.argsort(-tps)
        if np.any(tps[ranked][1:] == tps[ranked][:-1]):  # a tie: request goodput, then public id decide
            ranked = np.lexsort((self._id_rank[chosen], -rps, -tps))
        chosen = chosen[ranked]
        answer = {
            "point": chosen,
            "good": best_good[found][ranked],
            "tokens": best_tokens[found][ranked],
            **{name: bounds[name][chosen] for name in _COUNTS[2:]},
        }
        # the answer cache stores it: half the bytes to write where every figure fits in 32 bits
        return {name: _narrowed(values) for name, values in answer.items()}

    def rows(
        self,
        ranking: dict[str, np.ndarray],
        targets: GoodputTargets,
        prices: Prices | None = None,
        *,
        ranks: np.ndarray | None = None,
        static: tuple[str, Callable[[dict], dict]] | None = None,
    ) -> list[dict]:
        """The answer rows of `ranking` (or of a slice of it, with the ranks of its entries in the whole): per row
        the point's static row, the targets, the counts as good requests, attainment and goodput per request and
        per token for the three judgements (_ROW_FIGURES), targets.normalised's figures and the rank. The
        per-target figures are divided for the whole slice at once; what does not depend on the targets is made
        once per point (_static_parts). `static` = (name, add): what a caller adds to a row whatever the targets
        (`add(row)` returns the keys to add: its URL, the point's energy), made once per point under that name and
        added after the rank."""
        points = ranking["point"].tolist()
        ranks = (np.arange(1, len(points) + 1) if ranks is None else ranks).tolist()
        at = ranking["point"].astype(np.int64, copy=False)
        tracked, seconds = self._size[at], self._seconds[at]
        names, columns = [], []
        for good_name, tokens_name, good_key, attainment_key, rps_key, tps_key in _ROW_FIGURES:
            good = ranking[good_name].astype(np.int64, copy=False)
            names += [good_key, attainment_key, rps_key, tps_key]
            # the same IEEE divisions as int / int and int / float (every count below 2**53)
            columns += [good.tolist(), (good / tracked).tolist(), (good / seconds).tolist()]
            columns.append((ranking[tokens_name].astype(np.int64, copy=False) / seconds).tolist())
        tracked = tracked.tolist()
        figures = list(zip(*columns, strict=True)) if points else []
        goodput_tps = columns[names.index("goodput_tps")] if points else []
        priced = prices is not None and prices.given
        asked = {
            "ttft_ms": targets.ttft_ms,
            "tpot_ms": targets.tpot_ms,
            "attainment_goal": targets.attainment,
        }
        rows = []
        for offset, position in enumerate(points):
            head, per = self._static_parts(position)
            row = {**head, **asked, "tracked_requests": tracked[offset]}
            row.update(zip(names, figures[offset], strict=True))
            accelerators, nodes = per["accelerators"], per["nodes"]
            # targets.normalised, in its order (system_tps_per_kw keeps its place among the point's figures)
            row.update(
                divided(
                    "goodput_tps",
                    goodput_tps[offset],
                    accelerators=accelerators,
                    nodes=nodes,
                    power=head["power_kw"],
                )
            )
            row.update(per["system"])
            if priced:
                row.update(costs(row, accelerators=accelerators, nodes=nodes, prices=prices))
            row["rank"] = ranks[offset]
            if static is not None:
                row.update(self._static_extra(position, static))
            rows.append(row)
        return rows

    def _static_parts(self, position: int) -> tuple[dict, dict]:
        """A point's static row with targets.normalised's own system_tps_per_kw in it, and what the rest of
        normalised needs of the point (its divisors, and its system_tps figures per accelerator and per node):
        made once per point."""
        parts = self._parts.get(position)
        if parts is None:
            head = self._static_row(position)
            result = self.results[int(self._owner[position])]
            accelerators, nodes = result.get("accelerators"), result.get("nodes")
            figures = normalised(head, accelerators=accelerators, nodes=nodes, prices=None)
            head["system_tps_per_kw"] = figures["system_tps_per_kw"]
            system = ("system_tps_per_accelerator", "system_tps_per_node", "nodes")
            per = {"accelerators": accelerators, "nodes": nodes, "system": {k: figures[k] for k in system}}
            parts = self._parts[position] = (head, per)
        return parts

    def _static_extra(self, position: int, static: tuple[str, Callable[[dict], dict]]) -> dict:
        name, add = static
        key = (name, position)
        extra = self._extras.get(key)
        if extra is None:
            extra = self._extras[key] = add(self._static_parts(position)[0])
        return extra

    def rank(self, targets: GoodputTargets, prices: Prices | None = None) -> list[dict]:
        """One row per result with a point meeting the goal, ranked by that point's token goodput (highest
        first; ties: request goodput, then public id)."""
        return self.rows(self.ranking(targets), targets, prices)

    def _static_row(self, position: int) -> dict:
        """What a point's row shows whatever the targets (made once per point: _static_parts keeps it)."""
        point = self.points[position]
        result = self.results[int(self._owner[position])]
        power_kw = float(self._power_kw[position]) if math.isfinite(self._power_kw[position]) else None
        return {
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

    def _cliffs(self, result_index: int) -> list[dict]:
        """A result's performance cliffs, worked out once (every row of the result shows its first one)."""
        cliffs = self._result_cliffs.get(result_index)
        if cliffs is None:
            cliffs = self._result_cliffs[result_index] = curve_cliffs(
                self.results[result_index].get("points") or []
            )
        return cliffs


class GoodputRows:
    """The rows of a ranking as a read-only sequence, each row built when it is read: a page shows 25 of a
    thousand, the API a page of them. `static` = (name, add): what the caller adds to every row whatever the
    targets (its URL, the point's energy), made once per point (GoodputIndex.rows)."""

    def __init__(self, index: GoodputIndex, ranking: dict[str, np.ndarray], targets, prices, static=None):
        self.index, self.ranking, self.targets, self.prices, self.static = (
            index,
            ranking,
            targets,
            prices,
            static,
        )

    def __len__(self) -> int:
        return len(self.ranking["point"])

    def __bool__(self) -> bool:
        return len(self) > 0

    def _built(self, which) -> list[dict]:
        return self.index.rows(
            {name: values[which] for name, values in self.ranking.items()},
            self.targets,
            self.prices,
            ranks=np.arange(1, len(self) + 1)[which],
            static=self.static,
        )

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


def _point_part(series: SampleSeries | None):
    """One point's share of the table: its samples' TTFT sorted (+inf where a sample cannot be good: failed, or no
    first token) with their TPOT (+inf when failed; 0 with nothing after the first chunk) and tokens, its TPOTs
    sorted with their tokens; None for a point with nothing to rank."""
    if series is None or series.tracked == 0 or series.duration_ns <= 0:
        return None
    ttft = np.where(series.ok & (series.ttft_ns >= 0), series.ttft_ns.astype(np.float64), np.inf)
    tpot = np.where(series.ok, np.nan_to_num(series.tpot_ns, nan=0.0), np.inf)
    tokens = series.output_tokens.astype(np.uint32)
    by_ttft = np.argsort(ttft, kind="stable")
    by_tpot = np.argsort(tpot, kind="stable")
    return ttft[by_ttft], tpot[by_ttft], tokens[by_ttft], tpot[by_tpot], tokens[by_tpot]


def _build_arrays(results: list[dict], samples: dict[tuple[int, int], SampleSeries]) -> dict[str, np.ndarray]:
    """The table of GoodputIndex in memory: per point with samples (_point_part), its samples sorted by TTFT with
    their TPOT and tokens, the running sum of those tokens, its TPOTs sorted and their running sum of tokens."""
    owner, point_index, sizes, seconds = [], [], [], []
    ttft_parts, tpot_parts, token_parts, tpot_sorted_parts, token_by_tpot_parts = [], [], [], [], []
    for result_index, result in enumerate(results):
        for index, _point in enumerate(result.get("points") or []):
            series = samples.get((result_index, index))
            part = _point_part(series)
            if part is None:
                continue
            owner.append(result_index)
            point_index.append(index)
            sizes.append(series.tracked)
            seconds.append(series.duration_ns / 1e9)
            for parts, values in zip(
                (ttft_parts, tpot_parts, token_parts, tpot_sorted_parts, token_by_tpot_parts),
                part,
                strict=True,
            ):
                parts.append(values)
    size = np.asarray(sizes, dtype=np.int64)

    def joined(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    tokens_t = joined(token_parts, np.uint32)
    tokens_s = joined(token_by_tpot_parts, np.uint32)
    return {
        **_point_arrays(owner, point_index, size, seconds),
        "ttft_t": joined(ttft_parts, np.float64),
        "tpot_t": joined(tpot_parts, np.float64),
        "tokens_t": tokens_t,
        "cum_t": np.concatenate([[0], np.cumsum(tokens_t, dtype=np.int64)]),
        "tpot_s": joined(tpot_sorted_parts, np.float64),
        "cum_s": np.concatenate([[0], np.cumsum(tokens_s, dtype=np.int64)]),
    }


def _point_arrays(
    owner: list[int], point_index: list[int], size, seconds: list[float]
) -> dict[str, np.ndarray]:
    size = np.asarray(size, dtype=np.int64)
    return {
        "owner": np.asarray(owner, dtype=np.int64),
        "point_index": np.asarray(point_index, dtype=np.int64),
        "size": size,
        "start": np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64) if len(size) else size,
        "seconds": np.asarray(seconds, dtype=np.float64),
    }


# Each per-sample column of a table written as its points come (write_table): a .npy of one dimension whose header,
# of a fixed size, is written first with no length and again at the end with the length.
_SAMPLE_DTYPES = {
    "ttft_t": np.float64,
    "tpot_t": np.float64,
    "tokens_t": np.uint32,
    "cum_t": np.int64,
    "tpot_s": np.float64,
    "cum_s": np.int64,
}
_HEADER_BYTES = 192  # a multiple of 64, as numpy aligns its own; room for any length


def _npy_header(dtype, length: int) -> bytes:
    import struct

    from numpy.lib import format as npy

    text = repr({"descr": npy.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (length,)})
    prefix = npy.magic(1, 0)
    text = text.ljust(_HEADER_BYTES - len(prefix) - 2 - 1) + "\n"
    return prefix + struct.pack("<H", len(text)) + text.encode("latin1")


class _Column:
    def __init__(self, path, dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.length = 0
        self.file = open(path, "wb")  # noqa: SIM115 - closed by close(), after the last part
        self.file.write(_npy_header(self.dtype, 0))

    def write(self, values) -> None:
        data = np.ascontiguousarray(values, dtype=self.dtype)
        self.file.write(memoryview(data).cast("B"))
        self.length += len(data)

    def close(self) -> None:
        self.file.seek(0)
        self.file.write(_npy_header(self.dtype, self.length))
        self.file.close()


def write_table(directory, results: list[dict], series_of) -> None:
    """Write the table of GoodputIndex(results, ...) into `directory` point by point, as `save` writes it (the same
    files, the same values), reading each point's arrays with `series_of(result, point)` (a SampleSeries or None)
    only when its turn comes: building the table holds one point's samples in memory, never the table (at 10,000
    results of 10-20 points and 2,000 samples each the table is about 12 GB)."""
    owner, point_index, sizes, seconds = [], [], [], []
    with _table_scratch(directory) as scratch:
        columns: dict[str, _Column] = {}
        try:
            for (
                name,
                dtype,
            ) in _SAMPLE_DTYPES.items():  # inside the try: a column that cannot open closes the others
                columns[name] = _Column(scratch / f"{name}.npy", dtype)
            columns["cum_t"].write([0])
            columns["cum_s"].write([0])
            total_t = total_s = 0
            live = [r for r in results if not r.get("retracted")]
            for result_index, result in enumerate(live):
                for index, point in enumerate(result.get("points") or []):
                    series = series_of(result, point)
                    part = _point_part(series)
                    if part is None:
                        continue
                    ttft_t, tpot_t, tokens_t, tpot_s, tokens_s = part
                    columns["ttft_t"].write(ttft_t)
                    columns["tpot_t"].write(tpot_t)
                    columns["tokens_t"].write(tokens_t)
                    columns["tpot_s"].write(tpot_s)
                    running = np.cumsum(tokens_t, dtype=np.int64)
                    columns["cum_t"].write(running + total_t)
                    total_t += int(running[-1]) if len(running) else 0
                    running = np.cumsum(tokens_s, dtype=np.int64)
                    columns["cum_s"].write(running + total_s)
                    total_s += int(running[-1]) if len(running) else 0
                    owner.append(result_index)
                    point_index.append(index)
                    sizes.append(series.tracked)
                    seconds.append(series.duration_ns / 1e9)
        finally:
            for column in columns.values():
                column.close()
        for name, values in _point_arrays(owner, point_index, sizes, seconds).items():
            np.save(scratch / f"{name}.npy", values)
        arrays = {
            name: np.load(scratch / f"{name}.npy", mmap_mode="r") for name in _POINT_ARRAYS + _SAMPLE_ARRAYS
        }
        GoodputIndex(results, arrays=arrays)._save_derived(scratch)


class _table_scratch:  # noqa: N801 - used as a context manager, like open()
    """A scratch folder beside `directory` that becomes it when the block ends without an error (with a `complete`
    marker, renamed, so a reader never sees half a table), and is removed otherwise."""

    def __init__(self, directory) -> None:
        from pathlib import Path

        self.target = Path(directory)

    def __enter__(self):
        import tempfile
        from pathlib import Path

        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.", dir=self.target.parent))
        return self.scratch

    def __exit__(self, kind, error, traceback) -> None:
        import os
        import shutil

        if kind is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            return
        (self.scratch / "complete").write_text("1\n")
        try:
            os.rename(self.scratch, self.target)
        except OSError:  # another process wrote the same table first: its copy is the same
            shutil.rmtree(self.scratch, ignore_errors=True)
