"""A published point against its re-measurement: the four figures, each within a stated shortfall tolerance.

A re-measurement is judged one-sided: the endpoint doing *better* than claimed (more tokens/s, a faster TTFT) is
never a finding; doing worse by more than the figure's tolerance is. Tolerances rest on the run-to-run spread of
GuideLLM 0.8.1 against `guidellm mock-server` (bench/spotcheck_spread.py; figures and command in
docs/remeasurement.md): each is about twice the (max - min) / mean spread measured over repeated runs, so an
honest claim re-measured on a quiet endpoint stays inside, and a claim inflated by a third does not.

Superseded: a spot-check's stored verdict is checker.judge.remeasure_stats's (a bootstrap interval against MLPerf's
5 % / 10 % margins); this fixed-band judgement stays for comparison (docs/remeasurement.md says why it was too kind).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# figure -> (shortfall tolerance as a fraction of the claim, True when higher is better)
TOLERANCES: dict[str, tuple[float, bool]] = {
    "system_tps": (0.35, True),
    "tps_per_user": (0.45, True),  # interactivity: 1000 / TPOT P90 ms
    "ttft_p90_ms": (0.30, False),
    "goodput": (0.30, True),
}
WITHIN, OUTSIDE, UNREACHABLE = "within", "outside", "unreachable"


@dataclass(frozen=True)
class FigureVerdict:
    """One figure: the claim, the re-measurement, the shortfall (fraction of the claim; negative = better)."""

    figure: str
    claimed: float | None
    measured: float | None
    shortfall: float | None
    tolerance: float
    within: bool | None  # None: not compared (a side is missing)

    def as_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "claimed": self.claimed,
            "measured": self.measured,
            "shortfall": self.shortfall,
            "tolerance": self.tolerance,
            "within": self.within,
        }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def shortfall(claimed: float, measured: float, *, higher_is_better: bool) -> float:
    """How much worse than claimed the measurement is, as a fraction of the claim (negative: better)."""
    if claimed == 0:
        return 0.0 if measured == claimed else (math.inf if not higher_is_better else -math.inf)
    if higher_is_better:
        return (claimed - measured) / abs(claimed)
    return (measured - claimed) / abs(claimed)


def compare_point(
    claimed: dict[str, Any], measured: dict[str, Any], tolerances: dict[str, tuple[float, bool]] | None = None
) -> tuple[str, list[FigureVerdict]]:
    """The verdict (`within` or `outside`) and one line per figure. A figure missing on either side is not
    compared; a re-measurement with no figure at all is `outside` (nothing backs the claim)."""
    tolerances = tolerances or TOLERANCES
    lines: list[FigureVerdict] = []
    for figure, (tolerance, higher_is_better) in tolerances.items():
        a, b = _number(claimed.get(figure)), _number(measured.get(figure))
        if a is None or b is None:
            lines.append(FigureVerdict(figure, a, b, None, tolerance, None))
            continue
        short = shortfall(a, b, higher_is_better=higher_is_better)
        lines.append(FigureVerdict(figure, a, b, short, tolerance, short <= tolerance))
    compared = [line for line in lines if line.within is not None]
    verdict = WITHIN if compared and all(line.within for line in compared) else OUTSIDE
    return verdict, lines
