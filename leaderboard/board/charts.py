"""Chart specifications of the public pages, drawn in the browser by static/js/leaderboard_chart.js (our own SVG,
no library, no CDN) and shown beside an HTML table of the same numbers.

Lines go through measured points only. Throughput against interactivity is the official step function through
the Pareto front (the checker's step vertices, checker.recompute.curve.step_vertices); a metric against concurrency is a
step line that holds each measured value until the next measured concurrency. Every vertex has the x of one
measured point and the y of one measured point: nothing is interpolated.
"""

from __future__ import annotations

import math

from catalog.models import Benchmark
from checker.judge.verification import POINT_SENTENCES, curve_verification, point_verification
from leaderboard.board.cliffs import curve_cliffs

# Series differ by colour, marker shape and dash together, so that no series is told apart by colour alone. The
# colours have at least 3:1 contrast against the plot area (#f3f5f8) and stay apart under protanopia, deuteranopia
# and tritanopia (tests/leaderboard/test_chart_palette.py simulates them).
SERIES_COLOURS = [
    "#0b5cad",
    "#eb5e00",
    "#5a1624",
    "#7500eb",
    "#990000",
    "#000070",
    "#279b61",
    "#9b276d",
    "#eb00eb",
    "#eb0046",
]
# Drawn by static/js/leaderboard_chart.js (MARKERS there); the legend shows the same shape.
SERIES_MARKERS = [
    "circle",
    "square",
    "triangle",
    "diamond",
    "triangle-down",
    "plus",
    "star",
    "hexagon",
    "cross",
    "bar",
]
# SVG stroke-dasharray of each series' line ("" solid).
SERIES_DASHES = ["", "7 3", "2 3", "9 3 2 3", "", "7 3", "2 3", "9 3 2 3", "", "7 3"]

METRICS = {
    "concurrency": ("Concurrency", ""),
    "system_tps": ("System throughput", "tokens/s"),
    "tps_per_user": ("Interactivity", "tokens/s per user"),
    "e2e_interactivity": ("End-to-end interactivity", "tokens/s per user"),
    "ttft_p90_ms": ("TTFT P90", "ms"),
    "system_tps_per_kw": ("Throughput per kW (provisioned)", "tokens/s/kW"),
    "system_tps_per_accelerator": ("System throughput per accelerator", "tokens/s"),
}
# What hovering a point shows, in order (the point's every official metric).
TOOLTIP_METRICS = [
    "concurrency",
    "system_tps",
    "tps_per_user",
    "e2e_interactivity",
    "ttft_p90_ms",
    "system_tps_per_kw",
]


def interactivity_metric(benchmark: Benchmark) -> str:
    """Agentic workloads are judged on end-to-end interactivity, the others on tokens/s per user."""
    return "e2e_interactivity" if benchmark.workload == Benchmark.Workload.AGENTIC_CODING else "tps_per_user"


def axis_label(metric: str) -> str:
    name, unit = METRICS.get(metric, (metric, ""))
    return f"{name} ({unit})" if unit else name


def _finite(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def colour(index: int) -> str:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def series_style(index: int) -> dict:
    """The colour, marker shape and line dash of the index-th series of a chart."""
    return {
        "colour": colour(index),
        "marker": SERIES_MARKERS[index % len(SERIES_MARKERS)],
        "dash": SERIES_DASHES[index % len(SERIES_DASHES)],
    }


def _point(point: dict, on_front: set[str]) -> dict:
    row = {key: _finite(point.get(key)) for key in TOOLTIP_METRICS}
    row["key"] = point.get("point", "")
    row["basis"] = point.get("basis", "")
    row["verification"] = point_verification(point)  # what the tooltip says: recomputed or claimed
    row["verification_text"] = POINT_SENTENCES[row["verification"]]
    row["region"] = point.get("region", "")
    row["on_front"] = point.get("point") in on_front
    return row


def cliff_sentence(cliff: dict) -> str:
    """What a chart's tooltip says of the first point past a cliff (leaderboard.board.cliffs)."""
    parts = []
    if cliff.get("interactivity_kept") is not None:
        parts.append(f"keeps {cliff['interactivity_kept']:.0%} of the interactivity")
    if cliff.get("ttft_factor") is not None:
        parts.append(f"TTFT P90 x{cliff['ttft_factor']:.1f}")
    return (
        f"past a performance cliff: r{cliff['before_concurrency']} -> r{cliff['after_concurrency']} "
        + ", ".join(parts)
    )


def series_of(
    curve: dict,
    *,
    x: str,
    y: str,
    label: str,
    index: int,
    href: str = "",
    sid: str = "",
    cliff_metric: str | None = None,
) -> dict:
    """One drawable series: every measured point with all its metrics, and the step vertices to draw.

    x = an interactivity metric: the Pareto front's step vertices the checker computed.
    x = concurrency: measured points by concurrency, each value held until the next measured concurrency.
    The first point past each performance cliff (leaderboard.board.cliffs, judged on `cliff_metric`, else on x when
    it is an interactivity metric, else on tps_per_user) carries `past_cliff` and the sentence its tooltip says:
    the chart marks it as the table does."""
    points_in = [p for p in (curve or {}).get("points") or [] if isinstance(p, dict)]
    front = ((curve or {}).get("pareto") or {}).get(x) or {}
    on_front = set(front.get("points") or []) if x != "concurrency" else set()
    cliffs = {
        c["after"]: c
        for c in curve_cliffs(points_in, metric=cliff_metric or (x if x != "concurrency" else "tps_per_user"))
    }
    points = [_point(p, on_front) for p in points_in]
    for p in points:
        cliff = cliffs.get(p["key"])
        p["past_cliff"] = cliff is not None
        p["cliff_text"] = cliff_sentence(cliff) if cliff is not None else ""
    points = [p for p in points if p[x] is not None and p[y] is not None]
    for p in points:  # the chart's own coordinates, for the table beside it
        p["x"], p["y"] = p[x], p[y]
    if x == "concurrency":
        ordered = sorted(points, key=lambda p: p["concurrency"])
        steps: list[list[float]] = []
        for i, p in enumerate(ordered):
            if i:
                steps.append([p["concurrency"], ordered[i - 1][y]])
            steps.append([p["concurrency"], p[y]])
        for p in points:
            p["on_front"] = True
    else:
        steps = [
            [float(v[0]), float(v[1])]
            for v in front.get("steps") or []
            if isinstance(v, list | tuple)
            and len(v) == 2
            and _finite(v[0]) is not None
            and _finite(v[1]) is not None
        ]
    return {
        "id": sid or f"s{index}",
        "label": label,
        "level": curve_verification(points_in).level,  # the legend shows it beside the label
        **series_style(index),
        "href": href,
        "points": points,
        "steps": steps,
    }


def per_accelerator(series: dict, count: int) -> dict:
    """A drawn series (series_of, y = system_tps) divided by the system's accelerator count: each point's
    `system_tps_per_accelerator` and y, and the step vertices' y. Measured values divided, nothing interpolated."""
    points = []
    for point in series["points"]:
        value = point["system_tps"] / count if point.get("system_tps") is not None else None
        points.append({**point, "system_tps_per_accelerator": value, "y": value})
    steps = [[v[0], v[1] / count] for v in series["steps"]]
    return {**series, "points": [p for p in points if p["y"] is not None], "steps": steps}


def board_groups(drawn: list[tuple[int | None, dict]], *, x: str, title: str, per: bool) -> list[dict]:
    """The board's Pareto fronts grouped by accelerator count (one chart per count, fewest first; a system without
    a count on its own chart last), each series keeping its colour; `per`: throughput per accelerator."""
    groups: dict[int | None, list[dict]] = {}
    for count, series in drawn:
        groups.setdefault(count, []).append(series)
    out = []
    for count in sorted(groups, key=lambda c: (c is None, c or 0)):
        series = groups[count]
        if per and count:
            series = [per_accelerator(s, count) for s in series]
        name = f"{count} accelerator{'s' if count != 1 else ''}" if count else "Accelerator count not given"
        spec = chart_spec(
            f"chart-board-a{count or 0}",
            f"{name}: {title}",
            x=x,
            y="system_tps_per_accelerator" if per and count else "system_tps",
            series=series,
            note="Official step functions through each system's Pareto front of measured points"
            + (", divided by its accelerator count" if per and count else "")
            + "; nothing is interpolated.",
        )
        out.append({"count": count, "name": name, "spec": spec})
    return out


def chart_spec(
    chart_id: str, title: str, *, x: str, y: str, series: list[dict], log_x: bool = False, note: str = ""
) -> dict:
    """Everything the browser needs to draw one chart (passed through json_script)."""
    return {
        "id": chart_id,
        "title": title,
        "x": {"key": x, "label": axis_label(x), "log": log_x},
        "y": {"key": y, "label": axis_label(y)},
        "series": [s for s in series if s["points"]],
        "tooltip": [{"key": k, "label": axis_label(k)} for k in TOOLTIP_METRICS],
        "note": note,
    }


def result_charts(curve: dict, *, label: str, interactivity: str) -> list[dict]:
    """The three charts of a result page: throughput against interactivity (the official step function),
    throughput against concurrency, TTFT P90 against concurrency."""
    return [
        chart_spec(
            "chart-front",
            f"System throughput against {axis_label(interactivity).lower()}",
            x=interactivity,
            y="system_tps",
            series=[series_of(curve, x=interactivity, y="system_tps", label=label, index=0)],
            note="Official step function through the Pareto front of measured points; hollow markers are "
            "measured points off the front.",
        ),
        chart_spec(
            "chart-concurrency",
            "System throughput against concurrency",
            x="concurrency",
            y="system_tps",
            log_x=True,
            series=[
                series_of(
                    curve, x="concurrency", y="system_tps", label=label, index=0, cliff_metric=interactivity
                )
            ],
            note="Each measured value is held until the next measured concurrency; nothing is interpolated.",
        ),
        chart_spec(
            "chart-ttft",
            "TTFT P90 against concurrency",
            x="concurrency",
            y="ttft_p90_ms",
            log_x=True,
            series=[
                series_of(
                    curve, x="concurrency", y="ttft_p90_ms", label=label, index=1, cliff_metric=interactivity
                )
            ],
            note="Lower is better. Each measured value is held until the next measured concurrency.",
        ),
    ]
