"""The portal's own metrics and goodput of an imported load point, from its RequestRecords (DESIGN.md definitions).

Whatever tool wrote the files, the portal judges its requests one way: system_tps = output tokens of the
successful requests / the tool's measurement window; interactivity (tps_per_user) = 1000 / TPOT P90 in ms;
TTFT P90 in ms; percentiles with numpy's "lower" method, as the MLPerf client. The other tools count output
tokens themselves and record no first-chunk text, so a request's TPOT here is (end - first token) /
(output tokens - 1), skipped when it has fewer than 2 tokens.

Goodput (DESIGN.md "Goodput and SLO attainment"): a request is good iff it succeeded, its TTFT <= the TTFT
limit and its TPOT <= the TPOT limit (no TPOT: judged on TTFT alone); attainment = good / all requests of the
point, failed ones included (as AIPerf and GuideLLM count them). The judging is checker.recompute.goodput's, the same
function the portal's own points use: the records are turned into its per-sample arrays.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from checker.read.kinds.base import RequestRecord
from checker.recompute.goodput import SampleSeries, SloTarget, evaluate

# The older MLPerf Inference llama3.1-8b limits (DESIGN.md), used when no SLO is given.
DEFAULT_TTFT_SLO_MS = 2000.0
DEFAULT_TPOT_SLO_MS = 100.0


@dataclass(frozen=True)
class Slo:
    """A buyer's per-request service level: TTFT and TPOT limits in milliseconds."""

    ttft_ms: float = DEFAULT_TTFT_SLO_MS
    tpot_ms: float = DEFAULT_TPOT_SLO_MS


def request_ttft_s(request: RequestRecord) -> float | None:
    if request.first_token_s is None:
        return None
    return request.first_token_s - request.issued_s


def request_tpot_s(request: RequestRecord) -> float | None:
    if request.first_token_s is None or request.end_s is None or not request.output_tokens:
        return None
    if request.output_tokens < 2:
        return None
    return (request.end_s - request.first_token_s) / (request.output_tokens - 1)


def request_series(requests: Sequence[RequestRecord], seconds: float | None) -> SampleSeries:
    """The records as the per-sample arrays checker.recompute.goodput judges (nanoseconds; -1 / NaN when missing)."""
    ttft_ns, tpot_ns, tokens, ok = [], [], [], []
    for request in requests:
        ttft = request_ttft_s(request)
        tpot = request_tpot_s(request)
        ttft_ns.append(-1 if ttft is None else round(ttft * 1e9))
        tpot_ns.append(math.nan if tpot is None else tpot * 1e9)
        tokens.append(request.output_tokens or 0)
        ok.append(bool(request.ok and request.end_s is not None))
    return SampleSeries(
        ttft_ns=np.asarray(ttft_ns, dtype=np.int64),
        tpot_ns=np.asarray(tpot_ns, dtype=np.float64),
        output_tokens=np.asarray(tokens, dtype=np.int64),
        ok=np.asarray(ok, dtype=bool),
        duration_ns=round(seconds * 1e9) if seconds else 0,
    )


# The portal's figures of an imported run read its requests as MLPerf's client reads its own (docs/previews.md).
PORTAL_PERCENTILE_DEFINITION = (
    'The portal takes the percentile as the MLPerf client does: numpy\'s "lower" method, the measured value of the '
    "request at rank floor(0.9 x (n - 1)) in sorted order, never an interpolation between two requests; TTFT from "
    "each request's start to its first token, over the successful requests."
)


def _lower(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), p, method="lower"))


def portal_metrics(
    requests: Iterable[RequestRecord], *, duration_s: float | None, concurrency: int | None, slo: Slo
) -> dict[str, float | int | None]:
    """system_tps, tps_per_user, ttft_p90_ms and goodput of one imported point, by the portal's definitions."""
    requests = list(requests)
    ok = [r for r in requests if r.ok and r.end_s is not None]
    ttfts = [t for t in (request_ttft_s(r) for r in ok) if t is not None]
    tpots = [t for t in (request_tpot_s(r) for r in ok) if t is not None]
    tokens = sum(r.output_tokens or 0 for r in ok)
    seconds = duration_s if duration_s is not None and math.isfinite(duration_s) and duration_s > 0 else None
    tpot_p90 = _lower(tpots, 90.0)
    ttft_p90 = _lower(ttfts, 90.0)
    judged = evaluate(request_series(requests, seconds), SloTarget(ttft_ms=slo.ttft_ms, tpot_ms=slo.tpot_ms))
    tracked = len(requests)
    return {
        "concurrency": concurrency,
        "requests": tracked,
        "requests_ok": len(ok),
        "output_tokens": tokens,
        "duration_s": seconds,
        "system_tps": tokens / seconds if seconds else None,
        "tps_per_user": 1.0 / tpot_p90 if tpot_p90 else None,  # = 1000 / (TPOT P90 in ms)
        "tpot_p90_ms": tpot_p90 * 1000.0 if tpot_p90 is not None else None,
        "ttft_p90_ms": ttft_p90 * 1000.0 if ttft_p90 is not None else None,
        "slo_ttft_ms": slo.ttft_ms,
        "slo_tpot_ms": slo.tpot_ms,
        "attainment": judged["attainment"],
        "attainment_ttft": judged["ttft_attainment"],
        "attainment_tpot": judged["tpot_attainment"],
        "goodput": judged["goodput_rps"],
        "token_goodput": judged["goodput_tps"],
    }


def relative_difference(reported: float | int | None, recomputed: float | int | None) -> float | None:
    """|a - b| / max(|a|, |b|) (0 when both are 0); None when either is missing or not finite."""
    if reported is None or recomputed is None:
        return None
    a, b = float(reported), float(recomputed)
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale
