"""Series statistics exactly as the official client reports them, and LoadGen early stopping."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

PERCENTILE_GRID = (99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0)
EARLY_STOPPING_GRID = tuple(p for p in PERCENTILE_GRID if p >= 50.0)
EARLY_STOPPING_CONFIDENCE = 0.99


def percentile_key(p: float) -> str:
    """The client's key for a percentile: 99.9 -> "99.9", 90 -> "90.0"."""
    return repr(float(p))


def _continued_fraction(a: float, b: float, x: float) -> float:
    # Modified Lentz evaluation of the continued fraction of the incomplete beta function.
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < tiny:
        d = tiny
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        num = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        num = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + num * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + num / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 3e-16:
            break
    return h


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def _odds(h: int, t: int, p: float) -> float:
    # Probability that at most t of h + t samples exceed the true p-quantile.
    return regularized_incomplete_beta(h, t + 1, p)


@lru_cache(maxsize=4096)
def min_passing(t: int, p: float, confidence: float = EARLY_STOPPING_CONFIDENCE) -> int:
    """Smallest h with odds(h, t) <= 1 - confidence (odds falls as h grows)."""
    target = 1.0 - confidence
    hi = 1
    while _odds(hi, t, p) > target:
        hi *= 2
    lo = hi // 2 + 1 if hi > 1 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _odds(mid, t, p) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def min_samples_for_early_stopping(p: float, confidence: float = EARLY_STOPPING_CONFIDENCE) -> int:
    """Fewest samples for which an early-stopping estimate exists (64 for p90, 662 for p99)."""
    return min_passing(1, p, confidence) + 1


@lru_cache(maxsize=4096)
def discard_count(n: int, p: float, confidence: float = EARLY_STOPPING_CONFIDENCE) -> int:
    """Largest t >= 1 with min_passing(t) + t <= n, or 0 when even t = 1 does not fit."""
    if min_passing(1, p, confidence) + 1 > n:
        return 0
    lo, hi = 1, 2
    while min_passing(hi, p, confidence) + hi <= n:
        lo, hi = hi, hi * 2
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if min_passing(mid, p, confidence) + mid <= n:
            lo = mid
        else:
            hi = mid
    return lo


def early_stopping_estimate(sorted_values: np.ndarray, percentile: float) -> float | None:
    """The t*-th highest sample (t* from the binomial bound), or None with too few samples."""
    n = len(sorted_values)
    t = discard_count(n, percentile / 100.0)
    if t == 0:
        return None
    return _plain(sorted_values[n - t])


def _plain(value) -> int | float:
    """numpy scalar -> Python number, keeping ints as ints."""
    if isinstance(value, np.integer):
        return int(value)
    return float(value)


HISTOGRAM_BUCKETS = 30  # the client's --n-histogram-buckets default


def histogram(ordered: np.ndarray, n_buckets: int = HISTOGRAM_BUCKETS) -> dict:
    """The client's histogram of a sorted series (metrics_aggregator/registry.py, _log_spaced_edges and the COMPLETE
    path): n_buckets log-spaced buckets from max(min, 1) to max(max, 10 x that), the values clipped into that range so
    every value lands in a bucket."""
    if not len(ordered):
        return {"buckets": [], "counts": []}
    low = max(float(ordered[0]), 1.0)
    high = max(float(ordered[-1]), low * 10.0)
    log_lo, log_hi = math.log(low), math.log(high)
    step = (log_hi - log_lo) / n_buckets
    edges = [math.exp(log_lo + i * step) for i in range(n_buckets + 1)]
    counts, _ = np.histogram(np.clip(ordered, edges[0], edges[-1]), bins=edges)
    return {
        "buckets": [[float(edges[i]), float(edges[i + 1])] for i in range(n_buckets)],
        "counts": [int(c) for c in counts],
    }


def summarize(values: np.ndarray, *, early_stopping: bool) -> dict:
    """The client's statistics block for one series."""
    n = len(values)
    block: dict[str, Any]
    if n == 0:
        block = {
            "total": 0,
            "min": None,
            "max": None,
            "median": None,
            "avg": None,
            "std_dev": None,
            "percentiles": {percentile_key(p): None for p in PERCENTILE_GRID},
        }
        if early_stopping:
            block["early_stopping_percentiles"] = {percentile_key(p): None for p in EARLY_STOPPING_GRID}
        block["histogram"] = histogram(values)
        return block
    ordered = np.sort(values, kind="stable")
    total: int | float
    if values.dtype.kind in "iu":
        total = int(values.sum(dtype=np.int64))
    else:
        total = float(np.sum(values))
    percentiles = np.percentile(ordered, list(PERCENTILE_GRID), method="lower")
    pct = {percentile_key(p): float(v) for p, v in zip(PERCENTILE_GRID, percentiles, strict=True)}
    block = {
        "total": total,
        "min": _plain(ordered[0]),
        "max": _plain(ordered[-1]),
        "median": pct[percentile_key(50.0)],  # p50 of the grid, not computed a second time
        "avg": total / n,
        "std_dev": float(np.std(values, ddof=1)) if n > 1 else 0.0,
        "percentiles": pct,
    }
    if early_stopping:
        block["early_stopping_percentiles"] = {
            percentile_key(p): early_stopping_estimate(ordered, p) for p in EARLY_STOPPING_GRID
        }
    block["histogram"] = histogram(ordered)
    return block
