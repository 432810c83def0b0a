"""Measured power traces (a portal extension, docs/power.md): PTD logs or CSV read under caps, the trace's
manifest and clock anchor, the load window of the raw log, and the average power over it."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from checker.power.sources import (
    W_PER_KW,
    non_negative,
)

MAX_TRACE_LINE = 64 * 1024
MAX_TRACE_SAMPLES = 5_000_000  # ~58 days at 1 Hz, or ~1.4 h at 1 kHz: more is refused, not read


class TraceError(ValueError):
    """The trace or its manifest cannot be used; the message says what to change."""


@dataclass
class Trace:
    """Total power samples (Unix seconds, watts), sorted by time, and the channels summed into them."""

    times_s: list[float]
    watts: list[float]
    channels: list[str]
    source: str


def _read_lines(path: Path) -> list[str]:
    lines: list[str] = []
    with path.open("rb") as fh:
        while True:
            raw = fh.readline(MAX_TRACE_LINE + 1)
            if not raw:
                break
            if len(raw) > MAX_TRACE_LINE:
                raise TraceError(f"line {len(lines) + 1} is longer than {MAX_TRACE_LINE} bytes")
            if len(lines) >= MAX_TRACE_SAMPLES:
                raise TraceError(f"more than {MAX_TRACE_SAMPLES} lines; split or downsample the trace")
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as exc:
                raise TraceError(f"line {len(lines) + 1} is not UTF-8") from exc
    return lines


def _float_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_ptd(path: Path, *, utc_offset_s: float = 0.0) -> Trace:
    """SPEC PTDaemon log: Time,MM-DD-YYYY HH:MM:SS.fff,Watts,W,Volts,V,Amps,A,PF,P,Mark,NAME[,ChN,Watts,...]...

    Timestamps are the PTD host's local time; utc_offset_s (manifest) converts them to UTC.
    With channel blocks the total is the sum of the channels' Watts, otherwise the first Watts.
    """
    times, watts, channels = [], [], []
    offset = timedelta(seconds=utc_offset_s)
    for n, line in enumerate(_read_lines(path), start=1):
        if not line.startswith("Time,"):
            continue  # PTD interleaves other records (e.g. Range, Uncertainty); only Time lines are samples
        fields = line.split(",")
        try:
            stamp = datetime.strptime(fields[1], "%m-%d-%Y %H:%M:%S.%f")
        except (IndexError, ValueError) as exc:
            raise TraceError(f"line {n}: timestamp is not MM-DD-YYYY HH:MM:SS.fff") from exc
        chan_watts: list[tuple[str, float | None]] = []
        total = None
        i = 2
        current = None
        while i < len(fields) - 1:
            key = fields[i]
            if key.startswith("Ch") and key[2:].isdigit():
                current = key
                i += 1
                continue
            if key == "Watts":
                value = _float_or_none(fields[i + 1])
                if current is None and total is None:
                    total = value
                elif current is not None:
                    chan_watts.append((current, value))
            i += 2
        if chan_watts:
            for name, _ in chan_watts:
                if name not in channels:
                    channels.append(name)
            value = (
                None
                if any(v is None for _, v in chan_watts)
                else sum(v for _, v in chan_watts if v is not None)
            )
        else:
            value = total
        if value is None:
            raise TraceError(f"line {n}: no numeric Watts value")
        times.append((stamp - offset).replace(tzinfo=UTC).timestamp())
        watts.append(value)
    if not times:
        raise TraceError("no 'Time,' sample lines")
    order = sorted(range(len(times)), key=times.__getitem__)
    return Trace([times[i] for i in order], [watts[i] for i in order], channels or ["Watts"], "ptd")


def _parse_csv_time(text: str) -> float:
    value = _float_or_none(text)
    if value is not None:
        return value / 1e9 if value > 1e14 else value  # Unix ns or Unix s
    stamp = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        raise ValueError("ISO-8601 timestamp without a UTC offset")
    return stamp.timestamp()


def parse_csv(path: Path) -> Trace:
    """CSV with a header: timestamp column (Unix s, Unix ns or ISO-8601 with offset) then one watts column per channel."""
    lines = _read_lines(path)
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r and not r[0].startswith("#")]
    if len(rows) < 2:
        raise TraceError("needs a header line and at least one sample")
    header = [h.strip() for h in rows[0]]
    if len(header) < 2:
        raise TraceError("header must be a timestamp column followed by at least one watts column")
    times, watts = [], []
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise TraceError(f"row {n}: {len(row)} fields, header has {len(header)}")
        try:
            t = _parse_csv_time(row[0])
        except ValueError as exc:
            raise TraceError(
                f"row {n}: timestamp {row[0]!r} is not Unix seconds/ns or ISO-8601 with offset"
            ) from exc
        values = [_float_or_none(v) for v in row[1:]]
        if any(v is None for v in values):
            raise TraceError(f"row {n}: watts must be finite numbers")
        times.append(t)
        watts.append(sum(v for v in values if v is not None))
    order = sorted(range(len(times)), key=times.__getitem__)
    return Trace([times[i] for i in order], [watts[i] for i in order], header[1:], "csv")


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    if not path.is_file():
        raise TraceError("power/manifest.json is missing")
    if path.stat().st_size > 1024 * 1024:
        raise TraceError("power/manifest.json is larger than 1 MiB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"power/manifest.json is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TraceError("power/manifest.json must be a JSON object")
    return data


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def load_trace(folder: Path, manifest: dict[str, Any]) -> Trace:
    trace_name = manifest.get("trace")
    if trace_name is None:
        trace_name = "spl.txt" if (folder / "spl.txt").is_file() else "power.csv"
    if (
        not isinstance(trace_name, str)
        or "/" in trace_name
        or "\\" in trace_name
        or trace_name.startswith(".")
    ):
        raise TraceError("manifest 'trace' must be a file name inside power/")
    path = folder / trace_name
    if not path.is_file() or path.is_symlink():
        raise TraceError(f"power/{trace_name} is missing")
    fmt = manifest.get("trace_format") or ("ptd" if trace_name.endswith(".txt") else "csv")
    if fmt == "ptd":
        offset = manifest.get("utc_offset_s", 0)
        if (
            non_negative(
                abs(offset) if isinstance(offset, int | float) and not isinstance(offset, bool) else None
            )
            is None
        ):
            raise TraceError("manifest 'utc_offset_s' must be a number of seconds")
        return parse_ptd(path, utc_offset_s=float(offset))
    if fmt == "csv":
        return parse_csv(path)
    raise TraceError(f"manifest 'trace_format' must be 'ptd' or 'csv', got {fmt!r}")


def clock_anchor(manifest: dict[str, Any]) -> tuple[int, int]:
    """(monotonic_ns, unix_ns) read at the same instant on the client host."""
    anchor = manifest.get("clock_anchor")
    if not isinstance(anchor, dict):
        raise TraceError(
            "manifest needs clock_anchor {monotonic_ns, unix_ns} to align the trace with events.jsonl"
        )
    nanoseconds: list[int] = []
    for name in ("monotonic_ns", "unix_ns"):
        value = anchor.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise TraceError(f"clock_anchor.{name} must be a non-negative integer of nanoseconds")
        nanoseconds.append(value)
    monotonic_ns, unix_ns = nanoseconds
    return monotonic_ns, unix_ns


def scan_window_ns(events_path: Path) -> tuple[int, int] | None:
    """Cheap pass over events.jsonl (or .zst) for the first start and last stop of performance tracking."""
    start = stop = None
    stream: io.BufferedIOBase
    try:
        if events_path.name.endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(events_path.open("rb"))
            stream = io.BufferedReader(raw)
        else:
            stream = events_path.open("rb")
        with stream:
            while True:
                line = stream.readline(MAX_TRACE_LINE)
                if not line:
                    break
                if len(line) >= MAX_TRACE_LINE or b"performance_tracking" not in line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                ts = event.get("timestamp_ns")
                if isinstance(ts, bool) or not isinstance(ts, int):
                    continue
                if event.get("event_type") == "session.start_performance_tracking" and start is None:
                    start = ts
                elif event.get("event_type") == "session.stop_performance_tracking":
                    stop = ts
    except Exception:  # noqa: BLE001 - unreadable or a corrupt compressed stream: the raw-log checks report it
        return None
    if start is None or stop is None or stop <= start:
        return None
    return start, stop


@dataclass
class Measured:
    """Measured power of one point over its measurement window, and the trace-quality observations."""

    avg_power_w: float | None = None
    energy_j: float | None = None
    joules_per_output_token: float | None = None
    measured_tps_per_kw: float | None = None
    window_s: float | None = None
    samples_in_window: int = 0
    nonpositive_samples: int = 0
    coverage: float | None = None
    max_gap_s: float | None = None
    median_interval_s: float | None = None
    channels: list[str] = field(default_factory=list)
    meter: str | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def analyse_trace(
    trace: Trace, window_unix_s: tuple[float, float], *, output_tokens: float | None, system_tps: float | None
) -> Measured:
    """Average of positive samples strictly inside the window; energy = average x window length."""
    start, stop = window_unix_s
    window_s = stop - start
    m = Measured(window_s=window_s, channels=trace.channels, source=trace.source)
    inside = [(t, w) for t, w in zip(trace.times_s, trace.watts, strict=True) if start < t < stop]
    m.samples_in_window = len(inside)
    positive = [w for _, w in inside if w > 0]
    m.nonpositive_samples = len(inside) - len(positive)
    if trace.times_s:
        covered = max(0.0, min(stop, trace.times_s[-1]) - max(start, trace.times_s[0]))
        m.coverage = covered / (stop - start) if stop > start else 0.0
        stamps = [start] + [t for t, _ in inside] + [stop]
        # The edges count only when the trace does not reach them: a trace that starts late is a coverage problem.
        gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        m.max_gap_s = max(gaps) if gaps else None
        intervals = sorted(b - a for a, b in zip(trace.times_s, trace.times_s[1:], strict=False))
        m.median_interval_s = intervals[len(intervals) // 2] if intervals else None
    if positive:
        m.avg_power_w = sum(positive) / len(positive)
        m.energy_j = m.avg_power_w * window_s
        if output_tokens:
            m.joules_per_output_token = m.energy_j / output_tokens
        if system_tps is not None:
            m.measured_tps_per_kw = system_tps / (m.avg_power_w / W_PER_KW)
    return m
