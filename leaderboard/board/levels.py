"""Throughput at fixed interactivity levels (issue 34, board views): per system, the published step function read at
each level the buyer chooses (the highest system_tps among the measured points whose interactivity is at least the
level: the official frontier's value there, never interpolated), the area under that step function, and each figure
as % against a chosen baseline system; systems grouped by accelerator count, optionally per accelerator. Plain
functions over published snapshots (no Django)."""

from __future__ import annotations

from checker.judge.verification import POINT_RECOMPUTED, point_verification
from leaderboard.board.slo import number

MAX_LEVELS = 12


def _measured(points: list[dict], metric: str) -> list[tuple[float, float]]:
    """(interactivity, system_tps) of the recomputed points with both figures."""
    out = []
    for point in points:
        x, y = number(point.get(metric)), number(point.get("system_tps"))
        if x is not None and y is not None and point_verification(point) == POINT_RECOMPUTED:
            out.append((x, y))
    return out


def throughput_at(points: list[tuple[float, float]], level: float) -> float | None:
    """The step function at `level`: the best system_tps among points with interactivity >= level; None past the
    curve's last point (no point reaches the level: nothing is extrapolated)."""
    reaching = [y for x, y in points if x >= level]
    return max(reaching) if reaching else None


def area_under_steps(points: list[tuple[float, float]]) -> float:
    """The area under the step function from interactivity 0 to the curve's highest interactivity:
    Σ (x_i − x_{i−1}) × f(x_i) over the distinct interactivities in ascending order (x_0 = 0), where
    f(x) = throughput_at(points, x) is constant on each (x_{i−1}, x_i]. Units: tokens/s × tokens/s/user."""
    area, previous = 0.0, 0.0
    for x in sorted({x for x, _ in points if x > 0}):
        area += (x - previous) * throughput_at(points, x)
        previous = x
    return area


def _percent(value: float | None, base: float | None) -> float | None:
    return 100.0 * (value - base) / base if value is not None and base else None


def levels_table(
    results: list[dict], levels: list[float], *, metric: str, baseline: str | None, per_accelerator: bool
) -> dict:
    """Per system (the results given), its throughput at each level and its area, per accelerator when asked, and
    the % against the baseline result (by public id); grouped by accelerator count (smallest first), then by area."""
    rows = []
    for result in results:
        points = _measured(result.get("points") or [], metric)
        accelerators = result.get("accelerators")
        divisor = accelerators if per_accelerator else 1
        if per_accelerator and not accelerators:
            continue  # no count: it cannot be read per accelerator
        values = [throughput_at(points, level) for level in levels]
        rows.append(
            {
                "result": result["public_id"],
                "result_url": f"/results/{result['public_id']}/",
                "system": result.get("system"),
                "organisation": result.get("organisation"),
                "accelerators": accelerators,
                "accelerator_label": result.get("accelerator_label") or "",
                "at_levels": [None if v is None else v / divisor for v in values],
                "area": area_under_steps(points) / divisor,
            }
        )
    base = next((row for row in rows if row["result"] == baseline), None)
    for row in rows:
        row["vs_baseline_pct"] = [
            _percent(v, b)
            for v, b in zip(
                row["at_levels"], base["at_levels"] if base else [None] * len(levels), strict=True
            )
        ]
        row["area_vs_baseline_pct"] = _percent(row["area"], base["area"] if base else None)
    rows.sort(
        key=lambda row: (row["accelerators"] is None, row["accelerators"] or 0, -row["area"], row["result"])
    )
    groups: list[dict] = []
    for row in rows:
        if not groups or groups[-1]["accelerators"] != row["accelerators"]:
            groups.append({"accelerators": row["accelerators"], "rows": []})
        groups[-1]["rows"].append(row)
    return {
        "levels": levels,
        "interactivity_metric": metric,
        "per_accelerator": per_accelerator,
        "baseline": base["result"] if base else None,
        "groups": groups,
    }


def levels_from_query(raw: str) -> list[float]:
    """ "20,50,90" -> [20.0, 50.0, 90.0] (ascending, distinct, each > 0, at most 12). Raises ValueError."""
    levels = set()
    for part in (raw or "").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            value = float("nan")
        if not 0 < value < 1e9:
            raise ValueError(
                f"levels: enter interactivity levels above 0 separated by commas, not '{part[:20]}'."
            )
        levels.add(value)
    if not levels:
        raise ValueError("levels: give at least one interactivity level (levels=20,50,90).")
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"levels: give at most {MAX_LEVELS} levels.")
    return sorted(levels)
