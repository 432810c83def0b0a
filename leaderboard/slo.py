"""The SLO finder: for every published curve, the best measured point meeting a buyer's latency targets.

Plain functions over published snapshots (no Django): a result is a dict with its public id, system,
organisation, bundle SHA-256, accelerator count and the points of its published curve
(checker.curve.build_curves). Only measured points are candidates; nothing is interpolated between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

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


def slo_rank(results: list[dict], targets: SloTargets) -> list[dict]:
    """One row per result with a point meeting every target, ranked by that point's system_tps (highest
    first). Retracted results have left the rankings and are skipped."""
    rows = []
    for result in results:
        if result.get("retracted"):
            continue
        accelerators = result.get("accelerators")
        point = best_point(result.get("points") or [], targets, accelerators=accelerators)
        if point is None:
            continue
        power_kw = point_power_kw(point)
        rows.append(
            {
                "public_id": result["public_id"],
                "system": result.get("system"),
                "organisation": result.get("organisation"),
                "accelerators": accelerators,
                "bundle_sha256": result.get("bundle_sha256"),
                "point": point.get("point"),
                "basis": point.get("basis"),
                "concurrency": point.get("concurrency"),
                "system_tps": point["system_tps"],
                "tps_per_user": number(point.get("tps_per_user")),
                "e2e_interactivity": number(point.get("e2e_interactivity")),
                "ttft_p90_ms": point["ttft_p90_ms"],
                "system_tps_per_kw": number(point.get("system_tps_per_kw")),
                "power_kw": round(power_kw, 3) if power_kw is not None else None,
            }
        )
    rows.sort(key=lambda row: (-row["system_tps"], row["ttft_p90_ms"], row["public_id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows
