"""Streaming recomputation of a load point's result summary from its raw events.jsonl(.zst).

The replay follows the official client's aggregator (DESIGN.md, "Metrics"): file order, a sample
is tracked iff its `sample.issued` line lies inside a performance-tracking block, completes of
tracked samples count (failed ones included), errors of tracked in-flight samples count as
failures. Memory grows with the number of tracked samples (a few numbers each), never with the
size of the log or of its texts: texts are tokenized in bounded batches and dropped.
"""

from __future__ import annotations

import io
import json
import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from checker.loaders import CorruptStream, ZstdReader
from checker.report import Findings
from checker.stats import summarize

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call", "other")
READ_BLOCK_BYTES = 4 * 1024 * 1024
TOKENIZE_BATCH_CHARS = 8 * 1024 * 1024
MAX_FINDINGS_PER_RULE = 20  # a corrupt multi-GB log must not produce millions of findings
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
PROMPT_CACHE_ENTRIES = 200_000
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _OwningZstdReader(ZstdReader):
    """A zstd reader that also closes the file it reads."""

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class EventLogUnreadable(Exception):
    """The log cannot be opened at all (a finding is made by the caller)."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name}")


_decode = json.JSONDecoder(parse_constant=_reject_constant).decode


def open_binary(path: Path) -> BinaryIO:
    """A binary stream of the log, decompressing .zst on the fly."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller through the returned stream
    if raw.peek(4)[:4] == ZSTD_MAGIC:  # by content, not by name
        return io.BufferedReader(_OwningZstdReader(raw, name=path.name), buffer_size=READ_BLOCK_BYTES)
    return raw


def iter_lines(stream: BinaryIO, *, max_line_bytes: int, on_too_long) -> Iterator[tuple[int, bytes]]:
    """(line number, line bytes) in bounded memory; a line over the cap is skipped and reported."""
    number = 0
    rest = b""
    skipping = False  # inside an over-long line, discarding until its newline
    while True:
        block = stream.read(READ_BLOCK_BYTES)
        if not block:
            break
        if skipping:
            cut = block.find(b"\n")
            if cut < 0:
                continue
            block = block[cut + 1:]
            skipping = False
        if rest:
            block = rest + block
        lines = block.split(b"\n")
        rest = lines.pop()
        for line in lines:
            number += 1
            if len(line) > max_line_bytes:
                on_too_long(number, len(line))
                continue
            yield number, line
        if len(rest) > max_line_bytes:
            number += 1
            on_too_long(number, len(rest))
            rest = b""
            skipping = True
    if rest and not skipping:
        number += 1
        yield number, rest


def output_texts(data: Any) -> tuple[str, str]:
    """(full output text, text after the first streamed chunk) of a TextModelOutput payload.

    Mirrors the client: reasoning then output, chunks joined with no separator, tool calls
    appended as compact JSON; the first streamed chunk is reasoning[0] when reasoning streamed,
    else output[0].
    """
    if not isinstance(data, list) or len(data) < 2:
        return "", ""
    output = data[1]
    reasoning = data[2] if len(data) > 2 else None
    tool_calls = data[3] if len(data) > 3 else None
    full: list[str] = []
    after: list[str] = []
    if reasoning:
        if isinstance(reasoning, str):
            full.append(reasoning)
        elif isinstance(reasoning, list):
            full.extend(_strings(reasoning))
            after.extend(_strings(reasoning[1:]))
    if output:
        if isinstance(output, str):
            full.append(output)
            if reasoning and isinstance(reasoning, list):
                after.append(output)
        elif isinstance(output, list):
            chunks = _strings(output)
            full.extend(chunks)
            if reasoning:
                after.extend(chunks)
            else:
                after.extend(chunks[1:])
    if tool_calls:
        encoded = json.dumps(tool_calls, separators=(",", ":"), ensure_ascii=False)
        full.append(encoded)
        after.append(encoded)
    return "".join(full), "".join(after)


def _strings(items: list) -> list[str]:
    return [s for s in items if isinstance(s, str)]


class TokenCounter:
    """Counts tokens of many texts with few tokenizer calls: batched, prompt counts cached."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self._encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
        self.calls = 0
        self.texts = 0

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        self.calls += 1
        self.texts += len(texts)
        return [len(e) for e in self._encode(texts, add_special_tokens=False)]


@dataclass
class _Pending:
    """Texts waiting for one batched tokenizer call, with where each count goes."""

    texts: list
    targets: list  # (array, index) or (prompt text,) for the prompt cache
    chars: int = 0


class PointReplay:
    """Replays one events log in file order and accumulates the per-sample numbers."""

    def __init__(self, *, tokenizer, findings: Findings, display: str, point: str | None,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.counter = tokenizer if isinstance(tokenizer, TokenCounter) else TokenCounter(tokenizer)
        self.findings = findings
        self.display = display
        self.point = point
        self.max_line_bytes = max_line_bytes
        self._reported: dict[str, int] = {}
        # session state
        self.tracking = False
        self.started = False
        self.ended = False
        self.blocks: list[list[int | None]] = []  # [start_ns, latest tracked complete ns]
        self.stop_ns: int | None = None
        self.last_main_ns: int | None = None
        # counters
        self.n_issued = 0
        self.n_completed = 0
        self.n_failed = 0
        self.finish = dict.fromkeys(FINISH_REASONS, 0)
        # in-flight tracked samples: uuid -> [issued_ns, recv_first_ns, block index]
        self.inflight: dict[str, list] = {}
        self.done: set[str] = set()
        # series
        self.ttft = array("q")
        self.latency = array("q")
        self.isl = array("q")
        self.osl = array("q")
        self.tpot_elapsed = array("q")  # complete - recv_first, for samples that have recv_first
        self.tpot_tokens = array("q")  # tokens after the first chunk, filled after tokenizing
        self.prompt_cache: dict[str, int] = {}
        self.pending = _Pending([], [])
        self.lines = 0

    # -- findings ---------------------------------------------------------------------------
    def _finding(self, rule: str, severity: str, message: str, line: int | None, fix: str | None = None):
        seen = self._reported.get(rule, 0)
        self._reported[rule] = seen + 1
        if seen < MAX_FINDINGS_PER_RULE:
            self.findings.add(rule, severity, message, file=self.display, line=line, point=self.point,
                              fix=fix)
        elif seen == MAX_FINDINGS_PER_RULE:
            self.findings.add(rule, severity, f"More {rule} findings in this log were left out.",
                              file=self.display, point=self.point)

    # -- tokenization -----------------------------------------------------------------------
    def _queue(self, text: str, target) -> None:
        self.pending.texts.append(text)
        self.pending.targets.append(target)
        self.pending.chars += len(text)
        if self.pending.chars >= TOKENIZE_BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        pending = self.pending
        if not pending.texts:
            return
        counts = self.counter.count(pending.texts)
        for target, n in zip(pending.targets, counts, strict=True):
            if len(target) == 1:
                self.prompt_cache[target[0]] = n
                if len(self.prompt_cache) > PROMPT_CACHE_ENTRIES:
                    self.prompt_cache.clear()
            else:
                series, index = target
                series[index] = n
        self.pending = _Pending([], [])

    def _queue_isl(self, prompt: str) -> None:
        cached = self.prompt_cache.get(prompt)
        index = len(self.isl)
        self.isl.append(-1 if cached is None else cached)
        if cached is None:
            self._queue(prompt, (self.isl, index))

    # -- replay -----------------------------------------------------------------------------
    def feed(self, stream: BinaryIO) -> None:
        def too_long(line: int, size: int) -> None:
            self._finding("raw-log-line-too-long", "error",
                          f"Line {line} is {size:,} bytes, over the {self.max_line_bytes:,}-byte cap; "
                          "it was skipped, so the recomputed metrics may be incomplete.", line,
                          "Upload the events.jsonl exactly as the client wrote it.")

        for number, raw in iter_lines(stream, max_line_bytes=self.max_line_bytes, on_too_long=too_long):
            self.lines = number
            if self.ended:
                break
            if not raw.strip():
                continue
            event = self._parse(number, raw)
            if event is not None:
                self._apply(number, event)

    def _parse(self, number: int, raw: bytes) -> dict | None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._finding("raw-log-invalid-utf8", "error",
                          f"Line {number} is not valid UTF-8 (byte {exc.start}); the line was skipped.",
                          number, "Upload the events.jsonl exactly as the client wrote it.")
            return None
        try:
            event = _decode(text)
        except ValueError as exc:
            if "non-finite" in str(exc):
                self._finding("raw-log-nonfinite", "error",
                              f"Line {number} holds NaN or Infinity, which the client never writes; "
                              "the line was skipped.", number)
            else:
                self._finding("raw-log-invalid-json", "error",
                              f"Line {number} is not valid JSON ({exc}); the line was skipped.", number,
                              "A truncated last line usually means the log was cut while copying.")
            return None
        if not isinstance(event, dict) or not isinstance(event.get("event_type"), str):
            self._finding("raw-log-invalid-event", "error",
                          f"Line {number} is not an event object with an 'event_type'.", number)
            return None
        ts = event.get("timestamp_ns")
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            self._finding("raw-log-invalid-event", "error",
                          f"Line {number}: 'timestamp_ns' must be a non-negative integer, got {ts!r}.",
                          number)
            return None
        return event

    def _apply(self, number: int, event: dict) -> None:
        kind = event["event_type"]
        ts = event["timestamp_ns"]
        if kind != "sample.complete":
            # Everything but completes is written by the main process in time order.
            if self.last_main_ns is not None and ts < self.last_main_ns:
                self._finding("raw-log-non-monotonic", "error",
                              f"Line {number} ({kind}) is timestamped {self.last_main_ns - ts:,} ns before "
                              "the previous main-process event; the client writes these in time order.",
                              number)
            else:
                self.last_main_ns = ts
        if kind.startswith("session."):
            self._session(number, kind, ts)
            return
        if kind.startswith("error."):
            uuid = event.get("sample_uuid")
            if uuid and uuid in self.inflight:
                self.n_failed += 1
            return
        uuid = event.get("sample_uuid")
        if not isinstance(uuid, str) or not uuid:
            if kind.startswith("sample."):
                self._finding("raw-log-invalid-event", "error",
                              f"Line {number}: {kind} without a 'sample_uuid'.", number)
            return
        if kind == "sample.issued":
            self._issued(number, uuid, ts, event.get("data"))
        elif kind == "sample.recv_first":
            row = self.inflight.get(uuid)
            if row is None:
                return
            if row[1] is not None:
                self._finding("raw-log-duplicate-event", "error",
                              f"Line {number}: a second sample.recv_first for sample {uuid}; "
                              "only the first was used.", number)
                return
            if ts < row[0]:
                self._finding("raw-log-timestamp-order", "error",
                              f"Line {number}: sample {uuid} received its first chunk before it was issued.",
                              number)
            row[1] = ts
            self.ttft.append(ts - row[0])
        elif kind == "sample.complete":
            self._complete(number, uuid, ts, event)

    def _session(self, number: int, kind: str, ts: int) -> None:
        if kind == "session.started":
            if self.started:
                self._finding("raw-log-duplicate-event", "error",
                              f"Line {number}: a second session.started.", number)
            self.started = True
        elif kind == "session.start_performance_tracking":
            if self.tracking:
                self._finding("raw-log-duplicate-event", "warning",
                              f"Line {number}: start_performance_tracking while already tracking.", number)
                return
            self.tracking = True
            self.blocks.append([ts, None])
        elif kind == "session.stop_performance_tracking":
            self.tracking = False
            self.stop_ns = ts
        elif kind == "session.ended":
            self.ended = True

    def _issued(self, number: int, uuid: str, ts: int, data: Any) -> None:
        if uuid in self.inflight or uuid in self.done:
            self._finding("raw-log-duplicate-event", "error",
                          f"Line {number}: sample {uuid} was issued twice in the tracked window; "
                          "the second issue was ignored.", number)
            return
        if not self.tracking:
            return
        self.n_issued += 1
        self.inflight[uuid] = [ts, None, len(self.blocks) - 1]
        if isinstance(data, list) and len(data) > 1:
            token_ids = data[2] if len(data) > 2 else None
            if isinstance(token_ids, list):
                self.isl.append(len(token_ids))
            elif isinstance(data[1], str):
                self._queue_isl(data[1])

    def _complete(self, number: int, uuid: str, ts: int, event: dict) -> None:
        row = self.inflight.pop(uuid, None)
        if row is None:
            if uuid in self.done:
                self._finding("raw-log-duplicate-event", "error",
                              f"Line {number}: a second sample.complete for sample {uuid}; it was ignored.",
                              number)
            return
        self.done.add(uuid)
        issued_ns, recv_first_ns, block = row
        if ts < issued_ns:
            self._finding("raw-log-timestamp-order", "error",
                          f"Line {number}: sample {uuid} completed before it was issued.", number)
        self.n_completed += 1
        latest = self.blocks[block][1]
        if latest is None or ts > latest:
            self.blocks[block][1] = ts
        self.latency.append(ts - issued_ns)
        reason = event.get("finish_reason")
        if isinstance(reason, str):
            self.finish[reason if reason in self.finish else "other"] += 1
        data = event.get("data")
        if data is None:
            return  # a failed request: latency counts, no tokens
        full, after = output_texts(data)
        if full:
            self.osl.append(-1)
            self._queue(full, (self.osl, len(self.osl) - 1))
        if recv_first_ns is not None and after:
            self.tpot_elapsed.append(ts - recv_first_ns)
            self.tpot_tokens.append(-1)
            self._queue(after, (self.tpot_tokens, len(self.tpot_tokens) - 1))

    # -- result -----------------------------------------------------------------------------
    def summary(self) -> dict:
        self.flush()
        if not self.blocks:
            self._finding("raw-log-structure", "error",
                          "The log has no session.start_performance_tracking event, so no sample is "
                          "tracked and no metric can be recomputed.", None,
                          "Upload the complete events.jsonl of the performance run.")
        if not self.ended:
            self._finding("raw-log-truncated", "error",
                          f"The log ends after {self.lines:,} lines without session.ended: it is "
                          "incomplete or was cut.", None, "Upload the complete events.jsonl.")
        duration_ns = sum(latest - start for start, latest in self.blocks if latest is not None)
        seconds = duration_ns / 1e9
        osl = np.frombuffer(self.osl, dtype=np.int64) if self.osl else np.zeros(0, np.int64)
        isl = np.frombuffer(self.isl, dtype=np.int64) if self.isl else np.zeros(0, np.int64)
        tokens_after = np.frombuffer(self.tpot_tokens, dtype=np.int64) if self.tpot_tokens else np.zeros(
            0, np.int64)
        elapsed = np.frombuffer(self.tpot_elapsed, dtype=np.int64) if self.tpot_elapsed else np.zeros(
            0, np.int64)
        keep = tokens_after > 0
        tpot = elapsed[keep].astype(np.float64) / tokens_after[keep].astype(np.float64)
        osl = osl[osl > 0]
        total_output_tokens = int(osl.sum())
        out: dict[str, Any] = {
            "n_samples_issued": self.n_issued,
            "n_samples_completed": self.n_completed,
            "n_samples_failed": self.n_failed,
            "duration_ns": duration_ns,
            "ttft": summarize(np.frombuffer(self.ttft, dtype=np.int64) if self.ttft else np.zeros(0, np.int64),
                              early_stopping=True),
            "tpot": summarize(tpot, early_stopping=True),
            "latency": summarize(
                np.frombuffer(self.latency, dtype=np.int64) if self.latency else np.zeros(0, np.int64),
                early_stopping=True),
            "output_sequence_lengths": summarize(osl, early_stopping=False),
            "input_sequence_lengths": summarize(isl, early_stopping=False),
            "qps": self.n_completed / seconds if seconds > 0 else None,
            "tps": total_output_tokens / seconds if seconds > 0 else None,
            "finish_reason_counts": dict(self.finish),
            "window_ns": [self.blocks[0][0], self.stop_ns] if self.blocks else None,
        }
        return out


def derive_official(summary: dict, *, concurrency: int | None) -> dict:
    """The official point metrics derived from a summary: system_tps, tps_per_user, ttft_p90_ms."""
    tpot_p90 = _get_percentile(summary.get("tpot"), "90.0")
    ttft_p90 = _get_percentile(summary.get("ttft"), "90.0")
    tps = summary.get("tps")
    derived = {
        "system_tps": tps if _finite(tps) else None,
        "tps_per_user": (1000.0 / (tpot_p90 / 1e6)) if _finite(tpot_p90) and tpot_p90 > 0 else None,
        "ttft_p90_ms": ttft_p90 / 1e6 if _finite(ttft_p90) else None,
        "concurrency": concurrency,
    }
    return derived


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _get_percentile(block: Any, key: str) -> float | None:
    """A percentile from a statistics block, accepting "90" and "90.0" alike."""
    if not isinstance(block, dict):
        return None
    table = block.get("percentiles")
    if not isinstance(table, dict):
        return None
    for k, v in table.items():
        try:
            if float(k) == float(key):
                return v
        except (TypeError, ValueError):
            continue
    return None


def recompute_point(path: Path, *, tokenizer, findings: Findings, display: str, point: str | None = None,
                    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> dict | None:
    """Recompute one point's summary from its raw log; None when the log cannot be read at all."""
    replay = PointReplay(tokenizer=tokenizer, findings=findings, display=display, point=point,
                         max_line_bytes=max_line_bytes)
    try:
        stream = open_binary(path)
    except OSError as exc:
        findings.error("raw-log-unreadable", f"The raw log cannot be opened: {exc.strerror}.",
                       file=display, point=point)
        return None
    try:
        with stream:
            replay.feed(stream)
    except (CorruptStream, OSError, EOFError) as exc:
        findings.error("raw-log-corrupt",
                       f"The compressed raw log is truncated or corrupt after line {replay.lines:,} ({exc}).",
                       file=display, point=point,
                       fix="Compress the log again with `zstd events.jsonl` and upload it whole.")
    return replay.summary()
