"""Input kind `guidellm`: GuideLLM's `benchmarks.json` (or .yaml-free JSON of `guidellm run --output kind=json`).

One load point per benchmark of the report (a concurrency sweep writes one per stream count). GuideLLM 0.8
definitions, as read from its source (guidellm.schemas.base.request_stats, guidellm.benchmark.schemas.metrics,
guidellm.schemas.base.statistics), recomputed here from each request's own timings:

* the measurement window is the benchmark's scheduler_metrics measure_start_time .. measure_end_time; a request
  counts when it overlaps the window (request start <= window end and request end >= window start);
* request latency = request_end - request_start (seconds); TTFT = first_token_iteration - request_start (ms), over
  the requests whose first token overlaps the window; ITL = (last_token - first_token) / (output tokens - 1) ms,
  weighted by output tokens - 1, over the requests whose first token..end overlaps the window; TPOT = (last_token
  - request_start) / output tokens ms (TTFT included), weighted by output tokens;
* output tokens = the server's usage count, else the number of streamed token iterations;
* statistics are of a weighted distribution: equal values merged, mean = sum(value x weight) / sum(weights),
  percentile p = the first value whose cumulative probability reaches p (no interpolation);
* requests/s and output tokens/s are the means of GuideLLM's rate distributions: events (a request's end, or its
  tokens spread evenly over its streamed iterations) inside the window, times within 0.1 ms merged, each event's
  rate = its weight / the half-gaps around it, weighted by those durations;
* `successful` requests are the figures; `errored` count as failed; `incomplete` (cancelled at the end of a
  benchmark) are neither, as GuideLLM reports them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from checker.read.inputs.limits import Limits
from checker.read.kinds._json import FieldReader, dig, head, read_object
from checker.read.kinds.base import ImportedPoint, ImportedRun, RequestRecord
from checker.report import Findings

MERGE_THRESHOLD_S = 1e-4
MAX_ITERATIONS = 1_000_000  # streamed iterations of one request; more is not a real response
EPSILON = 1e-6
STATUSES = ("successful", "errored", "incomplete")


class _Request:
    """One request of a GuideLLM benchmark, its timings read once (seconds on GuideLLM's wall clock)."""

    __slots__ = (
        "_request_start",
        "end",
        "first",
        "iterations",
        "last",
        "start",
        "status",
        "suspect",
        "tokens",
    )

    def __init__(self, row: dict, status: str, fields: FieldReader, at: str) -> None:
        timings = dig(row, "info", "timings")
        timings = timings if isinstance(timings, dict) else {}
        at_timings = f"{at}/info/timings"
        self.status = status  # states: a GuideLLM request's own outcome, not a portal state

        def clock(key: str) -> float | None:
            return fields.number(timings, key, at=at_timings)

        request_start = clock("request_start")
        self.start = request_start if request_start is not None else clock("resolve_start")
        request_end = clock("request_end")
        self.end = request_end if request_end is not None else clock("resolve_end")
        self.first = clock("first_token_iteration")
        self.last = clock("last_token_iteration")
        iterations = timings.get("token_iterations")
        self.suspect = (
            isinstance(iterations, int) and not isinstance(iterations, bool) and iterations > MAX_ITERATIONS
        )
        # a hostile count must not size an array: over MAX_ITERATIONS is counted by the caller, below 0 named here
        self.iterations = 0 if self.suspect else fields.count(timings, "token_iterations", at=at_timings) or 0
        tokens = fields.count(row, "output_metrics", "total_tokens", at=at)
        self.tokens: int | None = tokens if tokens is not None else self.iterations or None
        self._request_start = request_start

    @property
    def latency_s(self) -> float | None:
        if self._request_start is None or self.end is None:
            return None
        return self.end - self._request_start

    @property
    def ttft_ms(self) -> float | None:
        if self.first is None or self._request_start is None:
            return None
        return 1000 * (self.first - self._request_start)

    @property
    def itl_ms(self) -> float | None:
        if self.first is None or self.last is None or self.tokens is None or self.tokens <= 1:
            return None
        return 1000 * (self.last - self.first) / (self.tokens - 1)

    @property
    def tpot_ms(self) -> float | None:
        last = self.last if self.last else self.end
        if self._request_start is None or last is None or not self.tokens:
            return None
        return 1000 * (last - self._request_start) / self.tokens

    def token_events(self) -> list[tuple[float, float]]:
        """(time, tokens): the first token alone, then the rest spread evenly over the streamed iterations."""
        if self.first is None or self.last is None or self.iterations <= 1:
            at = self.last if self.last is not None else self.end
            return [] if at is None else [(at, float(self.tokens or 0))]
        events = [(self.first, 1.0 * bool(self.tokens))]
        if self.tokens is not None and self.tokens > 1:
            per_iteration = (self.tokens - 1.0) / (self.iterations - 1.0)
            times = np.linspace(self.first, self.last, num=self.iterations)[1:]
            events.extend((float(t), per_iteration) for t in times)
        return events


def _overlapping(
    requests: list[_Request], window: tuple[float, float], start: Callable, end: Callable
) -> list[_Request]:
    out = []
    for request in requests:
        finish = end(request)
        if finish is None:
            continue
        begin = start(request)
        begin = finish if begin is None else begin
        if finish >= window[0] and begin <= window[1]:
            out.append(request)
    return out


def weighted_summary(pairs: list[tuple[float, float]]) -> dict[str, float] | None:
    """GuideLLM's DistributionSummary of (value, weight) pairs: mean and the p50/p90/p99 it reports."""
    if not pairs:
        return None
    data = np.asarray(pairs, dtype=np.float64)
    values, inverse = np.unique(data[:, 0], return_inverse=True)
    weights = np.zeros_like(values)
    np.add.at(weights, inverse, data[:, 1])
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    if values.size == 0:
        return None
    total = weights.sum()
    if total <= EPSILON:
        weights = np.ones_like(values)
        total = weights.sum()
    probabilities = weights / total
    cumulative = np.cumsum(probabilities)

    def at(p: float) -> float:
        index = min(int(np.searchsorted(cumulative, p, side="left")), values.size - 1)
        return float(values[index])

    return {
        "mean": float(np.sum(values * probabilities)),
        "p50": at(0.5),
        "p90": at(0.9),
        "p99": at(0.99),
    }


def rate_mean(events: list[tuple[float, float]], window: tuple[float, float]) -> float | None:
    """The mean of GuideLLM's rate distribution of weighted events inside the window."""
    start, end = window
    kept = [(t, w) for t, w in events if start <= t <= end]
    kept = [(start, 0.0), *kept, (end, 0.0)]
    data = np.asarray(kept, dtype=np.float64)
    times, inverse = np.unique(data[:, 0], return_inverse=True)
    weights = np.zeros_like(times)
    np.add.at(weights, inverse, data[:, 1])
    merged_times: list[float] = []
    merged_weights: list[float] = []
    for t, w in zip(times.tolist(), weights.tolist(), strict=True):
        if merged_times and t - merged_times[-1] <= MERGE_THRESHOLD_S:
            merged_weights[-1] += w
        else:
            merged_times.append(t)
            merged_weights.append(w)
    if len(merged_times) <= 1:
        return None
    t = np.asarray(merged_times)
    occurrences = np.asarray(merged_weights)
    midpoints = (t[1:] + t[:-1]) / 2
    durations = np.empty_like(t)
    durations[0] = midpoints[0] - t[0]
    durations[1:-1] = midpoints[1:] - midpoints[:-1]
    durations[-1] = np.clip(t[-1] - midpoints[-1], EPSILON, None)
    rates = occurrences / durations
    summary = weighted_summary(list(zip(rates.tolist(), durations.tolist(), strict=True)))
    return None if summary is None else summary["mean"]


def _reported(metrics: dict, fields: FieldReader, at: str) -> dict[str, float | int]:
    """GuideLLM's own figures of one benchmark (its `metrics` at `at`), the successful requests' statistics."""
    out: dict[str, float | int] = {}

    def put(key: str, *path: str, scale: float = 1.0) -> None:
        value = fields.number(metrics, *path, at=f"{at}/metrics", minimum=0.0)
        if value is not None:
            out[key] = value * scale

    for prefix, name, scale in (
        ("ttft_ms", "time_to_first_token_ms", 1.0),
        ("itl_ms", "inter_token_latency_ms", 1.0),
        ("tpot_ms", "time_per_output_token_ms", 1.0),
        ("e2e_ms", "request_latency", 1000.0),
    ):
        put(f"{prefix}_mean", name, "successful", "mean", scale=scale)
        for p in ("p50", "p90", "p99"):
            if prefix == "tpot_ms" and p != "p50":
                continue
            put(f"{prefix}_{p}", name, "successful", "percentiles", p, scale=scale)
    put("request_throughput", "requests_per_second", "successful", "mean")
    put("output_token_throughput", "output_tokens_per_second", "successful", "mean")
    for key, status in (("requests_completed", "successful"), ("requests_failed", "errored")):
        value = fields.count(metrics, "request_totals", status, at=f"{at}/metrics")
        if value is not None:
            out[key] = value
    return out


def _recomputed(by_status: dict[str, list[_Request]], window: tuple[float, float]) -> dict:
    out: dict[str, float | int] = {}
    default_start = lambda r: r.start  # noqa: E731 - GuideLLM's windows, one per metric
    default_end = lambda r: r.end  # noqa: E731
    successful = _overlapping(by_status["successful"], window, default_start, default_end)
    errored = _overlapping(by_status["errored"], window, default_start, default_end)
    first_token = _overlapping(by_status["successful"], window, default_start, lambda r: r.first)
    after_first = _overlapping(by_status["successful"], window, lambda r: r.first, default_end)
    series = {
        "ttft_ms": [(r.ttft_ms or 0.0, 1.0) for r in first_token],
        "itl_ms": [(r.itl_ms or 0.0, (r.tokens or 1.0) - 1.0) for r in after_first],
        "tpot_ms": [(r.tpot_ms or 0.0, float(r.tokens or 0.0)) for r in successful],
        "e2e_ms": [((r.latency_s or 0.0) * 1000.0, 1.0) for r in successful],
    }
    for prefix, pairs in series.items():
        summary = weighted_summary(pairs)
        if summary is None:
            continue
        out[f"{prefix}_mean"] = summary["mean"]
        for p in ("p50", "p90", "p99"):
            if prefix == "tpot_ms" and p != "p50":
                continue
            out[f"{prefix}_{p}"] = summary[p]
    requests_rate = rate_mean([(r.end, 1.0) for r in successful if r.end is not None], window)
    if requests_rate is not None:
        out["request_throughput"] = requests_rate
    tokens_rate = rate_mean([event for r in successful for event in r.token_events()], window)
    if tokens_rate is not None:
        out["output_token_throughput"] = tokens_rate
    out["requests_completed"] = len(successful)
    out["requests_failed"] = len(errored)
    out["duration_s"] = window[1] - window[0]  # GuideLLM's duration is its measurement window
    return out


def _records(by_status: dict[str, list[_Request]]) -> list[RequestRecord]:
    records = []
    for status in STATUSES:
        for request in by_status[status]:
            if request.start is None:
                continue
            records.append(
                RequestRecord(
                    issued_s=request.start,
                    first_token_s=request.first,
                    end_s=request.end if status != "incomplete" else None,
                    output_tokens=request.tokens,
                    ok=status == "successful",
                    turn=None,
                )
            )
    return sorted(records, key=lambda r: r.issued_s)


class GuideLLMKind:
    """GuideLLM's benchmarks.json report."""

    name = "guidellm"
    percentile_definition = "GuideLLM takes the first value whose cumulative share reaches 90 % of a weighted distribution (equal values merged, no interpolation); TTFT from the request's start to its first token iteration, over the requests whose first token falls inside the measurement window."
    label = "GuideLLM benchmarks.json (guidellm run --output kind=json)"
    importer = True
    order = 10

    def detect_folder(self, folder: Path) -> bool:
        return any(self.claims(path) for path in folder.glob("*.json"))

    def claims(self, path: Path) -> bool:
        if path.suffix != ".json":
            return False
        start = head(path)
        return b'"guidellm_version"' in start or (
            b'"benchmarks"' in start and b'"generative_benchmark"' in start
        )

    def read(self, paths: list[Path], *, findings: Findings, limits: Limits) -> ImportedRun | None:
        version: str | None = None
        points: list[ImportedPoint] = []
        for path in paths:
            report = read_object(path, display=path.name, findings=findings, limits=limits)
            if report is None:
                continue
            file_version = dig(report, "metadata", "guidellm_version")
            version = version or (file_version if isinstance(file_version, str) else None)
            benchmarks = report.get("benchmarks")
            if not isinstance(benchmarks, list) or not benchmarks:
                findings.error(
                    "import-schema",
                    f"{path.name} has no 'benchmarks' list: it is not a GuideLLM report.",
                    file=path.name,
                    pointer="/benchmarks",
                    fix="Import the benchmarks.json that `guidellm run --output kind=json` wrote.",
                )
                continue
            fields = FieldReader(path.name, findings, writer="GuideLLM")
            for index, benchmark in enumerate(benchmarks):
                point = self._point(benchmark, index, fields)
                if point is not None:
                    points.append(point)
        if not points:
            return None
        return ImportedRun(tool=self.name, tool_version=version, points=points)

    def _point(self, benchmark: Any, index: int, fields: FieldReader) -> ImportedPoint | None:
        pointer = f"/benchmarks/{index}"
        file, findings = fields.file, fields.findings
        metrics = dig(benchmark, "metrics")
        start = fields.number(benchmark, "scheduler_metrics", "measure_start_time", at=pointer)
        end = fields.number(benchmark, "scheduler_metrics", "measure_end_time", at=pointer)
        requests = dig(benchmark, "requests")
        if not isinstance(metrics, dict) or start is None or end is None or not isinstance(requests, dict):
            findings.error(
                "import-schema",
                f"{file}: benchmark {index} lacks metrics, its measurement window or its requests.",
                file=file,
                pointer=pointer,
                fix="Import the benchmarks.json exactly as GuideLLM wrote it.",
            )
            return None
        by_status: dict[str, list[_Request]] = {}
        for status in STATUSES:
            rows = requests.get(status)
            rows = rows if isinstance(rows, list) else []
            by_status[status] = [
                _Request(row, status, fields, f"{pointer}/requests/{status}/{row_index}")
                for row_index, row in enumerate(rows)
                if isinstance(row, dict)
            ]
        suspects = sum(r.suspect for rows in by_status.values() for r in rows)
        if suspects:
            findings.warning(
                "import-schema",
                f"{file}: benchmark {index} has {suspects} request(s) with an impossible token_iterations count "
                f"(over {MAX_ITERATIONS:,}); their tokens were counted at their last token instead.",
                file=file,
                pointer=pointer,
                fix="Import the benchmarks.json exactly as GuideLLM wrote it.",
            )
        strategy = dig(benchmark, "config", "strategy")
        strategy = strategy if isinstance(strategy, dict) else {}
        concurrency = fields.count(strategy, "streams", at=f"{pointer}/config/strategy", minimum=1)
        kind = strategy.get("type_")
        label = f"{kind}@{concurrency}" if kind and concurrency else f"benchmark {index}"
        label = re.sub(r"[^\w@.-]", "_", str(label))
        duration = fields.number(benchmark, "duration", at=pointer, minimum=0.0)
        window = (start, end)
        reported = _reported(metrics, fields, pointer)
        if duration is not None:
            reported["duration_s"] = duration
        return ImportedPoint(
            concurrency=concurrency,
            label=label,
            file=file,
            reported=reported,
            recomputed=_recomputed(by_status, window),
            requests=_records(by_status),
            duration_s=duration,
            extra={"incomplete": len(by_status["incomplete"])},
        )

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        run = self.read(paths, findings=findings, limits=limits)
        for point in run.points if run else []:
            yield from point.requests


KIND = GuideLLMKind()
