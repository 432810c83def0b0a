"""The procurement report: per model a buyer lists, the systems whose verified points meet the tender's
requirements (TTFT P90, TPOT P90 or interactivity, throughput for the delivery phase and for a promised
expansion).

Plain functions over published snapshots (no Django), like leaderboard.slo. A verified point is one whose
metrics were recomputed from its raw log (basis "recomputed"); every row carries the result's public id and
the SHA-256 of the bundle its numbers come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checker.verification import FULLY_RECOMPUTED, POINT_RECOMPUTED, point_verification
from leaderboard.slo import SloTargets, best_point, interactivity_metric_for, number, point_power_kw

MAX_MODELS = 6
VERIFIED_BASIS = POINT_RECOMPUTED  # only points recomputed from their raw log (checker.verification)


@dataclass(frozen=True)
class ModelRequirement:
    """One model of the tender and its requirements (each optional but the model)."""

    model: str
    ttft_p90_ms_max: float | None = None
    tpot_ms_max: float | None = None
    interactivity_min: float | None = None
    delivery_system_tps_min: float | None = None
    expansion_system_tps_min: float | None = None

    def interactivity_floor(self) -> float:
        """TPOT P90 <= t ms is interactivity >= 1000 / t tokens/s/user (the checker's tps_per_user is derived
        from the TPOT P90 the same way); the stricter of both when both are given."""
        floors = [0.0]
        if self.tpot_ms_max is not None and self.tpot_ms_max > 0:
            floors.append(1000.0 / self.tpot_ms_max)
        if self.interactivity_min is not None:
            floors.append(self.interactivity_min)
        return max(floors)


def requirement_rows(
    requirement: ModelRequirement, results: list[dict], *, interactivity_metric: str
) -> list[dict]:
    """The systems meeting one model's requirements: per published, non-retracted result of the model, its
    best verified point meeting the latency targets, kept when it also reaches the delivery throughput;
    whether it reaches the expansion throughput too is reported per row. Highest system_tps first."""
    targets = SloTargets(
        ttft_p90_ms_max=requirement.ttft_p90_ms_max
        if requirement.ttft_p90_ms_max is not None
        else float("inf"),
        interactivity_min=requirement.interactivity_floor(),
        interactivity_metric=interactivity_metric,
    )
    rows = []
    for result in results:
        if result.get("retracted"):
            continue
        verified = [p for p in result.get("points") or [] if point_verification(p) == POINT_RECOMPUTED]
        point = best_point(verified, targets, accelerators=result.get("accelerators"))
        if point is None:
            continue
        tps = point["system_tps"]
        if requirement.delivery_system_tps_min is not None and tps < requirement.delivery_system_tps_min:
            continue
        interactivity = number(point.get(interactivity_metric))
        power_kw = point_power_kw(point)
        rows.append(
            {
                "model": requirement.model,
                "public_id": result["public_id"],
                "result_url": f"/results/{result['public_id']}/",
                "bundle_sha256": result.get("bundle_sha256"),
                "system": result.get("system"),
                "organisation": result.get("organisation"),
                "accelerators": result.get("accelerators"),
                "verification": result.get("verification"),
                "point": point.get("point"),
                "concurrency": point.get("concurrency"),
                "ttft_p90_ms": point["ttft_p90_ms"],
                "interactivity": interactivity,
                "tpot_p90_ms": round(1000.0 / interactivity, 3) if interactivity else None,
                "system_tps": tps,
                "system_tps_per_kw": number(point.get("system_tps_per_kw")),
                "power_kw": round(power_kw, 3) if power_kw is not None else None,
                "meets_delivery": requirement.delivery_system_tps_min is None
                or tps >= requirement.delivery_system_tps_min,
                "meets_expansion": None
                if requirement.expansion_system_tps_min is None
                else tps >= requirement.expansion_system_tps_min,
            }
        )
    rows.sort(key=lambda row: (-row["system_tps"], row["ttft_p90_ms"], row["public_id"]))
    return rows


def procurement_report(
    requirements: list[ModelRequirement], results_by_model: dict[str, list[dict]], workloads: dict[str, str]
) -> list[dict]:
    """One section per requirement, in the buyer's order: the model, its requirements and the rows meeting them.
    `workloads` maps a model to its workload (agentic ones are judged on end-to-end interactivity)."""
    report = []
    for requirement in requirements:
        metric = interactivity_metric_for(workloads.get(requirement.model, ""))
        report.append(
            {
                "model": requirement.model,
                "known_model": requirement.model in workloads,
                "interactivity_metric": metric,
                "requirements": {
                    "ttft_p90_ms_max": requirement.ttft_p90_ms_max,
                    "tpot_ms_max": requirement.tpot_ms_max,
                    "interactivity_min": requirement.interactivity_min,
                    "delivery_system_tps_min": requirement.delivery_system_tps_min,
                    "expansion_system_tps_min": requirement.expansion_system_tps_min,
                },
                "systems": requirement_rows(
                    requirement, results_by_model.get(requirement.model, []), interactivity_metric=metric
                ),
                # Results whose claimed points (raw log missing, waived) the report does not judge: listed with
                # their level, so a buyer sees what was left out and why.
                "not_fully_recomputed": [
                    {
                        "public_id": result["public_id"],
                        "result_url": f"/results/{result['public_id']}/",
                        "system": result.get("system"),
                        "organisation": result.get("organisation"),
                        "verification": result.get("verification"),
                    }
                    for result in results_by_model.get(requirement.model, [])
                    if not result.get("retracted") and result.get("verification") != FULLY_RECOMPUTED
                ],
            }
        )
    return report


_NUMERIC_FIELDS = (
    "ttft_p90_ms_max",
    "tpot_ms_max",
    "interactivity_min",
    "delivery_system_tps_min",
    "expansion_system_tps_min",
)


def requirements_from_query(query) -> list[ModelRequirement]:
    """The buyer's list from numbered query parameters: model_1, ttft_p90_ms_max_1, tpot_ms_max_1,
    interactivity_min_1, delivery_system_tps_min_1, expansion_system_tps_min_1, then _2 ... up to MAX_MODELS.
    Rows without a model are skipped; raises ValueError naming the parameter that is not a positive number."""
    requirements = []
    for index in range(1, MAX_MODELS + 1):
        model = (query.get(f"model_{index}") or "").strip()
        if not model:
            continue
        values: dict[str, float | None] = {}
        for name in _NUMERIC_FIELDS:
            raw = (query.get(f"{name}_{index}") or "").strip()
            if not raw:
                values[name] = None
                continue
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{name}_{index} must be a number, not {raw!r}.") from None
            if not math.isfinite(value) or value < 0 or (value == 0 and name != "interactivity_min"):
                raise ValueError(f"{name}_{index} must be a positive number.")
            values[name] = value
        requirements.append(ModelRequirement(model=model, **values))
    if not requirements:
        raise ValueError("List at least one model (model_1=<model id>).")
    return requirements
