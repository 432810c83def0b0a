"""The claims check of the tender desk (DESIGN.md, "Tender desk"): each figure a bid claims for a system is judged
against the published, recomputed points: "supported" (within 5 % of the same system's point), "supported by a
comparable system" (within 10 % of another system's point, same accelerator model and count), "not supported", or
"no evidence" (no published point to judge it by). Plain functions over published snapshots (no Django)."""

from __future__ import annotations

from dataclasses import dataclass

from checker.judge.verification import POINT_RECOMPUTED, point_verification
from leaderboard.board.slo import number
from leaderboard.board.tender import point_power

SUPPORTED = "supported"
COMPARABLE = "supported by a comparable system"
NOT_SUPPORTED = "not supported"
NO_EVIDENCE = "no evidence"
SAME_SYSTEM_TOLERANCE = 0.05
COMPARABLE_TOLERANCE = 0.10

# (figure, label, higher is better)
CLAIM_FIGURES = (
    ("system_tps", "System throughput (tokens/s)", True),
    ("interactivity", "Interactivity (tokens/s/user)", True),
    ("ttft_p90_ms", "TTFT P90 (ms)", False),
    ("tpot_p90_ms", "TPOT P90 (ms)", False),
    ("power_kw", "Power (kW)", False),
)


@dataclass(frozen=True)
class Claim:
    """A bid's claimed figures for one system, at a concurrency or at an interactivity level."""

    system: str
    concurrency: int | None = None
    at_interactivity: float | None = None
    figures: tuple[tuple[str, float], ...] = ()


def evidence_point(points: list[dict], claim: Claim, interactivity_metric: str) -> dict | None:
    """The published recomputed point a claim is judged against: the one at the claimed concurrency, or the nearest
    at or below the claimed interactivity (the highest interactivity not above it)."""
    recomputed = [p for p in points if point_verification(p) == POINT_RECOMPUTED]
    if claim.concurrency is not None:
        return next((p for p in recomputed if number(p.get("concurrency")) == claim.concurrency), None)
    below = [
        p
        for p in recomputed
        if (value := number(p.get(interactivity_metric))) is not None and value <= claim.at_interactivity
    ]
    return max(below, key=lambda p: number(p.get(interactivity_metric))) if below else None


def point_figure(
    point: dict, figure: str, *, interactivity_metric: str, measured: dict | None
) -> float | None:
    """The evidence's value of a claimed figure: power is measured where a trace exists, else provisioned."""
    if figure == "interactivity":
        return number(point.get(interactivity_metric))
    if figure == "tpot_p90_ms":
        interactivity = number(point.get(interactivity_metric))
        return 1000.0 / interactivity if interactivity else None
    if figure == "power_kw":
        return point_power(point, measured)[0]
    return number(point.get(figure))


def within(claimed: float, evidence: float, *, higher_is_better: bool, tolerance: float) -> tuple[bool, str]:
    """(supported, the arithmetic as a sentence): v <= e x (1 + t) when higher is better, v >= e x (1 - t) when
    lower is better."""
    if higher_is_better:
        bound = evidence * (1 + tolerance)
        return claimed <= bound, f"{claimed:g} ≤ {evidence:g} × {1 + tolerance:g} = {bound:g}"
    bound = evidence * (1 - tolerance)
    return claimed >= bound, f"{claimed:g} ≥ {evidence:g} × {1 - tolerance:g} = {bound:g}"


def _evidence(result: dict, point: dict, value: float) -> dict:
    return {
        "result": result["public_id"],
        "system": result.get("system"),
        "accelerator_label": result.get("accelerator_label") or "",
        "point": point.get("point"),
        "concurrency": point.get("concurrency"),
        "value": value,
        "point_url": f"/results/{result['public_id']}/#point-r{point.get('concurrency')}",
    }


def check_claim(
    claim: Claim, results: list[dict], *, interactivity_metric: str, measured: dict[str, dict[int, dict]]
) -> dict:
    """Each claimed figure's verdict with its arithmetic and the evidence it was judged against. `results` are the
    benchmark's published, fully recomputed results, newest per system."""
    own = next((r for r in results if claim.system in (r.get("system"), r["public_id"])), None)
    comparables = [
        r
        for r in results
        if own is not None
        and r is not own
        and (own.get("accelerator_label") or "")
        and r.get("accelerator_label") == own.get("accelerator_label")
    ]

    def found(result: dict) -> tuple[dict | None, dict | None]:
        point = evidence_point(result.get("points") or [], claim, interactivity_metric)
        traces = measured.get(result["public_id"]) or {}
        return point, traces.get(point.get("concurrency")) if point else None

    own_point, own_trace = found(own) if own else (None, None)
    figures = []
    for figure, claimed in claim.figures:
        label, higher = next((lab, h) for name, lab, h in CLAIM_FIGURES if name == figure)
        row = {"figure": figure, "label": label, "claimed": claimed, "higher_is_better": higher}
        value = (
            point_figure(own_point, figure, interactivity_metric=interactivity_metric, measured=own_trace)
            if own_point
            else None
        )
        if value is not None:
            ok, arithmetic = within(claimed, value, higher_is_better=higher, tolerance=SAME_SYSTEM_TOLERANCE)
            row.update(evidence=_evidence(own, own_point, value), arithmetic=arithmetic)
            if ok:
                figures.append({**row, "verdict": SUPPORTED})
                continue
        judged_any = value is not None
        for other in comparables:
            point, trace = found(other)
            other_value = (
                point_figure(point, figure, interactivity_metric=interactivity_metric, measured=trace)
                if point
                else None
            )
            if other_value is None:
                continue
            judged_any = True
            ok, arithmetic = within(
                claimed, other_value, higher_is_better=higher, tolerance=COMPARABLE_TOLERANCE
            )
            if ok:
                row.update(evidence=_evidence(other, point, other_value), arithmetic=arithmetic)
                row["verdict"] = COMPARABLE
                break
        else:
            row["verdict"] = NOT_SUPPORTED if judged_any else NO_EVIDENCE
        row.setdefault("evidence", None)
        row.setdefault("arithmetic", None)
        figures.append(row)
    return {
        "system": claim.system,
        "result": own["public_id"] if own else None,
        "accelerator_label": (own or {}).get("accelerator_label") or "",
        "concurrency": claim.concurrency,
        "at_interactivity": claim.at_interactivity,
        "comparable_systems": [r["public_id"] for r in comparables],
        "figures": figures,
    }
