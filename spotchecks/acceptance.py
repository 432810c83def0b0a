"""Acceptance at 90 % (DESIGN.md, "Tender desk"): from a chosen published point, the plan a re-measurement of the
delivered endpoint must pass: its system_tps at the same concurrency >= 0.9 x the published system_tps, and it meets
the same SLO (TTFT P90 <= X, interactivity >= Y). A separate verdict beside the spot-check's own tolerance judgement
(checker.judge.remeasure), which it neither reads nor changes. Plain functions, no Django."""

from __future__ import annotations

import math
from dataclasses import dataclass

ACCEPTANCE_SHARE = 0.9


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class AcceptancePlan:
    """What the delivered endpoint must show at the published point's concurrency."""

    point: str
    concurrency: int
    published_system_tps: float
    ttft_p90_ms_max: float | None
    interactivity_min: float | None

    @property
    def required_system_tps(self) -> float:
        return ACCEPTANCE_SHARE * self.published_system_tps

    def as_dict(self) -> dict:
        return {
            "point": self.point,
            "concurrency": self.concurrency,
            "published_system_tps": self.published_system_tps,
            "share": ACCEPTANCE_SHARE,
            "required_system_tps": self.required_system_tps,
            "ttft_p90_ms_max": self.ttft_p90_ms_max,
            "interactivity_min": self.interactivity_min,
        }


def acceptance_verdict(plan: AcceptancePlan, *, concurrency: int, measured: dict) -> dict:
    """Pass or fail of one re-measurement (its `measured` figures: system_tps, tps_per_user, ttft_p90_ms), with the
    arithmetic of each test; a re-measurement at another concurrency, or without a figure a test needs, fails and
    says why."""
    tests = []
    tps = _number(measured.get("system_tps"))
    if concurrency != plan.concurrency:
        tests.append(
            {
                "test": "concurrency",
                "passes": False,
                "arithmetic": f"c{concurrency} is not the plan's c{plan.concurrency}",
            }
        )
    tests.append(
        {
            "test": "throughput",
            "passes": tps is not None and tps >= plan.required_system_tps,
            "arithmetic": (
                "no measured system_tps"
                if tps is None
                else f"{tps:.1f} {'≥' if tps >= plan.required_system_tps else '<'} 0.9 × "
                f"{plan.published_system_tps:.1f} = {plan.required_system_tps:.1f} tokens/s "
                f"({100 * tps / plan.published_system_tps:.1f} % of the published)"
            ),
        }
    )
    if plan.ttft_p90_ms_max is not None:
        ttft = _number(measured.get("ttft_p90_ms"))
        tests.append(
            {
                "test": "ttft_p90_ms",
                "passes": ttft is not None and ttft <= plan.ttft_p90_ms_max,
                "arithmetic": "no measured TTFT P90"
                if ttft is None
                else f"TTFT P90 {ttft:.1f} {'≤' if ttft <= plan.ttft_p90_ms_max else '>'} {plan.ttft_p90_ms_max:g} ms",
            }
        )
    if plan.interactivity_min is not None:
        interactivity = _number(measured.get("tps_per_user"))
        tests.append(
            {
                "test": "interactivity",
                "passes": interactivity is not None and interactivity >= plan.interactivity_min,
                "arithmetic": "no measured interactivity"
                if interactivity is None
                else f"interactivity {interactivity:.2f} {'≥' if interactivity >= plan.interactivity_min else '<'} "
                f"{plan.interactivity_min:g} tokens/s/user",
            }
        )
    return {"passes": all(test["passes"] for test in tests), "tests": tests}
