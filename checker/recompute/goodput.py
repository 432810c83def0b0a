"""Goodput and SLO attainment of one load point, from its per-sample arrays (DESIGN.md, "Goodput and SLO
attainment"). Plain Python and numpy: the `portal` command, the worker and the leaderboard use it alike.

A buyer's SLO is per request: TTFT <= X ms and TPOT <= Y ms (an interactivity target of Z tokens/s/user is
TPOT <= 1000 / Z ms). Over the point's tracked samples (the same set as n_samples_issued):
- a sample is good iff it completed with data and without an error.* event, its ttft <= X and its
  tpot <= Y; a sample without a tpot (nothing after its first chunk) is judged on ttft alone, and one
  that never received a first chunk has no ttft and is not good;
- attainment = good / tracked (failed and unfinished requests count as violations);
- goodput = good / (duration_ns / 1e9) requests/s; token goodput = output tokens of good samples / s;
- attainment for each target alone as well (ttft alone, tpot alone).
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass

import numpy as np

NPZ_FORMAT = 1  # bumped when the arrays kept per point change


@dataclass
class SampleSeries:
    """The per-sample numbers of one point's tracked samples, in issue order."""

    ttft_ns: np.ndarray  # int64, -1 when the sample never received a first chunk
    tpot_ns: np.ndarray  # float64, NaN when it has no tpot
    output_tokens: np.ndarray  # int64, 0 when it has no output text
    ok: np.ndarray  # bool: completed with data, no error.* event
    duration_ns: int  # the point's duration_ns (summed tracking blocks)

    @property
    def tracked(self) -> int:
        return int(len(self.ok))

    def to_npz(self) -> bytes:
        """The arrays as a compressed .npz (numpy's own format; the smallest exact types)."""
        out = io.BytesIO()
        np.savez_compressed(
            out,
            format=np.asarray([NPZ_FORMAT], dtype=np.int64),
            duration_ns=np.asarray([self.duration_ns], dtype=np.int64),
            ttft_ns=self.ttft_ns.astype(np.int64),
            tpot_ns=self.tpot_ns.astype(np.float64),
            output_tokens=self.output_tokens.astype(np.uint32),
            ok=self.ok.astype(bool),
        )
        return out.getvalue()

    @classmethod
    def from_npz(cls, data: bytes) -> SampleSeries:
        """Read what to_npz wrote; ValueError when it is not such a file."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                if int(arrays["format"][0]) != NPZ_FORMAT:
                    raise ValueError(f"per-sample arrays of format {int(arrays['format'][0])}")
                series = cls(
                    ttft_ns=arrays["ttft_ns"].astype(np.int64),
                    tpot_ns=arrays["tpot_ns"].astype(np.float64),
                    output_tokens=arrays["output_tokens"].astype(np.int64),
                    ok=arrays["ok"].astype(bool),
                    duration_ns=int(arrays["duration_ns"][0]),
                )
        except (OSError, KeyError, EOFError) as exc:
            raise ValueError(f"not a per-sample .npz: {exc}") from exc
        lengths = {len(series.ttft_ns), len(series.tpot_ns), len(series.output_tokens), len(series.ok)}
        if len(lengths) != 1:
            raise ValueError("per-sample arrays of different lengths")
        return series


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SloTarget:
    """Per-request targets: TTFT at most ttft_ms, TPOT at most tpot_ms (None: no limit on that metric)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None

    @classmethod
    def from_interactivity(cls, *, ttft_ms: float | None, tokens_per_s_per_user: float) -> SloTarget:
        return cls(ttft_ms=ttft_ms, tpot_ms=1000.0 / tokens_per_s_per_user)


class SloSpecError(ValueError):
    """A --slo text that cannot be read; the message says how to write it."""


SLO_KEYS = ("ttft_ms", "tpot_ms", "interactivity")


def parse_slo(text: str) -> SloTarget:
    """`ttft_ms=300,tpot_ms=50` (or `interactivity=20` tokens/s/user for tpot_ms=1000/20) as a SloTarget."""
    values: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if not sep or name not in SLO_KEYS:
            raise SloSpecError(
                f"'{part}' is not a target: write ttft_ms=MS, tpot_ms=MS or interactivity=TOKENS_PER_S, "
                "separated by commas (e.g. ttft_ms=300,tpot_ms=50)."
            )
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise SloSpecError(f"{name} must be a positive number, not '{raw.strip()}'.")
        values[name] = value
    if "tpot_ms" in values and "interactivity" in values:
        raise SloSpecError("Give tpot_ms or interactivity, not both (interactivity Z means tpot_ms=1000/Z).")
    if not values:
        raise SloSpecError("Give at least one target, e.g. ttft_ms=300,tpot_ms=50.")
    tpot_ms = values.get("tpot_ms")
    if "interactivity" in values:
        tpot_ms = 1000.0 / values["interactivity"]
    return SloTarget(ttft_ms=values.get("ttft_ms"), tpot_ms=tpot_ms)


def _ttft_met(series: SampleSeries, target: SloTarget) -> np.ndarray:
    if target.ttft_ms is None:
        return series.ttft_ns >= 0
    return (series.ttft_ns >= 0) & (series.ttft_ns <= target.ttft_ms * 1e6)


def _tpot_met(series: SampleSeries, target: SloTarget) -> np.ndarray:
    if target.tpot_ms is None:
        return np.ones(len(series.tpot_ns), dtype=bool)
    # NaN (no tpot) is judged on ttft alone, so it meets the tpot target
    return np.isnan(series.tpot_ns) | (series.tpot_ns <= target.tpot_ms * 1e6)


def evaluate(series: SampleSeries, target: SloTarget) -> dict:
    """Attainment and goodput of one point for one target (the keys of the report's "slo" block)."""
    ttft_met = series.ok & _ttft_met(series, target)
    tpot_met = series.ok & _tpot_met(series, target)
    tracked = series.tracked
    seconds = series.duration_ns / 1e9

    def block(good: np.ndarray, prefix: str) -> dict:
        requests = int(good.sum())
        tokens = int(series.output_tokens[good].sum())
        return {
            f"{prefix}good_requests": requests,
            f"{prefix}attainment": requests / tracked if tracked else None,
            f"{prefix}goodput_rps": requests / seconds if seconds > 0 else None,
            f"{prefix}goodput_tps": tokens / seconds if seconds > 0 else None,
        }

    return {
        "ttft_ms": target.ttft_ms,
        "tpot_ms": target.tpot_ms,
        "tracked_requests": tracked,
        **block(ttft_met & tpot_met, ""),
        **block(ttft_met, "ttft_"),
        **block(tpot_met, "tpot_"),
    }
