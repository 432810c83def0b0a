"""The SLO finder: for every published curve, the best measured point meeting a buyer's latency targets.

Plain functions over published snapshots (no Django): a result is a dict with its public id, system,
organisation, bundle SHA-256, accelerator count and the points of its published curve
(checker.recompute.curve.build_curves). Only measured points are candidates; nothing is interpolated between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.judge.verification import point_verification

# The interactivity axis of a workload: tokens/s/user for chat and reasoning, end-to-end interactivity for
# agentic workloads (the axis their leaderboard draws).
AGENTIC_WORKLOADS = frozenset({"agentic_coding"})
NO_INTERPOLATION = (
    "Only measured points are considered: a system qualifies when one of its measured load points meets every "
    "target. Nothing is interpolated between points, even where the step curve passes through the target."
)


def interactivity_metric_for(workload: str) -> str:
    return "e2e_interactivity" if workload in AGENTIC_WORKLOADS else "tps_per_user"


def number(value: Any) -> float | None:
    """A finite number, or None (booleans, strings, NaN and infinities are not figures)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def accelerator_count(description: Any) -> int | None:
    """Accelerators in a system description (system_desc.json): per node type, number_of_nodes times the
    accelerators per node (summed over its accelerator_info entries); None when it cannot be told."""
    nodes = description.get("node_types") if isinstance(description, dict) else None
    if not isinstance(nodes, list) or not nodes:
        return None
    total = 0
    for node in nodes:
        if not isinstance(node, dict):
            return None
        node_count = number(node.get("number_of_nodes"))
        info = node.get("accelerator_info")
        entries = info if isinstance(info, list) and info else [node]
        per_node = [number(e.get("accelerators_per_node")) for e in entries if isinstance(e, dict)]
        if node_count is None or not per_node or any(n is None for n in per_node):
            return None
        total += int(node_count) * int(sum(per_node))  # type: ignore[arg-type]
    return total


def node_count(description: Any) -> int | None:
    """Nodes in a system description: number_of_nodes summed over its node types; None when it cannot be told."""
    nodes = description.get("node_types") if isinstance(description, dict) else None
    if not isinstance(nodes, list) or not nodes:
        return None
    counts = [number(node.get("number_of_nodes")) if isinstance(node, dict) else None for node in nodes]
    if any(count is None for count in counts):
        return None
    return int(sum(counts))  # type: ignore[arg-type]


def point_power_kw(point: dict) -> float | None:
    """The provisioned power of a point's configuration: system_tps / (tokens/s/kW), as the checker derived
    tokens/s/kW from it; None without a power figure."""
    tps, per_kw = number(point.get("system_tps")), number(point.get("system_tps_per_kw"))
    if tps is None or per_kw is None or per_kw <= 0:
        return None
    return tps / per_kw


@dataclass(frozen=True)
class SloTargets:
    """What a buyer asks for: TTFT P90 at most, interactivity at least, and optional caps."""

    ttft_p90_ms_max: float
    interactivity_min: float
    power_kw_max: float | None = None
    accelerators_max: int | None = None
    interactivity_metric: str = "tps_per_user"


def point_meets(point: dict, targets: SloTargets, *, accelerators: int | None) -> bool:
    """Does this measured point meet every target? A cap the result cannot show it meets (no power figure,
    no accelerator count) is not met."""
    ttft = number(point.get("ttft_p90_ms"))
    interactivity = number(point.get(targets.interactivity_metric))
    if number(point.get("system_tps")) is None or ttft is None or interactivity is None:
        return False
    if ttft > targets.ttft_p90_ms_max or interactivity < targets.interactivity_min:
        return False
    if targets.power_kw_max is not None:
        power_kw = point_power_kw(point)
        if power_kw is None or power_kw > targets.power_kw_max:
            return False
    if targets.accelerators_max is not None and (
        accelerators is None or accelerators > targets.accelerators_max
    ):
        return False
    return True


def best_point(points: list[dict], targets: SloTargets, *, accelerators: int | None) -> dict | None:
    """The measured point meeting every target with the highest system_tps (ties: lower TTFT P90, then the
    lower concurrency)."""
    meeting = [p for p in points if point_meets(p, targets, accelerators=accelerators)]
    if not meeting:
        return None
    return max(
        meeting,
        key=lambda p: (p["system_tps"], -p["ttft_p90_ms"], -(number(p.get("concurrency")) or 0.0)),
    )


# What a row says of the result it comes from (leaderboard.board.exports.standing).
STANDING = ("ruleset", "preview", "standing", "revision", "evidence_pack_url")
# What a row cites of its point's own evidence (leaderboard.board.exports.point_citation): the revision and version that
# measured it, the archive holding its raw log and that raw log.
CITED = (
    "measured_in_revision",
    "bundle_sha256",
    "archive",
    "archive_sha256",
    "archive_url",
    "raw_log_path",
    "raw_log_sha256",
)


def cited(point: dict) -> dict:
    evidence = point.get("evidence") or {}
    return {key: evidence.get(key) for key in CITED}


def _row(result: dict, point: dict) -> dict:
    power_kw = point_power_kw(point)
    accelerators, nodes = number(result.get("accelerators")), number(result.get("nodes"))
    return {
        "public_id": result["public_id"],
        "system": result.get("system"),
        "organisation": result.get("organisation"),
        "accelerators": result.get("accelerators"),
        "accelerator_label": result.get("accelerator_label") or "",
        "bundle_sha256": result.get("bundle_sha256"),
        "point": point.get("point"),
        "basis": point.get("basis"),
        "verification": result.get("verification"),
        "point_verification": point_verification(point),
        "concurrency": point.get("concurrency"),
        "system_tps": point["system_tps"],
        "tps_per_user": number(point.get("tps_per_user")),
        "e2e_interactivity": number(point.get("e2e_interactivity")),
        "ttft_p90_ms": point["ttft_p90_ms"],
        "system_tps_per_kw": number(point.get("system_tps_per_kw")),
        "power_kw": round(power_kw, 3) if power_kw is not None else None,
        # normalised: 8 accelerators are not compared raw against 4
        "system_tps_per_accelerator": point["system_tps"] / accelerators if accelerators else None,
        "system_tps_per_node": point["system_tps"] / nodes if nodes else None,
        **{key: result.get(key) for key in STANDING},
        **cited(point),
    }


def _ranked(rows: list[dict]) -> list[dict]:
    rows.sort(key=lambda row: (-row["system_tps"], row["ttft_p90_ms"], row["public_id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def slo_rank(results: list[dict], targets: SloTargets) -> list[dict]:
    """One row per result with a point meeting every target, ranked by that point's system_tps (highest
    first). Retracted results have left the rankings and are skipped.

    This is the definition; SloIndex gives the same rows for many queries over one set of results."""
    rows = []
    for result in results:
        if result.get("retracted"):
            continue
        accelerators = result.get("accelerators")
        point = best_point(result.get("points") or [], targets, accelerators=accelerators)
        if point is not None:
            rows.append(_row(result, point))
    return _ranked(rows)


def _column(points: list[dict], name: str) -> np.ndarray:
    """A metric of every point as float64, NaN where the point has no finite figure (NaN fails every
    comparison, so such a point meets no target, as point_meets says)."""
    values = (number(point.get(name)) for point in points)
    return np.fromiter((math.nan if v is None else v for v in values), dtype=np.float64, count=len(points))


class SloIndex:
    """slo_rank for many targets over the same published results: the points of every non-retracted result
    in columns, sorted once by result and then by best_point's preference (system_tps highest, TTFT P90
    lowest, concurrency lowest, first listed). A query is then one vectorised mask and one pass that keeps the
    first point of each result still in it: no per-point Python work, whatever the number of results.

    It answers exactly what slo_rank answers (tests/leaderboard/test_slo.py compares them on generated
    results); the rows are built from the same point dicts by the same code."""

    def __init__(self, results: list[dict]) -> None:
        self.results = [result for result in results if not result.get("retracted")]
        owners: list[int] = []
        self.points: list[dict] = []
        for index, result in enumerate(self.results):
            for point in result.get("points") or []:
                owners.append(index)
                self.points.append(point)
        owner = np.asarray(owners, dtype=np.int64)
        tps = _column(self.points, "system_tps")
        ttft = _column(self.points, "ttft_p90_ms")
        per_kw = _column(self.points, "system_tps_per_kw")
        with np.errstate(divide="ignore", invalid="ignore"):
            power_kw = np.where(per_kw > 0, tps / per_kw, math.nan)
        accelerators = np.fromiter(
            (math.nan if (n := number(self.results[i].get("accelerators"))) is None else n for i in owners),
            dtype=np.float64,
            count=len(owners),
        )
        concurrency = np.nan_to_num(_column(self.points, "concurrency"), nan=0.0)
        position = np.arange(len(owners))
        # np.lexsort: the last key is the primary one.
        order = np.lexsort((position, concurrency, ttft, -tps, owner))
        self._order = order
        self._owner = owner[order]
        self._tps = tps[order]
        self._ttft = ttft[order]
        self._power_kw = power_kw[order]
        self._accelerators = accelerators[order]
        # the public ids' order, as strings sort (the ranking's last tie-breaker)
        id_order = sorted(range(len(self.results)), key=lambda i: self.results[i]["public_id"])
        self._id_rank = np.empty(len(self.results), dtype=np.int64)
        self._id_rank[id_order] = np.arange(len(self.results))
        # a row per point, made the first time a query ranks the point (a copy with its rank is returned)
        self._rows: dict[int, dict] = {}
        self._interactivity = {
            metric: _column(self.points, metric)[order] for metric in ("tps_per_user", "e2e_interactivity")
        }

    def rank(self, targets: SloTargets) -> list[dict]:
        return [
            {**self.row(position), "rank": rank}
            for rank, position in enumerate(self.ranking(targets), start=1)
        ]

    def row(self, position: int) -> dict:
        """The row of the point at a sorted position (ranking's values), made once; callers copy it."""
        row = self._rows.get(position)
        if row is None:
            row = self._rows[position] = _row(
                self.results[int(self._owner[position])], self.points[int(self._order[position])]
            )
        return row

    def result_of(self, position: int) -> dict:
        return self.results[int(self._owner[position])]

    def result_by_id(self, public_id: str) -> dict | None:
        """A result of the index by its public id (the mapping made on first use)."""
        by_id = self.__dict__.get("_by_id")
        if by_id is None:
            by_id = self._by_id = {result["public_id"]: result for result in self.results}
        return by_id.get(public_id)

    def results_where(self, positions: list[int], name: str, value: Any) -> np.ndarray:
        """For sorted positions (ranking's values), whether each one's result has `name` equal to `value`, as a
        boolean array (the per-result flags made once per name and value)."""
        flags = self.__dict__.setdefault("_flags", {})
        key = (name, value)
        if key not in flags:
            flags[key] = np.fromiter(
                (result.get(name) == value for result in self.results), dtype=bool, count=len(self.results)
            )
        return flags[key][self._owner[np.asarray(positions, dtype=np.int64)]]

    def ranking(self, targets: SloTargets) -> list[int]:
        """The sorted positions of each qualifying result's best point, in rank order (rank's rows, unbuilt)."""
        interactivity = self._interactivity.get(targets.interactivity_metric)
        if interactivity is None:
            interactivity = _column(self.points, targets.interactivity_metric)[self._order]
        meets = (
            np.isfinite(self._tps)
            & (self._ttft <= targets.ttft_p90_ms_max)
            & (interactivity >= targets.interactivity_min)
        )
        if targets.power_kw_max is not None:
            meets &= self._power_kw <= targets.power_kw_max
        if targets.accelerators_max is not None:
            meets &= self._accelerators <= targets.accelerators_max
        kept = np.flatnonzero(meets)
        owners = self._owner[kept]
        first = np.ones(len(kept), dtype=bool)
        first[1:] = owners[1:] != owners[:-1]
        best = kept[first]  # per qualifying result (in result order), its best point's sorted position
        # _ranked's order (system_tps highest, TTFT P90 lowest, public id), stable like list.sort
        return best[
            np.lexsort((self._id_rank[self._owner[best]], self._ttft[best], -self._tps[best]))
        ].tolist()
