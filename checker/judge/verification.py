"""How a result's numbers are verified: the one rule every page, chart, export and API answer shows.

A point is **recomputed** when its metrics come from its raw log (events.jsonl) and **claimed** when they are the
submitter's summary (the raw log is missing, which a published point may only be with that finding waived). A
result is **fully recomputed** when every point is, **claimed** when none is, and **partly recomputed** otherwise.
The portal freezes the level into a published result's snapshot; rankings use only fully recomputed results by
default (DESIGN.md, "Physical consistency").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

POINT_RECOMPUTED = "recomputed"
POINT_CLAIMED = "claimed"

FULLY_RECOMPUTED = "fully recomputed"
PARTLY_RECOMPUTED = "partly recomputed"
CLAIMED = "claimed"
RESULT_LEVELS = (FULLY_RECOMPUTED, PARTLY_RECOMPUTED, CLAIMED)

POINT_SENTENCES = {
    POINT_RECOMPUTED: "recomputed from its raw log",
    POINT_CLAIMED: "claimed: no raw log (waived), not recomputed",
}


def point_verification(point: dict[str, Any]) -> str:
    """recomputed or claimed, from the point's metric basis (checker.recompute.curve.official_metrics)."""
    return POINT_RECOMPUTED if point.get("basis") == POINT_RECOMPUTED else POINT_CLAIMED


@dataclass(frozen=True)
class Verification:
    """A result's verification level with the counts it comes from."""

    level: str
    recomputed_points: int
    total_points: int
    claimed_concurrencies: tuple[int, ...] = ()

    @property
    def ranks_by_default(self) -> bool:
        return self.level == FULLY_RECOMPUTED

    @property
    def sentence(self) -> str:
        """What a reader sees next to the level: how many points were recomputed from raw logs."""
        if not self.total_points:
            return "no points"
        if self.level == FULLY_RECOMPUTED:
            return f"all {self.total_points} points recomputed from their raw logs"
        if self.level == CLAIMED:
            return f"none of the {self.total_points} points recomputed: their raw logs are missing, waived"
        return (
            f"{self.recomputed_points} of {self.total_points} points recomputed from raw logs; the others are "
            "claimed: raw log missing, waived"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "recomputed_points": self.recomputed_points,
            "total_points": self.total_points,
            "claimed_concurrencies": list(self.claimed_concurrencies),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Verification:
        data = data if isinstance(data, dict) else {}
        level = data.get("level")
        return cls(
            level=level if level in RESULT_LEVELS else CLAIMED,
            recomputed_points=int(data.get("recomputed_points") or 0),
            total_points=int(data.get("total_points") or 0),
            claimed_concurrencies=tuple(data.get("claimed_concurrencies") or ()),
        )


def curve_verification(points: Iterable[dict[str, Any]]) -> Verification:
    """The level of a result from its points: fully recomputed only when every point is (and there is one)."""
    points = list(points)
    claimed = sorted(p.get("concurrency") or 0 for p in points if point_verification(p) == POINT_CLAIMED)
    recomputed = len(points) - len(claimed)
    if points and not claimed:
        level = FULLY_RECOMPUTED
    elif recomputed:
        level = PARTLY_RECOMPUTED
    else:
        level = CLAIMED
    return Verification(
        level=level,
        recomputed_points=recomputed,
        total_points=len(points),
        claimed_concurrencies=tuple(claimed),
    )


def curve_with_verification(curve: dict[str, Any]) -> dict[str, Any]:
    """The curve with each point's level written in (`verification`) and the result's (`verification`), as a
    published snapshot keeps it; Pareto fronts carry the same points, so they are labelled too."""
    if not isinstance(curve, dict) or not curve:
        return curve

    def label(point: Any) -> Any:
        if isinstance(point, dict):
            return {**point, "verification": point_verification(point)}
        return point

    points = [label(p) for p in curve.get("points") or []]
    pareto = curve.get("pareto")
    if isinstance(pareto, dict):
        pareto = {
            axis: {**front, "points": [label(p) for p in front.get("points") or []]}
            if isinstance(front, dict)
            else front
            for axis, front in pareto.items()
        }
    labelled = {**curve, "points": points, "verification": curve_verification(points).as_dict()}
    if pareto is not None:
        labelled["pareto"] = pareto
    return labelled
