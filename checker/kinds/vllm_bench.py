"""Input kind `vllm_bench`: the result JSON of `vllm bench serve --save-result --save-detailed`.

Built from vLLM's source (vllm/benchmarks/serve.py: `calculate_metrics`, `benchmark`, `main`), NOT from a real
run: `vllm bench serve` ships in the `vllm` package (PyTorch, a GPU build), which could not be run where the
other importers' fixtures were made (docs/importers.md). One load point per file (one --max-concurrency).

* A request succeeded when its `errors` entry is empty; failed requests are left out of every statistic (and
  of vLLM's goodput).
* TTFT per successful request (`ttfts`, seconds); ITL pools every inter-chunk gap of every successful request
  (`itls`, lists); TPOT = (latency - TTFT) / (output tokens - 1) needs each request's latency, which the file
  does not keep, so TPOT and E2EL are reported but cannot be recomputed.
* Statistics: numpy mean, numpy median, numpy's default (linear) percentiles, times x 1000 in ms.
* `output_throughput` = sum of `output_lens` / `duration`; `request_throughput` = completed / `duration`; the
  duration itself (the benchmark's wall time) is only in the file, so throughputs are recomputed from it.
* For the portal's metrics a request has no wall-clock start: it is placed at 0 with its TTFT and its end at
  TTFT + the sum of its inter-chunk gaps (vLLM's latency minus the time after the last chunk).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from checker.inputs.limits import Limits
from checker.kinds._json import head, number, read_object
from checker.kinds.base import ImportedPoint, ImportedRun, RequestRecord
from checker.report import Findings

PERCENTILE_KEY = re.compile(r"^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
PER_REQUEST = ("ttfts", "itls", "output_lens", "errors")


class VllmBenchKind:
    """vLLM's `vllm bench serve --save-result --save-detailed` JSON."""

    name = "vllm_bench"
    label = "vLLM bench serve --save-result --save-detailed JSON (format from vLLM's source)"
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
        reported = self._reported(result)
        duration = number(result.get("duration"))
        ok = [not error for error in lists["errors"]]  # type: ignore[union-attr]
        ttfts = [number(t) for t, good in zip(lists["ttfts"], ok, strict=True) if good]  # type: ignore[arg-type]
        gaps = [
            number(g)
            for row, good in zip(lists["itls"], ok, strict=True)  # type: ignore[arg-type]
            if good and isinstance(row, list)
            for g in row
        ]
        tokens = [t if isinstance(t, int) and not isinstance(t, bool) else 0 for t in lists["output_lens"]]  # type: ignore[union-attr]
        recomputed: dict[str, float | int] = {
            "requests_completed": sum(ok),
            "requests_failed": len(ok) - sum(ok),
        }
        percentiles = sorted(
            {
                float(m.group(1))
                for key in result
                if (m := PERCENTILE_KEY.match(key)) and m.group(2) in ("ttft", "itl")
            }
        )
        for prefix, values in (("ttft_ms", ttfts), ("itl_ms", gaps)):
            clean = [v for v in values if v is not None]
            if not clean:
                continue
            data = np.asarray(clean, dtype=np.float64)
            recomputed[f"{prefix}_mean"] = float(np.mean(data)) * 1000
            recomputed[f"{prefix}_p50"] = float(np.median(data)) * 1000
            for p in percentiles:
                if p in (90.0, 99.0):
                    recomputed[f"{prefix}_p{int(p)}"] = float(np.percentile(data, p)) * 1000
        if duration:
            recomputed["request_throughput"] = sum(ok) / duration
            recomputed["output_token_throughput"] = (
                sum(t for t, good in zip(tokens, ok, strict=True) if good) / duration
            )
        concurrency = result.get("max_concurrency")
        concurrency = (
            concurrency if isinstance(concurrency, int) and not isinstance(concurrency, bool) else None
        )
        records = []
        for index, good in enumerate(ok):
            ttft = number(lists["ttfts"][index])  # type: ignore[index]
            row = lists["itls"][index]  # type: ignore[index]
            decode = (
                sum(g for g in (number(x) for x in row) if g is not None) if isinstance(row, list) else 0.0
            )
            records.append(
                RequestRecord(
                    issued_s=0.0,
                    first_token_s=ttft if good and ttft else None,
                    end_s=(ttft + decode) if good and ttft is not None else None,
                    output_tokens=tokens[index] if good else None,
                    ok=good,
                )
            )
        return ImportedPoint(
            concurrency=concurrency,
            label=f"max_concurrency@{concurrency}" if concurrency else file,
            file=file,
            reported=reported,
            recomputed=recomputed,
            requests=records,
            duration_s=duration,
        )

    @staticmethod
    def _reported(result: dict) -> dict[str, float | int]:
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
                value = number(result.get(field))
                if value is not None:
                    out[f"{prefix}_{key}"] = value
        for key, field in (
            ("request_throughput", "request_throughput"),
            ("output_token_throughput", "output_throughput"),
            ("duration_s", "duration"),
        ):
            value = number(result.get(field))
            if value is not None:
                out[key] = value
        for key, field in (("requests_completed", "completed"), ("requests_failed", "failed")):
            counted: Any = result.get(field)
            if isinstance(counted, int) and not isinstance(counted, bool):
                out[key] = counted
        return out

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        run = self.read(paths, findings=findings, limits=limits)
        for point in run.points if run else []:
            yield from point.requests


KIND = VllmBenchKind()
