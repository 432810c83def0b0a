"""What a preview page draws and compares: the preview's recomputed points beside published curves and other
previews on the leaderboard's charts, and the %-difference of each metric at each concurrency against one
baseline (another preview or a published result). Only concurrencies both measured are compared: nothing is
interpolated."""

from __future__ import annotations

import math
from dataclasses import dataclass

from leaderboard.board.charts import chart_spec, interactivity_metric, series_of

COMPARED = (
    ("system_tps", "System throughput", "tokens/s", True),
    ("tps_per_user", "Interactivity", "tokens/s per user", True),
    ("ttft_p90_ms", "TTFT P90", "ms", False),
)


@dataclass
class Curve:
    key: str  # "preview:12", "result:EP-000003"
    label: str
    curve: dict
    href: str = ""
    preview: bool = False


def _finite(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def charts(curves: list[Curve], *, benchmark) -> list[dict]:
    x = interactivity_metric(benchmark)
    specs = []
    for chart_id, title, cx, cy, log_x in (
        ("chart-front", "System throughput against interactivity", x, "system_tps", False),
        ("chart-concurrency", "System throughput against concurrency", "concurrency", "system_tps", True),
        ("chart-ttft", "TTFT P90 against concurrency", "concurrency", "ttft_p90_ms", True),
    ):
        series = []
        for index, c in enumerate(curves):
            label = f"{c.label} (preview, not an MLPerf result)" if c.preview else c.label
            one = series_of(c.curve, x=cx, y=cy, label=label, index=index, href=c.href, sid=f"s{index}")
            if c.preview:
                # Not a verification level of a published result: what the legend says of a preview's curve.
                one["level"] = "recomputed from the tool's per-request records"
            series.append(one)
        specs.append(
            chart_spec(
                chart_id,
                title,
                x=cx,
                y=cy,
                series=series,
                log_x=log_x,
                note="Previews are drawn from the portal's recomputation of another tool's per-request records; "
                "they are not MLPerf results and are not reviewed.",
            )
        )
    return specs


def _by_concurrency(curve: dict) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for point in (curve or {}).get("points") or []:
        if isinstance(point, dict) and isinstance(point.get("concurrency"), int):
            out.setdefault(point["concurrency"], point)
    return out


def percent_difference(value, baseline) -> float | None:
    """(value - baseline) / baseline in %, None when either is missing or the baseline is 0."""
    v, b = _finite(value), _finite(baseline)
    if v is None or b is None or b == 0:
        return None
    return (v - b) / abs(b) * 100.0


def differences(curve: dict, baseline: dict) -> list[dict]:
    """One row per concurrency both measured: each metric's value, the baseline's and the %-difference
    (`better`: True when the difference is in the metric's good direction)."""
    mine, theirs = _by_concurrency(curve), _by_concurrency(baseline)
    rows = []
    for concurrency in sorted(set(mine) & set(theirs)):
        cells = []
        for key, label, unit, higher_better in COMPARED:
            value, base = _finite(mine[concurrency].get(key)), _finite(theirs[concurrency].get(key))
            pct = percent_difference(value, base)
            cells.append(
                {
                    "key": key,
                    "label": label,
                    "unit": unit,
                    "value": value,
                    "baseline": base,
                    "percent": pct,
                    "better": None if pct is None or pct == 0 else (pct > 0) == higher_better,
                }
            )
        rows.append({"concurrency": concurrency, "cells": cells})
    return rows


def unmatched(curve: dict, baseline: dict) -> tuple[list[int], list[int]]:
    """Concurrencies only the preview measured, and only the baseline measured."""
    mine, theirs = set(_by_concurrency(curve)), set(_by_concurrency(baseline))
    return sorted(mine - theirs), sorted(theirs - mine)
