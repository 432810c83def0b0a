"""Server-side SVG of the official curve: system_tps against tps_per_user as a step function.

The line is drawn only through the step vertices the checker computed (checker.recompute.curve.step_vertices):
every vertex has the x of one measured point and the y of one measured point, nothing is
interpolated. Every measured point gets a marker (filled on the Pareto front, hollow off it) labelled
with its concurrency. No JavaScript, no external asset: the page embeds the markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 720, 420
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 72, 24, 20, 58
# One colour per curve (system x model) of the version; distinguishable and readable on white.
SERIES_COLOURS = ["#0b5cad", "#c0392b", "#1a7f37", "#8e44ad", "#b35900", "#117a8b"]

X_METRIC, Y_METRIC = "tps_per_user", "system_tps"
X_LABEL = "Interactivity (tokens/s per user)"
Y_LABEL = "System throughput (tokens/s)"


def _finite(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values (1, 2, 2.5, 5 x 10^k steps) covering [low, high]."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw_step = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw_step))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw_step)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        if value >= low - step * 1e-9:
            ticks.append(round(value, 10))
        value += step
    return ticks


def format_number(value: float) -> str:
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    if abs(value) >= 1000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass
class _Scale:
    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)


def _domain(values: list[float], *, from_zero: bool) -> tuple[float, float]:
    low, high = min(values), max(values)
    if from_zero:
        low = min(0.0, low)
    pad = (high - low) * 0.06 or (abs(high) * 0.05 or 1.0)
    return (low if from_zero else low - pad), high + pad


def curve_series(curves: list[dict]) -> list[dict]:
    """The drawable part of each curve: measured points, front keys and step vertices (finite values only)."""
    series = []
    for index, curve in enumerate(curves or []):
        front = (curve.get("pareto") or {}).get(X_METRIC) or {}
        steps = [
            (x, y)
            for x, y in ((_finite(v[0]), _finite(v[1])) for v in front.get("steps") or [] if len(v) == 2)
            if x is not None and y is not None
        ]
        on_front = set(front.get("points") or [])
        points = []
        for point in curve.get("points") or []:
            x, y = _finite(point.get(X_METRIC)), _finite(point.get(Y_METRIC))
            if x is None or y is None:
                continue
            points.append(
                {
                    "key": point.get("point", ""),
                    "x": x,
                    "y": y,
                    "concurrency": point.get("concurrency"),
                    "on_front": point.get("point") in on_front,
                    "basis": point.get("basis", ""),
                }
            )
        if not points:
            continue
        bases = sorted({p["basis"] for p in points if p["basis"]})
        series.append(
            {
                "label": f"{curve.get('system', '?')} · {curve.get('model', '?')}",
                "basis": ", ".join(bases),
                "colour": SERIES_COLOURS[index % len(SERIES_COLOURS)],
                "points": points,
                "steps": steps,
            }
        )
    return series


def step_chart_svg(curves: list[dict], *, title: str = "Throughput vs. interactivity") -> SafeString | None:
    """The inline SVG of the version's curves, or None when no point has both metrics."""
    series = curve_series(curves)
    if not series:
        return None
    xs = [p["x"] for s in series for p in s["points"]] + [x for s in series for x, _ in s["steps"]]
    ys = [p["y"] for s in series for p in s["points"]] + [y for s in series for _, y in s["steps"]]
    x_low, x_high = _domain(xs, from_zero=False)
    y_low, y_high = _domain(ys, from_zero=True)
    x_ticks, y_ticks = nice_ticks(x_low, x_high), nice_ticks(y_low, y_high)
    x_low, x_high = min(x_low, x_ticks[0]), max(x_high, x_ticks[-1])
    y_low, y_high = min(y_low, y_ticks[0]), max(y_high, y_ticks[-1])
    sx = _Scale(x_low, x_high, MARGIN_LEFT, WIDTH - MARGIN_RIGHT)
    sy = _Scale(y_low, y_high, HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    plot_bottom, plot_top = HEIGHT - MARGIN_BOTTOM, MARGIN_TOP
    plot_left, plot_right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT

    parts: list[str] = [
        format_html(
            '<svg class="step-chart" viewBox="0 0 {} {}" role="img" aria-labelledby="chart-title chart-desc" '
            'xmlns="http://www.w3.org/2000/svg">',
            WIDTH,
            HEIGHT,
        ),
        format_html('<title id="chart-title">{}</title>', title),
        format_html(
            '<desc id="chart-desc">{} against {}: a step function through the measured points only '
            "(never interpolated); one marker per measured load point, labelled with its concurrency.</desc>",
            Y_LABEL,
            X_LABEL,
        ),
        format_html(
            '<rect class="plot-area" x="{}" y="{}" width="{}" height="{}"/>',
            plot_left,
            plot_top,
            plot_right - plot_left,
            plot_bottom - plot_top,
        ),
    ]
    parts += _grid_svg(x_ticks, y_ticks, sx, sy)
    parts.append(_axes_svg())
    for s in series:
        parts += _series_svg(s, sx, sy)
    parts.append("</svg>")
    return mark_safe(
        "".join(str(p) for p in parts)
    )  # every interpolated value above went through format_html


def _grid_svg(x_ticks: list[float], y_ticks: list[float], sx: _Scale, sy: _Scale) -> list[str]:
    """The grid lines and tick labels of both axes."""
    plot_bottom, plot_top = HEIGHT - MARGIN_BOTTOM, MARGIN_TOP
    plot_left, plot_right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    parts: list[str] = []
    for tick in x_ticks:
        x = sx(tick)
        parts.append(
            format_html(
                '<line class="grid" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>'
                '<text class="tick" x="{x}" y="{label_y}" text-anchor="middle">{label}</text>',
                x=f"{x:.1f}",
                top=plot_top,
                bottom=plot_bottom,
                label_y=plot_bottom + 18,
                label=format_number(tick),
            )
        )
    for tick in y_ticks:
        y = sy(tick)
        parts.append(
            format_html(
                '<line class="grid" x1="{left}" y1="{y}" x2="{right}" y2="{y}"/>'
                '<text class="tick" x="{label_x}" y="{label_y}" text-anchor="end">{label}</text>',
                y=f"{y:.1f}",
                left=plot_left,
                right=plot_right,
                label_x=plot_left - 8,
                label_y=f"{y + 4:.1f}",
                label=format_number(tick),
            )
        )
    return parts


def _axes_svg() -> str:
    """Both axes and their labels ("higher is better" on each)."""
    plot_bottom, plot_top = HEIGHT - MARGIN_BOTTOM, MARGIN_TOP
    plot_left, plot_right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    return str(
        format_html(
            '<line class="axis" x1="{l}" y1="{b}" x2="{r}" y2="{b}"/><line class="axis" x1="{l}" y1="{t}" x2="{l}" y2="{b}"/>'
            '<text class="axis-label" x="{cx}" y="{xl}" text-anchor="middle">{xlabel} → higher is better</text>'
            '<text class="axis-label" transform="translate(16 {cy}) rotate(-90)" text-anchor="middle">{ylabel} → higher is better</text>',
            l=plot_left,
            r=plot_right,
            t=plot_top,
            b=plot_bottom,
            cx=(plot_left + plot_right) / 2,
            xl=HEIGHT - 12,
            cy=(plot_top + plot_bottom) / 2,
            xlabel=X_LABEL,
            ylabel=Y_LABEL,
        )
    )


def _series_svg(s: dict, sx: _Scale, sy: _Scale) -> list[str]:
    """One curve: its step line through the front and a labelled marker per measured point."""
    parts: list[str] = []
    if len(s["steps"]) >= 2:
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(s["steps"])
        )
        parts.append(format_html('<path class="step-line" d="{}" stroke="{}"/>', path, s["colour"]))
    for point in s["points"]:
        cx, cy = sx(point["x"]), sy(point["y"])
        parts.append(
            format_html(
                '<g class="marker{}"><circle cx="{}" cy="{}" r="5" stroke="{}" fill="{}"/>'
                '<text class="point-label" x="{}" y="{}">r{}</text>'
                "<title>{} — concurrency {}: {} tokens/s, {} tokens/s per user ({}){}</title></g>",
                "" if point["on_front"] else " off-front",
                f"{cx:.1f}",
                f"{cy:.1f}",
                s["colour"],
                s["colour"] if point["on_front"] else "#ffffff",
                f"{cx + 7:.1f}",
                f"{cy - 7:.1f}",
                point["concurrency"],
                s["label"],
                point["concurrency"],
                f"{point['y']:.1f}",
                f"{point['x']:.2f}",
                point["basis"],
                "" if point["on_front"] else "; not on the Pareto front",
            )
        )
    return parts


def chart_legend(curves: list[dict]) -> list[dict]:
    """Label, colour and metric basis of each drawn curve, for the HTML legend under the chart."""
    return [
        {
            "label": s["label"],
            "colour": s["colour"],
            "basis": s["basis"],
            "points": len(s["points"]),
            "front": sum(1 for p in s["points"] if p["on_front"]),
        }
        for s in curve_series(curves)
    ]
