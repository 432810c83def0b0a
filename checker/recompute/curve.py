"""Per (system, model) curves: points by concurrency, the Pareto front and its step-function vertices."""

from __future__ import annotations

from typing import Any

from checker.recompute.numbers import finite
from checker.report import Report

CURVE_METRICS = ("concurrency", "system_tps", "tps_per_user", "ttft_p90_ms", "e2e_interactivity")


def official_metrics(claimed: dict | None, recomputed: dict | None) -> tuple[dict[str, float | None], str]:
    """The curve metrics of one point, recomputed values preferred; returns (metrics, basis)."""
    basis, source = ("recomputed", recomputed) if isinstance(recomputed, dict) else ("claimed", claimed)
    source = source if isinstance(source, dict) else {}
    return {name: finite(source.get(name)) for name in CURVE_METRICS}, basis


def pareto_front(points: list[dict[str, Any]], *, x: str, y: str) -> list[dict[str, Any]]:
    """Points not dominated in (x, y), larger is better on both, as the official visualiser selects them.

    Sort by x best-first (descending), ties by y best-first; walk and keep a point when its y beats
    the last kept y (strictly). Points missing either value are left out. Returned in walk order
    (x descending, y ascending).
    """
    usable = [p for p in points if finite(p.get(x)) is not None and finite(p.get(y)) is not None]
    usable.sort(key=lambda p: (-p[x], -p[y]))
    kept: list[dict[str, Any]] = []
    for p in usable:
        if not kept or p[y] > kept[-1][y]:
            kept.append(p)
    return kept


def step_vertices(front: list[dict[str, Any]], *, x: str, y: str) -> list[list[float]]:
    """Vertices of the official step line through the front, in walk order (x descending).

    From the first kept point (x0, y0); for each next kept point (xi, yi): rise vertically at the
    previous x to (x_{i-1}, yi), then run horizontally to (xi, yi). Every vertex has the x of one
    measured point and the y of one measured point; nothing is interpolated.
    """
    out: list[list[float]] = []
    for i, p in enumerate(front):
        if i:
            out.append([front[i - 1][x], p[y]])
        out.append([p[x], p[y]])
    return out


def build_curves(report: Report, *, ruleset: Any = None) -> list[dict[str, Any]]:
    """One dict per (system, model): points sorted by concurrency, fronts and step vertices ready to draw."""
    groups: dict[tuple[str, str], list] = {}
    for pr in report.points:
        groups.setdefault((pr.system, pr.model), []).append(pr)
    curves = []
    for (system, model), prs in sorted(groups.items()):
        points = []
        for pr in sorted(prs, key=lambda p: p.concurrency):
            metrics, basis = official_metrics(pr.claimed, pr.recomputed)
            metrics["concurrency"] = pr.concurrency
            point = {"point": pr.key, "basis": basis, **metrics}
            for extra_key in ("region", "offline", "tps_utilization", "revision", "stack"):
                if extra_key in pr.extra:
                    point[extra_key] = pr.extra[extra_key]
            power = pr.extra.get("power") if isinstance(pr.extra.get("power"), dict) else {}
            point["system_tps_per_kw"] = finite(power.get("system_tps_per_kw"))
            points.append(point)
        curves.append(
            curve_of(system=system, model=model, points=points, ruleset=getattr(ruleset, "name", ruleset))
        )
    return curves


def curve_of(*, system: str, model: str, points: list[dict[str, Any]], ruleset: str | None) -> dict[str, Any]:
    """One curve as build_curves gives it: the points (each with "point", "concurrency" and the official
    metrics), the Pareto front and step vertices for each interactivity axis the points have."""
    fronts = {}
    for x in ("tps_per_user", "e2e_interactivity"):
        front = pareto_front(points, x=x, y="system_tps")
        if not front:
            continue
        fronts[x] = {
            "x": x,
            "y": "system_tps",
            "points": [p["point"] for p in front],
            "steps": step_vertices(front, x=x, y="system_tps"),
        }
    return {
        "system": system,
        "model": model,
        "ruleset": ruleset,
        "points": points,
        "pareto": fronts,
        "official": "step function through measured points only; never interpolated",
    }
