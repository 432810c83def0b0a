"""The procurement report: per model a buyer lists, the requirements of a tender's two phases (delivery: the latency
and throughput needed when the system is delivered; expansion: a larger volume or a tighter latency promised for
later, as public tenders score both) and, per published system, its evidence for each phase: the measured,
verified point that meets it, with its figures.

Plain functions over published snapshots (no Django), like leaderboard.board.slo. A verified point is one whose
metrics were recomputed from its raw log (basis "recomputed"); every row carries the result's public id, links to
the result and to the point, and the SHA-256 of the bundle its numbers come from. The results given are one per
system (leaderboard.board.exports.snapshot_results), so a system counts once, as on the board and in the SLO finder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checker.judge.verification import FULLY_RECOMPUTED, POINT_RECOMPUTED, point_verification
from leaderboard.board.slo import (
    STANDING,
    SloTargets,
    best_point,
    cited,
    interactivity_metric_for,
    number,
    point_power_kw,
)
from leaderboard.board.tender import DEFAULT_PUE, TenderPrices, point_energy_and_cost

MAX_MODELS = 6
VERIFIED_BASIS = POINT_RECOMPUTED  # only points recomputed from their raw log (checker.judge.verification)
PHASES = ("delivery", "expansion")

# A phase's requirements as the form labels them; (field, label)
PHASE_FIELDS = (
    ("ttft_p90_ms_max", "TTFT P90 ≤ (ms)"),
    ("tpot_ms_max", "TPOT P90 ≤ (ms)"),
    ("interactivity_min", "Interactivity ≥ (tokens/s/user)"),
    ("system_tps_min", "Throughput ≥ (tokens/s)"),
)
PHASE_LABELS = {"delivery": "Delivery", "expansion": "Expansion"}


def parameter_name(phase: str, field: str, index: int) -> str:
    """The query parameter of a phase's field for model `index`: the delivery phase keeps the report's first names
    (ttft_p90_ms_max_1, tpot_ms_max_1, interactivity_min_1, delivery_system_tps_min_1), the expansion phase's are
    prefixed (expansion_ttft_p90_ms_max_1, ..., expansion_system_tps_min_1)."""
    if phase == "delivery":
        return f"delivery_{field}_{index}" if field == "system_tps_min" else f"{field}_{index}"
    return f"expansion_{field}_{index}"


def field_label(phase: str, field: str, index: int) -> str:
    """What the form shows for a field: "Model 1 · Delivery · TTFT P90 ≤ (ms)"."""
    return f"Model {index} · {PHASE_LABELS[phase]} · {dict(PHASE_FIELDS)[field]}"


@dataclass(frozen=True)
class PhaseRequirement:
    """What one phase of a tender asks of a model (each part optional)."""

    ttft_p90_ms_max: float | None = None
    tpot_ms_max: float | None = None
    interactivity_min: float | None = None
    system_tps_min: float | None = None

    def interactivity_floor(self) -> float:
        """TPOT P90 <= t ms is interactivity >= 1000 / t tokens/s/user (the checker's tps_per_user is derived
        from the TPOT P90 the same way); the stricter of both when both are given."""
        floors = [0.0]
        if self.tpot_ms_max is not None and self.tpot_ms_max > 0:
            floors.append(1000.0 / self.tpot_ms_max)
        if self.interactivity_min is not None:
            floors.append(self.interactivity_min)
        return max(floors)

    def as_dict(self) -> dict:
        return {
            "ttft_p90_ms_max": self.ttft_p90_ms_max,
            "tpot_ms_max": self.tpot_ms_max,
            "interactivity_min": self.interactivity_min,
            "system_tps_min": self.system_tps_min,
        }


@dataclass(frozen=True)
class ModelRequirement:
    """One model of the tender: the delivery phase's requirements and, optionally, the expansion phase's (a part
    of the expansion left out is the delivery's)."""

    model: str
    ttft_p90_ms_max: float | None = None
    tpot_ms_max: float | None = None
    interactivity_min: float | None = None
    delivery_system_tps_min: float | None = None
    expansion_system_tps_min: float | None = None
    expansion_ttft_p90_ms_max: float | None = None
    expansion_tpot_ms_max: float | None = None
    expansion_interactivity_min: float | None = None

    def delivery(self) -> PhaseRequirement:
        return PhaseRequirement(
            ttft_p90_ms_max=self.ttft_p90_ms_max,
            tpot_ms_max=self.tpot_ms_max,
            interactivity_min=self.interactivity_min,
            system_tps_min=self.delivery_system_tps_min,
        )

    def expansion(self) -> PhaseRequirement | None:
        """None when the tender names no expansion (no expansion field given)."""
        own = (
            self.expansion_ttft_p90_ms_max,
            self.expansion_tpot_ms_max,
            self.expansion_interactivity_min,
            self.expansion_system_tps_min,
        )
        if all(value is None for value in own):
            return None

        def either(later, now):
            return now if later is None else later

        return PhaseRequirement(
            ttft_p90_ms_max=either(self.expansion_ttft_p90_ms_max, self.ttft_p90_ms_max),
            tpot_ms_max=either(self.expansion_tpot_ms_max, self.tpot_ms_max),
            interactivity_min=either(self.expansion_interactivity_min, self.interactivity_min),
            system_tps_min=either(self.expansion_system_tps_min, self.delivery_system_tps_min),
        )

    def interactivity_floor(self) -> float:
        return self.delivery().interactivity_floor()


def phase_evidence(
    phase: PhaseRequirement,
    points: list[dict],
    *,
    result_url: str,
    interactivity_metric: str,
    accelerators=None,
    measured: dict[int, dict] | None = None,
    costing: Costing | None = None,
) -> dict | None:
    """A system's evidence for one phase: its verified point with the highest system_tps among those meeting the
    phase's latency (TTFT P90, interactivity), with that point's figures and whether it reaches the phase's
    throughput (`meets`). None when no verified point meets the latency. Nothing is interpolated."""
    targets = SloTargets(
        ttft_p90_ms_max=phase.ttft_p90_ms_max if phase.ttft_p90_ms_max is not None else float("inf"),
        interactivity_min=phase.interactivity_floor(),
        interactivity_metric=interactivity_metric,
    )
    point = best_point(points, targets, accelerators=accelerators)
    if point is None:
        return None
    tps = point["system_tps"]
    interactivity = number(point.get(interactivity_metric))
    power_kw = point_power_kw(point)
    costing = costing or Costing()
    energy = point_energy_and_cost(
        point,
        accelerators=accelerators,
        measured=(measured or {}).get(point.get("concurrency")),
        prices=costing.prices,
        pue=costing.pue,
    )
    return {
        "meets": phase.system_tps_min is None or tps >= phase.system_tps_min,
        "point": point.get("point"),
        "concurrency": point.get("concurrency"),
        "point_url": f"{result_url}#point-r{point.get('concurrency')}",
        "ttft_p90_ms": point["ttft_p90_ms"],
        "interactivity": interactivity,
        "tpot_p90_ms": round(1000.0 / interactivity, 3) if interactivity else None,
        "system_tps": tps,
        "system_tps_per_kw": number(point.get("system_tps_per_kw")),
        "power_kw": round(power_kw, 3) if power_kw is not None else None,
        # the tender desk's energy and cost (leaderboard.board.tender): measured power where the point has a trace
        **energy,
        **cited(point),
    }


def requirement_rows(
    requirement: ModelRequirement,
    results: list[dict],
    *,
    interactivity_metric: str,
    measured: dict[str, dict[int, dict]] | None = None,
    costing: Costing | None = None,
) -> list[dict]:
    """The systems with evidence for the delivery phase (what a tender requires), each with its evidence for the
    expansion phase beside it (`expansion`, null without one; its `meets` says whether the expansion is covered
    too). Systems meeting both phases first, then by the delivery point's system_tps. The row's top-level point
    figures are the delivery evidence's (as the report gave them before it had phases)."""
    delivery, expansion = requirement.delivery(), requirement.expansion()
    rows = []
    for result in results:
        if result.get("retracted"):
            continue
        verified = [p for p in result.get("points") or [] if point_verification(p) == POINT_RECOMPUTED]
        url = f"/results/{result['public_id']}/"
        evidence = {
            "delivery": phase_evidence(
                delivery,
                verified,
                result_url=url,
                interactivity_metric=interactivity_metric,
                accelerators=result.get("accelerators"),
                measured=(measured or {}).get(result["public_id"]),
                costing=costing,
            ),
            "expansion": None,
        }
        if evidence["delivery"] is None or not evidence["delivery"]["meets"]:
            continue
        if expansion is not None:
            evidence["expansion"] = phase_evidence(
                expansion,
                verified,
                result_url=url,
                interactivity_metric=interactivity_metric,
                accelerators=result.get("accelerators"),
                measured=(measured or {}).get(result["public_id"]),
                costing=costing,
            )
        shown = evidence["delivery"]
        rows.append(
            {
                "model": requirement.model,
                "public_id": result["public_id"],
                "result_url": url,
                "bundle_sha256": result.get("bundle_sha256"),
                "system": result.get("system"),
                "organisation": result.get("organisation"),
                "accelerators": result.get("accelerators"),
                "accelerator_label": result.get("accelerator_label") or "",
                "verification": result.get("verification"),
                **{key: result.get(key) for key in STANDING},
                **{k: shown[k] for k in shown if k not in ("meets",)},
                "meets_delivery": True,
                "meets_expansion": None
                if expansion is None
                else bool(evidence["expansion"] and evidence["expansion"]["meets"]),
                **evidence,
            }
        )
    rows.sort(
        key=lambda row: (
            row["meets_expansion"] is False,
            -row["system_tps"],
            row["ttft_p90_ms"],
            row["public_id"],
        )
    )
    return rows


def procurement_report(
    requirements: list[ModelRequirement],
    results_by_model: dict[str, list[dict]],
    workloads: dict[str, str],
    *,
    measured_by_model: dict[str, dict[str, dict[int, dict]]] | None = None,
    costing: Costing | None = None,
) -> list[dict]:
    """One section per requirement, in the buyer's order: the model, its phases' requirements and the rows meeting
    them. `workloads` maps a model to its workload (agentic ones are judged on end-to-end interactivity)."""
    report = []
    for requirement in requirements:
        metric = interactivity_metric_for(workloads.get(requirement.model, ""))
        results = [r for r in results_by_model.get(requirement.model, []) if not r.get("retracted")]
        systems = requirement_rows(
            requirement,
            results,
            interactivity_metric=metric,
            measured=(measured_by_model or {}).get(requirement.model),
            costing=costing,
        )
        expansion = requirement.expansion()
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
                "phases": {
                    "delivery": requirement.delivery().as_dict(),
                    "expansion": expansion.as_dict() if expansion is not None else None,
                },
                # one result per system: "n of m systems" counts systems, as the board does
                "systems_judged": len(results),
                "systems_meeting_delivery": len(systems),
                "systems_meeting_both": sum(1 for row in systems if row["meets_expansion"]),
                "systems": systems,
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
                    for result in results
                    if result.get("verification") != FULLY_RECOMPUTED
                ],
            }
        )
    return report


@dataclass(frozen=True)
class Costing:
    """The buyer's prices and PUE for the evidence's cost per million output tokens (leaderboard.board.tender)."""

    prices: TenderPrices = TenderPrices()
    pue: float = DEFAULT_PUE


COSTING_FIELDS = (
    ("price_per_accelerator_hour", "Price per accelerator-hour"),
    ("price_per_kwh", "Energy price per kWh"),
    ("pue", "PUE"),
)


def costing_from_query(query) -> Costing:
    """The report's optional prices and PUE (one for the whole tender); raises RequirementsError naming each bad
    one (prices from 0 to 10^9, PUE from 1 to 5)."""
    values, problems = {}, []
    for name, label in COSTING_FIELDS:
        raw = (query.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        low, high = (1.0, 5.0) if name == "pue" else (0.0, 1e9)
        if not math.isfinite(value) or not low <= value <= high:
            problems.append((name, label, f"enter a number from {low:g} to {high:g}, not '{raw[:20]}'."))
            continue
        values[name] = value
    if problems:
        raise RequirementsError(problems)
    return Costing(
        prices=TenderPrices(
            per_accelerator_hour=values.get("price_per_accelerator_hour"), per_kwh=values.get("price_per_kwh")
        ),
        pue=values.get("pue", DEFAULT_PUE),
    )


class RequirementsError(ValueError):
    """The buyer's requirements cannot be read; `problems` lists (parameter, label, sentence) per bad field."""

    def __init__(self, problems: list[tuple[str, str, str]]) -> None:
        self.problems = problems
        super().__init__(" ".join(f"{parameter}: {sentence}" for parameter, _, sentence in problems))

    @property
    def labelled(self) -> list[str]:
        """The problems as the form's labels name them (for the page)."""
        return [f"{label}: {sentence}" for _, label, sentence in self.problems]


def requirements_from_query(query) -> list[ModelRequirement]:
    """The buyer's list from numbered query parameters (parameter_name: model_1, ttft_p90_ms_max_1, tpot_ms_max_1,
    interactivity_min_1, delivery_system_tps_min_1 and the expansion_... ones, then _2 ... up to MAX_MODELS). Rows
    without a model are skipped. Raises RequirementsError naming every parameter that is not a positive number
    (interactivity may be 0)."""
    requirements, problems = [], []
    for index in range(1, MAX_MODELS + 1):
        model = (query.get(f"model_{index}") or "").strip()
        if not model:
            continue
        values: dict[str, float | None] = {}
        for phase in PHASES:
            for name, _ in PHASE_FIELDS:
                parameter = parameter_name(phase, name, index)
                raw = (query.get(parameter) or "").strip()
                value = None
                if raw:
                    try:
                        value = float(raw)
                    except ValueError:
                        value = math.nan
                    if not math.isfinite(value) or value < 0 or (value == 0 and name != "interactivity_min"):
                        shown = raw[:20]
                        problems.append(
                            (
                                parameter,
                                field_label(phase, name, index),
                                f"enter a number above 0, not '{shown}'."
                                if name != "interactivity_min"
                                else f"enter a number of at least 0, not '{shown}'.",
                            )
                        )
                        value = None
                values[parameter.rsplit("_", 1)[0]] = value
        requirements.append(ModelRequirement(model=model[:200], **values))
    if problems:
        raise RequirementsError(problems)
    if not requirements:
        raise RequirementsError([("model_1", "Model 1", "choose at least one model (model_1=<model id>).")])
    return requirements
