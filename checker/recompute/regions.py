"""Concurrency regions of one curve: ultra-low 1..32, then low / medium / high on log2-equal parts of (C_min, C_max]."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """Inclusive [start, end]; a region whose rounding collapses it has start > end and holds nothing."""

    start: int
    end: int

    def contains(self, concurrency: int) -> bool:
        return self.start <= concurrency <= self.end

    def __str__(self) -> str:
        return f"{self.start}\u2013{self.end}"


@dataclass(frozen=True)
class Regions:
    """Boundaries for one (C_min, C_max); names match the point.yaml `region` vocabulary."""

    c_min: int
    c_max: int
    low_latency: Bounds
    low_concurrency: Bounds
    med_concurrency: Bounds
    high_concurrency: Bounds
    margin: Bounds
    ultra_low: Bounds  # coverage range of the Ultra Low Concurrency requirement (1..32)

    def classify(self, concurrency: int) -> str | None:
        """Region name of a concurrency, or None beyond the margin."""
        for name in ("low_latency", "low_concurrency", "med_concurrency", "high_concurrency", "margin"):
            if getattr(self, name).contains(concurrency):
                return name
        return None

    def to_dict(self) -> dict[str, object]:
        return {
            "c_min": self.c_min,
            "c_max": self.c_max,
            **{
                name: [getattr(self, name).start, getattr(self, name).end]
                for name in (
                    "low_latency",
                    "low_concurrency",
                    "med_concurrency",
                    "high_concurrency",
                    "margin",
                )
            },
        }


# The official region ids (point.yaml `region`, the official checker's `region-declared`) are the names every
# page, API answer and report uses; this readable label goes beside them, never instead of them.
REGION_LABELS = {
    "low_latency": "low latency",
    "low_concurrency": "low concurrency",
    "med_concurrency": "medium concurrency",
    "high_concurrency": "high concurrency",
    "margin": "margin above C_max",
    "offline": "dedicated Offline point",
}


def region_label(region: str | None) -> str:
    """The readable label of an official region id ('' when the id is unknown or empty)."""
    return REGION_LABELS.get(region or "", "")


class RegionError(ValueError):
    """C_min / C_max do not allow the region computation (message says which)."""


def compute_regions(
    c_max: int,
    c_min: int,
    *,
    ultra_low_max: int = 32,
    margin_fraction: float = 0.10,
    c_min_overridden: bool = False,
) -> Regions:
    """The public reference algorithm: I = log2(C_max - C_min) / 3, ends rounded with Python round() (banker's).

    With a declared `c_min_override` (system_desc.json), Ultra Low coverage is 1..C_min instead of 1..32.
    """
    if not 1 <= c_min <= ultra_low_max:
        raise RegionError(f"C_min = {c_min} is outside 1..{ultra_low_max}")
    if c_max <= ultra_low_max:
        raise RegionError(f"C_max = {c_max} must be greater than {ultra_low_max}")
    interval = math.log2(c_max - c_min) / 3
    low_end = round(c_min + 2**interval)
    med_end = round(c_min + 2 ** (2 * interval))
    return Regions(
        c_min=c_min,
        c_max=c_max,
        low_latency=Bounds(1, c_min),
        low_concurrency=Bounds(c_min + 1, low_end),
        med_concurrency=Bounds(low_end + 1, med_end),
        high_concurrency=Bounds(med_end + 1, c_max),
        margin=Bounds(c_max + 1, math.ceil((1 + margin_fraction) * c_max)),
        ultra_low=Bounds(1, c_min if c_min_overridden else ultra_low_max),
    )
