"""A published point against its re-measurement, judged with statistics: for each figure, a bootstrap confidence
interval of the re-measurement's shortfall against the published point, from both sides' per-request samples,
judged against MLPerf's margins (docs/remeasurement.md, "Judged with statistics").

The shortfall is one-sided, as in checker.judge.remeasure: doing better than claimed is never a finding. A figure is
`within` when the whole interval lies under the margin, `outside` when the whole interval lies above it, and
`inconclusive` otherwise: then the run length that would decide is estimated from how the interval narrows with
the number of requests (its half-width shrinks as 1 / sqrt(requests)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.recompute.goodput import SampleSeries

# MLPerf's margins: a rerun on the same system, and a result reproduced by another party.
MARGIN_SAME_SYSTEM = 0.05
MARGIN_ANOTHER_PARTY = 0.10
WITHIN, OUTSIDE, INCONCLUSIVE = "within", "outside", "inconclusive"
HIGHER_IS_BETTER = {"system_tps": True, "tps_per_user": True, "ttft_p90_ms": False}


def _figures(series: SampleSeries, rows: np.ndarray) -> dict[str, float]:
    """The three figures of a point from the samples at `rows` (indices, repeats allowed), as the portal reads
    them: P90 by the lower rank (checker.recompute), interactivity 1000 / TPOT P90 ms, throughput = output tokens
    of completed samples over the point's duration (scaled by how many samples the draw holds)."""
    ok = series.ok[rows]
    ttft = series.ttft_ns[rows][ok & (series.ttft_ns[rows] >= 0)]
    tpot = series.tpot_ns[rows][ok & ~np.isnan(series.tpot_ns[rows])]
    tokens = float(series.output_tokens[rows][ok].sum())
    seconds = series.duration_ns / 1e9 * (len(rows) / max(series.tracked, 1))
    return {
        "ttft_p90_ms": float(np.percentile(ttft, 90, method="lower")) / 1e6 if len(ttft) else math.nan,
        "tps_per_user": 1e9 / float(np.percentile(tpot, 90, method="lower")) if len(tpot) else math.nan,
        "system_tps": tokens / seconds if seconds > 0 else math.nan,
    }


def _number(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value == 0
    ):
        return math.nan
    return float(value)


def _shortfall(claimed: float, measured: float, higher_is_better: bool) -> float:
    return (claimed - measured) / claimed if higher_is_better else (measured - claimed) / claimed


@dataclass(frozen=True)
class FigureJudgement:
    """One figure: both sides' values, the shortfall and its confidence interval, the verdict against `margin`."""

    figure: str
    claimed: float
    measured: float
    shortfall: float
    low: float
    high: float
    margin: float
    verdict: str
    run_longer_s: float | None  # inconclusive: the re-measurement's length that would decide (estimated)

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if out["run_longer_s"] is not None and not math.isfinite(out["run_longer_s"]):
            out["run_longer_s"] = (
                None  # JSON has no infinity: "no length decides" (the shortfall sits on the margin)
            )
        return out


def judge_with_intervals(
    published: SampleSeries | None,
    measured: SampleSeries,
    *,
    claimed: dict[str, Any] | None = None,
    margin: float = MARGIN_ANOTHER_PARTY,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[FigureJudgement]:
    """Each figure's shortfall with a percentile-bootstrap interval (`resamples` draws of each side's requests with
    replacement, independently, a fixed seed so a verdict reads the same every time), judged against `margin`.

    `published` None: the published point kept no per-request samples; its figures `claimed` are then held fixed
    and only the re-measurement's requests are drawn (the interval is narrower than with both sides' spread)."""
    rng = np.random.default_rng(seed)
    if published is not None:
        claimed = _figures(published, np.arange(published.tracked))
    else:
        claimed = {figure: _number((claimed or {}).get(figure)) for figure in HIGHER_IS_BETTER}
    observed = _figures(measured, np.arange(measured.tracked))
    draws: dict[str, list[float]] = {figure: [] for figure in HIGHER_IS_BETTER}
    for _ in range(resamples):
        if published is not None:
            left = _figures(published, rng.integers(0, published.tracked, published.tracked))
        else:
            left = claimed
        right = _figures(measured, rng.integers(0, measured.tracked, measured.tracked))
        for figure, higher in HIGHER_IS_BETTER.items():
            draws[figure].append(_shortfall(left[figure], right[figure], higher))
    tail = (1 - confidence) / 2 * 100
    out = []
    for figure, higher in HIGHER_IS_BETTER.items():
        point = _shortfall(claimed[figure], observed[figure], higher)
        values = np.asarray(draws[figure], dtype=np.float64)
        values = values[~np.isnan(values)]
        if math.isnan(point) or not len(values):
            continue
        low, high = (float(v) for v in np.percentile(values, [tail, 100 - tail]))
        verdict = WITHIN if high <= margin else OUTSIDE if low > margin else INCONCLUSIVE
        out.append(
            FigureJudgement(
                figure=figure,
                claimed=claimed[figure],
                measured=observed[figure],
                shortfall=point,
                low=low,
                high=high,
                margin=margin,
                verdict=verdict,
                run_longer_s=_run_length_to_decide(measured, low, high, point, margin)
                if verdict == INCONCLUSIVE
                else None,
            )
        )
    return out


def _run_length_to_decide(
    measured: SampleSeries, low: float, high: float, point: float, margin: float
) -> float:
    """How long a re-measurement would need to run for the interval to clear the margin, if the shortfall stays
    where it is: the interval's reach towards the margin (high - shortfall when the margin lies above it, shortfall
    - low when below) shrinks as 1 / sqrt(requests), and requests grow with the run's length (the published side
    held as it is, so this is a lower bound). Since the interval straddles the margin, the answer is longer than the
    run made. Infinite when the shortfall sits on the margin."""
    distance = abs(point - margin)
    if distance == 0:
        return math.inf
    reach = high - point if margin > point else point - low
    return measured.duration_ns / 1e9 * (reach / distance) ** 2


def overall(judgements: list[FigureJudgement]) -> str:
    """outside when any figure is, within when every figure is, else inconclusive (also when nothing was judged)."""
    verdicts = {j.verdict for j in judgements}
    if OUTSIDE in verdicts:
        return OUTSIDE
    return WITHIN if verdicts == {WITHIN} else INCONCLUSIVE


def run_longer_s(judgements: list[FigureJudgement]) -> float | None:
    """The length a re-measurement would need for every inconclusive figure to decide (the longest of them);
    None when nothing is inconclusive or no finite length decides."""
    lengths = [j.run_longer_s for j in judgements if j.verdict == INCONCLUSIVE and j.run_longer_s is not None]
    finite = [length for length in lengths if math.isfinite(length)]
    return max(finite) if finite and len(finite) == len(lengths) else None
