"""Input kind `aiperf`: NVIDIA AIPerf's artifact folder, `profile_export.jsonl` (one record per request) beside
`profile_export_aiperf.json` (the run's summary); any --profile-export-prefix is accepted (profile_export*.json[l]).

One load point per artifact folder (AIPerf runs one concurrency per `aiperf profile`). AIPerf 0.13 definitions,
as read from its source (aiperf.metrics.types.*, aiperf.metrics.derived_latency):

* a record with an `error` is a failed request; every statistic is over the valid (error-free) records;
* per request: time_to_first_token, request_latency (request start to the last content chunk) and
  inter_token_latency = (request_latency - TTFT) / (output_sequence_length - 1), AIPerf's ITL (its TPOT); they are
  written in each record and summarised with numpy's default (linear) percentiles, mean = avg, population std;
* output tokens = output_sequence_length, counted by AIPerf's tokenizer (not the server's usage);
* benchmark_duration = the last response (request start + latency) - the first request start, in each worker's
  raw clock; the exported per-request timestamps are corrected to the controller's clock per worker, so the
  duration recomputed from them can differ by the workers' clock offsets (about 1e-7 of a second run);
* request_throughput = valid requests / the profiling phase's window and output_token_throughput = output tokens
  / that window; the window is written only as start_time .. end_time to the microsecond, so the throughputs
  recomputed from it agree to about 1e-6, not 1e-9 (the importer's declared tolerance for those three figures).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np

from checker.read.inputs.limits import Limits
from checker.read.kinds._json import FieldReader, bounded_numbers, dig, head, read_object
from checker.read.kinds.base import ImportedPoint, ImportedRun, RequestRecord
from checker.read.raw_logs import CorruptStream, open_events
from checker.report import Findings

# Figures that divide by a window AIPerf writes to the microsecond (or by its per-worker clocks): see above.
WINDOW_TOLERANCE = 1e-6
SERIES = {
    "ttft_ms": "time_to_first_token",
    "itl_ms": "inter_token_latency",
    "e2e_ms": "request_latency",
}
MAX_RECORDS_FINDINGS = 20


def _milliseconds(row: dict, tag: str, fields: FieldReader) -> float | None:
    """A record's metric `tag` in ms (AIPerf writes {"value": v, "unit": "ms"}; ns and s are converted)."""
    metric = dig(row, "metrics", tag)
    if not isinstance(metric, dict):
        return None
    value = fields.number(metric, "value", at=f"/metrics/{tag}", minimum=0.0)
    if value is None:
        return None
    scale = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "sec": 1000.0, "s": 1000.0}.get(str(metric.get("unit")))
    return None if scale is None else value * scale


class _Row:
    """One record of profile_export.jsonl, its numbers read once by its file's typed reader (set to its line)."""

    __slots__ = ("failed", "ms", "phase", "start_ns", "tokens", "turn")

    def __init__(self, data: dict, fields: FieldReader) -> None:
        metadata = data["metadata"]
        self.phase = metadata.get("benchmark_phase", "profiling")
        self.failed = bool(data.get("error"))
        self.start_ns = fields.number(metadata, "request_start_ns", at="/metadata")
        self.ms = {tag: _milliseconds(data, tag, fields) for tag in SERIES.values()}
        self.tokens = fields.count(data, "metrics", "output_sequence_length", "value")
        self.turn = fields.count(metadata, "turn_index", at="/metadata")


def _stats(values: list[float]) -> dict[str, float]:
    data = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = np.percentile(data, [50, 90, 99])
    return {"mean": float(data.mean()), "p50": float(p50), "p90": float(p90), "p99": float(p99)}


def _window_s(summary: dict) -> float | None:
    try:
        start = datetime.fromisoformat(str(summary.get("start_time")))
        end = datetime.fromisoformat(str(summary.get("end_time")))
    except ValueError:
        return None
    seconds = (end - start).total_seconds()
    return seconds if seconds > 0 else None


class AIPerfKind:
    """AIPerf's profile_export.jsonl and profile_export_aiperf.json."""

    name = "aiperf"
    percentile_definition = "AIPerf takes numpy's default (linear) percentile: between the two requests around the 90 % rank it interpolates a value no request measured; TTFT from the request's start to its first token, over the error-free requests."
    label = "AIPerf profile_export.jsonl + profile_export_aiperf.json (aiperf profile)"
    importer = True
    order = 20

    def detect_folder(self, folder: Path) -> bool:
        return any(self.claims(path) for path in folder.glob("profile_export*"))

    def claims(self, path: Path) -> bool:
        if not path.name.startswith("profile_export"):
            return False
        start = head(path, 8192)
        if path.suffix == ".jsonl":
            return start.startswith(b'{"metadata"') and b'"metrics"' in start
        if path.suffix == ".json":
            return b'"aiperf_version"' in start
        return False

    def read(self, paths: list[Path], *, findings: Findings, limits: Limits) -> ImportedRun | None:
        by_folder: dict[Path, dict[str, Path]] = {}
        for path in paths:
            role = "records" if path.suffix == ".jsonl" else "summary"
            by_folder.setdefault(path.parent, {})[role] = path
        version = None
        points = []
        for folder, files in sorted(by_folder.items()):
            if "summary" not in files or "records" not in files:
                have = next(iter(files.values()))
                missing = "profile_export_aiperf.json" if "summary" not in files else "profile_export.jsonl"
                findings.error(
                    "import-schema",
                    f"{folder.name or have.name}: AIPerf's {missing} is missing beside {have.name}; the summary and "
                    "the per-request records are compared with each other.",
                    file=have.name,
                    fix="Import the whole artifact folder `aiperf profile --output-artifact-dir` wrote.",
                )
                continue
            summary = read_object(
                files["summary"], display=self._display(files["summary"]), findings=findings, limits=limits
            )
            if summary is None:
                continue
            version = version or (
                summary.get("aiperf_version") if isinstance(summary.get("aiperf_version"), str) else None
            )
            records = self._records(files["records"], findings=findings, limits=limits)
            if records is None:
                continue
            points.append(self._point(summary, records, files, findings))
        if not points:
            return None
        return ImportedRun(tool=self.name, tool_version=version, points=points)

    @staticmethod
    def _display(path: Path) -> str:
        return f"{path.parent.name}/{path.name}" if path.parent.name else path.name

    def _records(self, path: Path, *, findings: Findings, limits: Limits) -> list[_Row] | None:
        display = self._display(path)
        fields = FieldReader(display, findings, writer="AIPerf")
        records: list[_Row] = []
        bad = 0
        try:
            for number_, raw in enumerate(open_events(path, max_line_bytes=limits.max_line_bytes), start=1):
                try:
                    row = json.loads(raw, parse_constant=_refuse_constant)
                except ValueError as exc:
                    bad += 1
                    if bad <= MAX_RECORDS_FINDINGS:
                        findings.error(
                            "import-record-invalid",
                            f"{display} line {number_} is not a JSON record ({exc}); it was skipped.",
                            file=display,
                            line=number_,
                            fix="Import profile_export.jsonl exactly as AIPerf wrote it.",
                        )
                    continue
                if not isinstance(row, dict) or not isinstance(row.get("metadata"), dict):
                    bad += 1
                    if bad <= MAX_RECORDS_FINDINGS:
                        findings.error(
                            "import-record-invalid",
                            f"{display} line {number_} has no 'metadata' object; it was skipped.",
                            file=display,
                            line=number_,
                            fix="Import profile_export.jsonl exactly as AIPerf wrote it.",
                        )
                    continue
                fields.line = number_
                records.append(
                    _Row(bounded_numbers(row, display=display, findings=findings, line=number_), fields)
                )
        except CorruptStream as exc:
            findings.error(
                "import-record-invalid",
                f"{display} cannot be read past line {exc.line}: {exc}.",
                file=display,
                line=exc.line or None,
                fix="Import profile_export.jsonl whole, as AIPerf wrote it.",
            )
        return records

    def _point(
        self, summary: dict, records: list[_Row], files: dict[str, Path], findings: Findings
    ) -> ImportedPoint:
        fields = FieldReader(self._display(files["summary"]), findings, writer="AIPerf")
        phases = dig(summary, "input_config", "phases")
        phases = phases if isinstance(phases, list) else []
        profiling_index = next(
            (i for i, p in enumerate(phases) if isinstance(p, dict) and p.get("kind") == "profiling"), 0
        )
        concurrency = fields.count(
            phases, profiling_index, "concurrency", at="/input_config/phases", minimum=1
        )
        profiling_rows = [r for r in records if r.phase == "profiling"]
        valid = [r for r in profiling_rows if not r.failed]
        failed = [r for r in profiling_rows if r.failed]
        reported: dict[str, float | int] = {}
        recomputed: dict[str, float | int] = {}
        for prefix, tag in SERIES.items():
            block = summary.get(tag)
            for key, stat in (("mean", "avg"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99")):
                value = fields.number(block, stat, at=f"/{tag}", minimum=0.0)
                if value is not None and dig(block, "unit") == "ms":
                    reported[f"{prefix}_{key}"] = value
            values = [v for v in (r.ms[tag] for r in valid) if v is not None]
            if values:
                for key, value in _stats(values).items():
                    recomputed[f"{prefix}_{key}"] = value
        for key, tag in (
            ("request_throughput", "request_throughput"),
            ("output_token_throughput", "output_token_throughput"),
            ("duration_s", "benchmark_duration"),
        ):
            value = fields.number(summary, tag, "avg", minimum=0.0)
            if value is not None:
                reported[key] = value
        for key, tag in (("requests_completed", "request_count"), ("requests_failed", "error_request_count")):
            counted = fields.count(summary, tag, "avg")
            if counted is not None:
                reported[key] = counted
        error_rate = fields.number(summary, "request_error_rate", "avg", minimum=0.0)
        if "requests_failed" not in reported and error_rate == 0.0:
            reported["requests_failed"] = 0  # AIPerf writes error_request_count only when a request failed
        recomputed["requests_completed"] = len(valid)
        recomputed["requests_failed"] = len(failed)
        starts_ns = [r.start_ns for r in valid]
        ends_ns = [
            r.start_ns + latency * 1e6
            for r in valid
            if r.start_ns is not None and (latency := r.ms["request_latency"]) is not None
        ]
        first_start = min((s for s in starts_ns if s is not None), default=None)
        if ends_ns and first_start is not None:
            recomputed["duration_s"] = (max(ends_ns) - first_start) / 1e9
        window = _window_s(summary)
        if window is not None:
            recomputed["request_throughput"] = len(valid) / window
            recomputed["output_token_throughput"] = (
                sum(r.tokens for r in valid if r.tokens is not None) / window
            )
        return ImportedPoint(
            concurrency=concurrency,
            label=f"concurrency@{concurrency}" if concurrency else files["summary"].parent.name,
            file=self._display(files["summary"]),
            reported=reported,
            recomputed=recomputed,
            requests=[rec for rec in (_record(r) for r in profiling_rows) if rec is not None],
            duration_s=window,
            extra={
                "tolerance": {
                    "request_throughput": WINDOW_TOLERANCE,
                    "output_token_throughput": WINDOW_TOLERANCE,
                    "duration_s": WINDOW_TOLERANCE,
                }
            },
        )

    def requests(self, paths: list[Path], *, findings: Findings, limits: Limits) -> Iterator[RequestRecord]:
        run = self.read(paths, findings=findings, limits=limits)
        for point in run.points if run else []:
            yield from point.requests


def _refuse_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name}")


def _record(row: _Row) -> RequestRecord | None:
    if row.start_ns is None:
        return None
    issued = row.start_ns / 1e9
    ttft, latency = row.ms["time_to_first_token"], row.ms["request_latency"]
    return RequestRecord(
        issued_s=issued,
        first_token_s=None if ttft is None else issued + ttft / 1000.0,
        end_s=None if latency is None else issued + latency / 1000.0,
        output_tokens=row.tokens,
        ok=not row.failed,
        turn=row.turn,
    )


KIND = AIPerfKind()
