"""Input kind `inference_perf`: the report folder of Kubernetes' inference-perf, its `*lifecycle_metrics.json`
(`stage_<N>_lifecycle_metrics.json` per load stage, `summary_lifecycle_metrics.json`) and the per-request
`per_request_lifecycle_metrics.json` (report.request_lifecycle.per_request: true).

One load point per run folder with one stage (a concurrency sweep is one run per concurrency; the per-request
report does not say which stage a request belonged to, so a run of several stages is compared as a whole, from
its summary). inference-perf 0.7 definitions, as read from its source (inference_perf.reportgen.base:
summarize_requests, compute_request_latency_metrics, summarize):

* a request with an `error` is a failure; every latency and throughput is over the successes only;
* the run's time = the last end - the first start over all requests, failures included; requests/s =
  successes / that time, output tokens/s = the successes' output tokens / that time;
* request latency = end - start; TTFT = the first output token's time - start, TPOT = (last token time - first
  token time) / (output tokens - 1), both only for requests with more than one token time; ITL pools every gap
  between consecutive output token times of all successes (not one value per request);
* output tokens = inference-perf's own re-tokenised count (`output_tokens`), or the server's
  `completion_tokens` when the run set report.request_lifecycle.use_server_output_tokens;
* statistics: numpy mean and numpy's default (linear) percentiles; times in seconds (shown here in ms).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from checker.read.inputs.limits import Limits
from checker.read.kinds._json import FieldReader, bounded_numbers, dig, head, read_object
from checker.read.kinds.base import ImportedPoint, ImportedRun, RequestRecord
from checker.read.loaders import load_json, load_yaml
from checker.report import Findings

STAGE_FILE = re.compile(r"^stage_(\d+)_lifecycle_metrics\.json$")
PER_REQUEST = "per_request_lifecycle_metrics.json"
SUMMARY = "summary_lifecycle_metrics.json"


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    data = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = np.percentile(data, [50, 90, 99])
    return {"mean": float(np.mean(data)), "p50": float(p50), "p90": float(p90), "p99": float(p99)}


class _Request:
    """One request of the per-request report."""

    def __init__(self, row: dict, *, server_tokens: bool, fields: FieldReader, at: str) -> None:
        self.start = fields.number(row, "start_time", at=at)
        self.end = fields.number(row, "end_time", at=at)
        self.ok = row.get("error") is None
        metrics = dig(row, "info", "response_metrics")
        metrics = metrics if isinstance(metrics, dict) else {}
        at_metrics = f"{at}/info/response_metrics"
        times = fields.numbers(metrics, "output_token_times", at=at_metrics) or []
        self.token_times = [t for t in times if t is not None]
        tokens = fields.count(metrics, "output_tokens", at=at_metrics)
        if server_tokens:
            server = fields.count(metrics, "server_usage", "completion_tokens", at=at_metrics)
            tokens = server if server is not None else tokens
        self.tokens = tokens or 0

    @property
    def streamed(self) -> bool:
        return len(self.token_times) > 1

    def ttft(self) -> float | None:
        return self.token_times[0] - self.start if self.streamed and self.start is not None else None

    def tpot(self) -> float | None:
        if not self.streamed or self.tokens <= 1:
            return None
        return (self.token_times[-1] - self.token_times[0]) / (self.tokens - 1)

    def gaps(self) -> list[float]:
        return (
            [b - a for a, b in zip(self.token_times, self.token_times[1:], strict=False)]
            if self.streamed
            else []
        )


class InferencePerfKind:
    """inference-perf's report folder."""

    name = "inference_perf"
    percentile_definition = "inference-perf takes numpy's default (linear) percentile: between the two requests around the 90 % rank it interpolates a value no request measured; TTFT from the request's start to its first output token, over the successful requests with more than one token time."
    label = "inference-perf reports (stage_N_/summary_lifecycle_metrics.json + per_request_lifecycle_metrics.json)"
    importer = True
    order = 30

    def detect_folder(self, folder: Path) -> bool:
        return any(self.claims(path) for path in folder.glob("*lifecycle_metrics.json"))

    def claims(self, path: Path) -> bool:
        if not path.name.endswith("lifecycle_metrics.json") or "session" in path.name:
            return False
        start = head(path, 4096).lstrip()
        if path.name == PER_REQUEST:
            return start.startswith(b"[") and b'"start_time"' in start
        return b'"load_summary"' in start or b'"benchmark_time_seconds"' in start

    def read(self, paths: list[Path], *, findings: Findings, limits: Limits) -> ImportedRun | None:
        folders: dict[Path, list[Path]] = {}
        for path in paths:
            folders.setdefault(path.parent, []).append(path)
        points = []
        for folder, files in sorted(folders.items()):
            point = self._folder(folder, files, findings=findings, limits=limits)
            if point is not None:
                points.append(point)
        if not points:
            return None
        return ImportedRun(tool=self.name, tool_version=None, points=points)

    def _folder(
        self, folder: Path, files: list[Path], *, findings: Findings, limits: Limits
    ) -> ImportedPoint | None:
        names = {path.name: path for path in files}
        shown = folder.name or "."
        stages = sorted((int(m.group(1)), path) for path in files if (m := STAGE_FILE.match(path.name)))
        if PER_REQUEST not in names:
            findings.error(
                "import-no-requests",
                f"{shown}/: inference-perf wrote no {PER_REQUEST}, so its summary cannot be recomputed.",
                file=f"{shown}/{files[0].name}",
                fix="Run inference-perf with report.request_lifecycle.per_request: true and import the whole folder.",
            )
            return None
        summary_path = self._summary_file(shown, files, names, stages, findings=findings)
        if summary_path is None:
            return None
        display = f"{shown}/{summary_path.name}"
        summary = read_object(summary_path, display=display, findings=findings, limits=limits)
        rows = bounded_numbers(
            load_json(
                names[PER_REQUEST],
                display=f"{shown}/{PER_REQUEST}",
                findings=findings,
                limits=limits,
                expect_object=False,
            ),
            display=f"{shown}/{PER_REQUEST}",
            findings=findings,
        )
        if not isinstance(summary, dict):
            return None
        if not isinstance(rows, list):
            if rows is not None:
                findings.error(
                    "import-schema",
                    f"{shown}/{PER_REQUEST} must hold a JSON list of requests.",
                    file=f"{shown}/{PER_REQUEST}",
                    fix="Import the per-request report exactly as inference-perf wrote it.",
                )
            return None
        return self._point(folder, shown, display, summary, rows, stages, findings=findings, limits=limits)

    @staticmethod
    def _summary_file(
        shown: str,
        files: list[Path],
        names: dict[str, Path],
        stages: list[tuple[int, Path]],
        *,
        findings: Findings,
    ) -> Path | None:
        """The one stage's lifecycle metrics, else the run's summary (several stages are compared as one)."""
        if len(stages) == 1:
            summary_path = stages[0][1]
        elif SUMMARY in names:
            summary_path = names[SUMMARY]
            if stages:
                findings.warning(
                    "import-stages-combined",
                    f"{shown}/ holds {len(stages)} load stages; the per-request report does not say which stage a "
                    "request belonged to, so the run is compared as a whole (summary_lifecycle_metrics.json).",
                    file=f"{shown}/{SUMMARY}",
                    fix="Run one concurrency per inference-perf run to get one load point each.",
                )
        else:
            findings.error(
                "import-schema",
                f"{shown}/ has neither one stage_N_lifecycle_metrics.json nor summary_lifecycle_metrics.json.",
                file=f"{shown}/{files[0].name}",
                fix="Import the whole report folder inference-perf wrote.",
            )
            return None
        return summary_path

    def _point(
        self,
        folder: Path,
        shown: str,
        display: str,
        summary: dict,
        rows: list,
        stages: list[tuple[int, Path]],
        *,
        findings: Findings,
        limits: Limits,
    ) -> ImportedPoint:
        """The imported point from the summary and the per-request rows (token counts as config.yaml says)."""
        config = (
            load_yaml(
                folder / "config.yaml", display=f"{shown}/config.yaml", findings=findings, limits=limits
            )
            if (folder / "config.yaml").is_file()
            else None
        )
        server_tokens = bool(dig(config, "report", "request_lifecycle", "use_server_output_tokens"))
        per_request = FieldReader(f"{shown}/{PER_REQUEST}", findings, writer="inference-perf")
        requests = [
            _Request(row, server_tokens=server_tokens, fields=per_request, at=f"/{index}")
            for index, row in enumerate(rows)
            if isinstance(row, dict)
        ]
        fields = FieldReader(display, findings, writer="inference-perf")
        concurrency = fields.count(summary, "load_summary", "concurrency", minimum=1)
        reported = self._reported(summary, fields)
        return ImportedPoint(
            concurrency=concurrency,
            label=f"{shown}:stage {stages[0][0]}" if len(stages) == 1 else f"{shown}:all stages",
            file=display,
            reported=reported,
            recomputed=self._recomputed(requests),
            requests=sorted(
                (
                    RequestRecord(
                        issued_s=r.start,
                        first_token_s=r.token_times[0] if r.token_times else None,
                        end_s=r.end,
                        output_tokens=r.tokens if r.ok else None,
                        ok=r.ok,
                    )
                    for r in requests
                    if r.start is not None
                ),
                key=lambda record: record.issued_s,
            ),
            duration_s=reported.get("duration_s"),
        )

    @staticmethod
    def _reported(summary: dict, fields: FieldReader) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        for prefix, name in (
            ("ttft_ms", "time_to_first_token"),
            ("itl_ms", "inter_token_latency"),
            ("tpot_ms", "time_per_output_token"),
            ("e2e_ms", "request_latency"),
        ):
            for key, stat in (("mean", "mean"), ("p50", "median"), ("p90", "p90"), ("p99", "p99")):
                if prefix == "tpot_ms" and key in ("p90", "p99"):
                    continue
                value = fields.number(summary, "successes", "latency", name, stat, minimum=0.0)
                if value is not None:
                    out[f"{prefix}_{key}"] = value * 1000.0
        for key, name in (
            ("request_throughput", "requests_per_sec"),
            ("output_token_throughput", "output_tokens_per_sec"),
        ):
            value = fields.number(summary, "successes", "throughput", name, minimum=0.0)
            if value is not None:
                out[key] = value
        for key, path in (
            ("requests_completed", ("successes", "count")),
            ("requests_failed", ("failures", "count")),
        ):
            counted = fields.count(summary, *path)
            if counted is not None:
                out[key] = counted
        seconds = fields.number(summary, "benchmark_time_seconds", minimum=0.0)
        if seconds is not None:
            out["duration_s"] = seconds
        return out

    @staticmethod
    def _recomputed(requests: list[_Request]) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        timed = [r for r in requests if r.start is not None and r.end is not None]
        successes = [r for r in timed if r.ok]
        failures = [r for r in timed if not r.ok]
        series = {
            "ttft_ms": [t for t in (r.ttft() for r in successes) if t is not None],
            "itl_ms": [gap for r in successes for gap in r.gaps()],
            "tpot_ms": [t for t in (r.tpot() for r in successes) if t is not None],
            "e2e_ms": [r.end - r.start for r in successes],  # type: ignore[operator]
        }
        for prefix, values in series.items():
            stats = _stats(values)
            if stats is None:
                continue
            for key, value in stats.items():
                if prefix == "tpot_ms" and key in ("p90", "p99"):
                    continue
                out[f"{prefix}_{key}"] = value * 1000.0
        if timed:
            total = max(r.end for r in timed) - min(r.start for r in timed)  # type: ignore[type-var,operator]
            out["duration_s"] = total
            if total > 0:
                out["request_throughput"] = len(successes) / total
                out["output_token_throughput"] = sum(r.tokens for r in successes) / total
        out["requests_completed"] = len(successes)
        out["requests_failed"] = len(failures)
        return out

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        run = self.read(paths, findings=findings, limits=limits)
        for point in run.points if run else []:
            yield from point.requests


KIND = InferencePerfKind()
