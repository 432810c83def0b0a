"""Input kind `vllm_bench`: the result JSON of `vllm bench serve --save-result --save-detailed`.

Written from vLLM's source (vllm/benchmarks/serve.py: `calculate_metrics`, `benchmark`, `main`) and checked on
real outputs of vLLM 0.33.0 (tests/fixtures/importers/vllm_bench). One load point per file (one
--max-concurrency).

* A request succeeded when its `errors` entry is empty; failed requests are left out of every statistic (and
  of vLLM's goodput) and have output length 0.
* Per successful request: TTFT (`ttfts`, s), end-to-end latency (`latencies`, s; vLLM 0.33 writes them, older
  versions did not, and then TPOT and E2EL are not recomputed), TPOT = (latency - TTFT) / (output tokens - 1)
  for requests with more than one output token; ITL pools every inter-chunk gap of every success (`itls`).
* Statistics: numpy mean, numpy median, numpy's default (linear) percentiles, times x 1000 in ms.
* `output_throughput` = sum of `output_lens` / `duration`; `request_throughput` = completed / `duration`; the
  duration (the benchmark's wall time, taken around all requests) is only in the file.
* For the portal's metrics a request starts at its `start_times` entry (0 when the file has none), its first
  token comes TTFT later and it ends `latencies` later (TTFT + the sum of its gaps when not written).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from checker.read.inputs.limits import Limits
from checker.read.kinds._json import FieldReader, head, read_object
from checker.read.kinds.base import ImportedPoint, ImportedRun, RequestRecord
from checker.report import Findings

PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
PER_REQUEST = ("ttfts", "itls", "output_lens", "errors")
OPTIONAL_PER_REQUEST = ("latencies", "start_times")


class VllmBenchKind:
    """vLLM's `vllm bench serve --save-result --save-detailed` JSON."""

    name = "vllm_bench"
    percentile_definition = "vLLM bench takes numpy's default (linear) percentile: between the two requests around the 90 % rank it interpolates a value no request measured; TTFT as vLLM times it, over the successful requests."
    label = "vLLM bench serve --save-result --save-detailed JSON"
    importer = True
    order = 40

    def detect_folder(self, folder: Path) -> bool:
        return any(self.claims(path) for path in folder.glob("*.json"))

    def claims(self, path: Path) -> bool:
        if path.suffix != ".json":
            return False
        start = head(path, 8192)
        return b'"endpoint_type"' in start and b'"burstiness"' in start and b'"tokenizer_id"' in start

    def read(self, paths: list[Path], *, findings: Findings, limits: Limits) -> ImportedRun | None:
        points = []
        for path in paths:
            result = read_object(path, display=path.name, findings=findings, limits=limits)
            if result is None:
                continue
            point = self._point(result, path.name, findings)
            if point is not None:
                points.append(point)
        if not points:
            return None
        return ImportedRun(tool=self.name, tool_version=None, points=points)

    def _point(self, result: dict, file: str, findings: Findings) -> ImportedPoint | None:
        fields = FieldReader(file, findings, writer="vLLM")
        lists = {key: result.get(key) for key in PER_REQUEST}
        lengths = {len(v) for v in lists.values() if isinstance(v, list)}
        if any(not isinstance(v, list) for v in lists.values()) or len(lengths) != 1:
            findings.error(
                "import-schema",
                f"{file} lacks vLLM's per-request lists ({', '.join(PER_REQUEST)}) of one length each.",
                file=file,
                fix="Run `vllm bench serve` with --save-result --save-detailed and import the file it wrote.",
            )
            return None
        count = lengths.pop()
        latencies = fields.numbers(result, "latencies", minimum=0.0)
        starts = fields.numbers(result, "start_times")
        latencies = latencies if latencies is not None and len(latencies) == count else None
        starts = starts if starts is not None and len(starts) == count else None
        errors: list = lists["errors"]  # type: ignore[assignment]
        rows: list = lists["itls"]  # type: ignore[assignment]
        lens: list = lists["output_lens"]  # type: ignore[assignment]
        ok = [not error for error in errors]
        ttfts: list[float | None] = fields.numbers(result, "ttfts", minimum=0.0) or []
        tokens = [fields.count(lens, index, at="/output_lens") or 0 for index in range(count)]
        gap_rows = [fields.numbers(rows, index, at="/itls", minimum=0.0) for index in range(count)]
        gaps = [g for row, good in zip(gap_rows, ok, strict=True) if good and row is not None for g in row]
        series: list[tuple[str, list[float | None]]] = [
            ("ttft_ms", [t for t, good in zip(ttfts, ok, strict=True) if good]),
            ("itl_ms", gaps),
        ]
        if latencies is not None:
            e2els: list[float | None] = []
            tpots: list[float | None] = []
            for index, good in enumerate(ok):
                latency, ttft = latencies[index], ttfts[index]
                if not good or latency is None:
                    continue
                e2els.append(latency)
                if ttft is not None and tokens[index] > 1:
                    tpots.append((latency - ttft) / (tokens[index] - 1))
            series += [("tpot_ms", tpots), ("e2e_ms", e2els)]
        duration = fields.number(result, "duration", minimum=0.0)
        recomputed = _recomputed_figures(result, series, ok, tokens, duration)
        concurrency = fields.count(result, "max_concurrency", minimum=1)
        records = _request_records(ok, ttfts, starts, latencies, gap_rows, tokens)
        return ImportedPoint(
            concurrency=concurrency,
            label=f"max_concurrency@{concurrency}" if concurrency else file,
            file=file,
            reported=self._reported(result, fields),
            recomputed=recomputed,
            requests=sorted(records, key=lambda record: record.issued_s),
            duration_s=duration,
        )

    @staticmethod
    def _reported(result: dict, fields: FieldReader) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        for prefix, name in (("ttft_ms", "ttft"), ("itl_ms", "itl"), ("tpot_ms", "tpot"), ("e2e_ms", "e2el")):
            for key, field in (
                ("mean", f"mean_{name}_ms"),
                ("p50", f"median_{name}_ms"),
                ("p90", f"p90_{name}_ms"),
                ("p99", f"p99_{name}_ms"),
            ):
                if prefix == "tpot_ms" and key in ("p90", "p99"):
                    continue
                value = fields.number(result, field, minimum=0.0)
                if value is not None:
                    out[f"{prefix}_{key}"] = value
        for key, field in (
            ("request_throughput", "request_throughput"),
            ("output_token_throughput", "output_throughput"),
            ("duration_s", "duration"),
        ):
            value = fields.number(result, field, minimum=0.0)
            if value is not None:
                out[key] = value
        for key, field in (("requests_completed", "completed"), ("requests_failed", "failed")):
            counted = fields.count(result, field)
            if counted is not None:
                out[key] = counted
        return out

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        run = self.read(paths, findings=findings, limits=limits)
        for point in run.points if run else []:
            yield from point.requests


KIND = VllmBenchKind()


def _recomputed_figures(
    result: dict,
    series: list[tuple[str, list[float | None]]],
    ok: list[bool],
    tokens: list[int],
    duration: float | None,
) -> dict[str, float | int]:
    """vLLM's summary figures recomputed from its per-request lists: counts, mean/median/percentiles (ms) of
    each series, and the throughputs over the run's duration."""
    percentiles = sorted({float(m.group(1)) for key in result if (m := PERCENTILE_KEY.match(key))})
    recomputed: dict[str, float | int] = {
        "requests_completed": sum(ok),
        "requests_failed": len(ok) - sum(ok),
    }
    for prefix, values in series:
        clean = [v for v in values if v is not None]
        if not clean:
            continue
        data = np.asarray(clean, dtype=np.float64)
        recomputed[f"{prefix}_mean"] = float(np.mean(data)) * 1000
        recomputed[f"{prefix}_p50"] = float(np.median(data)) * 1000
        for p in percentiles:
            if p in (90.0, 99.0) and prefix != "tpot_ms":
                recomputed[f"{prefix}_p{int(p)}"] = float(np.percentile(data, p)) * 1000
    if duration:
        recomputed["request_throughput"] = sum(ok) / duration
        recomputed["output_token_throughput"] = (
            sum(t for t, good in zip(tokens, ok, strict=True) if good) / duration
        )
    return recomputed


def _request_records(
    ok: list[bool],
    ttfts: list[float | None],
    starts: list[float | None] | None,
    latencies: list[float | None] | None,
    gap_rows: list[list[float | None] | None],
    tokens: list[int],
) -> list[RequestRecord]:
    """One RequestRecord per request (seconds from the run's start); a latency missing is rebuilt from the
    TTFT and the inter-token gaps."""
    records = []
    for index, good in enumerate(ok):
        ttft = ttfts[index]
        start = (starts[index] if starts is not None else None) or 0.0
        latency = latencies[index] if latencies is not None else None
        if latency is None and ttft is not None:
            row = gap_rows[index]
            latency = ttft + sum(g for g in row if g is not None) if row is not None else None
        records.append(
            RequestRecord(
                issued_s=start,
                first_token_s=start + ttft if good and ttft else None,
                end_s=start + latency if good and latency is not None else None,
                output_tokens=tokens[index] if good else None,
                ok=good,
            )
        )
    return records
