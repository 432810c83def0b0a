"""Performance cliffs: where a curve's next measured point (by concurrency) loses more than a set share of
interactivity or multiplies TTFT P90, the service stops being stable. Plain functions over snapshot points."""

from __future__ import annotations

import math

INTERACTIVITY_LOSS = 0.30  # the next point keeps less than 70 % of this point's interactivity
TTFT_FACTOR = 2.0  # the next point's TTFT P90 is more than twice this point's

CLIFF_RULE = (
    f"A cliff is where the next measured point (by concurrency) loses more than {INTERACTIVITY_LOSS:.0%} of "
    f"interactivity or has more than {TTFT_FACTOR:g}x the TTFT P90."
)


def _figure(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def curve_cliffs(points: list[dict], *, metric: str = "tps_per_user") -> list[dict]:
    """Each cliff of a curve: the last stable point (`before`), the first point past it (`after`), their
    concurrencies and what fell (interactivity kept, TTFT P90 factor)."""
    ordered = sorted(
        (p for p in points if _figure(p.get("concurrency")) is not None), key=lambda p: p["concurrency"]
    )
    cliffs = []
    for before, after in zip(ordered, ordered[1:], strict=False):
        x0, x1 = _figure(before.get(metric)), _figure(after.get(metric))
        t0, t1 = _figure(before.get("ttft_p90_ms")), _figure(after.get("ttft_p90_ms"))
        kept = x1 / x0 if x0 and x1 is not None and x0 > 0 else None
        factor = t1 / t0 if t0 and t1 is not None and t0 > 0 else None
        if (kept is not None and kept < 1 - INTERACTIVITY_LOSS) or (
            factor is not None and factor > TTFT_FACTOR
        ):
            cliffs.append(
                {
                    "before": before.get("point"),
                    "after": after.get("point"),
                    "before_concurrency": before["concurrency"],
                    "after_concurrency": after["concurrency"],
                    "interactivity_kept": kept,
                    "ttft_factor": factor,
                }
            )
    return cliffs


def cliff_side(
    points: list[dict], concurrency, *, metric: str = "tps_per_user", cliffs: list[dict] | None = None
) -> dict | None:
    """Which side of the curve's first cliff a point at `concurrency` is on: {"side": "before" | "past",
    "cliff": the cliff}; None when the curve has no cliff. `cliffs`: curve_cliffs of `points`, when known."""
    if cliffs is None:
        cliffs = curve_cliffs(points, metric=metric)
    if not cliffs or _figure(concurrency) is None:
        return None
    first = cliffs[0]
    side = "past" if concurrency >= first["after_concurrency"] else "before"
    return {"side": side, "cliff": first}


def points_past_a_cliff(points: list[dict], *, metric: str = "tps_per_user") -> set:
    """The point keys right after each cliff (what a table marks)."""
    return {cliff["after"] for cliff in curve_cliffs(points, metric=metric)}
