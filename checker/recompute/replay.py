"""Streaming recomputation of a load point's result summary from its raw events.jsonl(.zst).

The replay follows the official client's aggregator (DESIGN.md, "Metrics"): file order, a sample
is tracked iff its `sample.issued` line lies inside a performance-tracking block, completes of
tracked samples count (failed ones included), errors of tracked in-flight samples count as
failures. Memory grows with the number of tracked samples (a few numbers each), never with the
size of the log or of its texts: texts are tokenized in bounded batches and dropped.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable
from io import BufferedIOBase
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from checker.read.event_log import (
    FINISH_REASONS,
    READ_BLOCK_BYTES,
    Readable,
    iter_lines,
    open_binary,
    output_texts,
)
from checker.read.raw_logs import CorruptStream
from checker.recompute.chat_template import AssistantParts, message_prompt, structured_output
from checker.recompute.goodput import SampleSeries
from checker.recompute.numbers import finite
from checker.recompute.stats import summarize
from checker.recompute.token_ledger import TokenLedger
from checker.recompute.tokens import TokenCounter
from checker.report import Findings

MAX_FINDINGS_PER_RULE = 20  # a corrupt multi-GB log must not produce millions of findings
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
PROGRESS_EVERY_LINES = 100_000


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name}")


_decode = json.JSONDecoder(parse_constant=_reject_constant).decode

_fast_loads: Callable[[bytes], Any] | None
try:  # orjson parses a line ~3x faster; any line it refuses goes through json for the exact finding
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a declared dependency
    _fast_loads = None


class PointReplay:
    """Replays one events log in file order and accumulates the per-sample numbers."""

    def __init__(
        self,
        *,
        tokenizer,
        findings: Findings,
        display: str,
        point: str | None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        progress=None,
        declared_concurrency: int | None = None,
    ) -> None:
        # progress(lines_read): called every PROGRESS_EVERY_LINES lines, so a worker can heart-beat
        # through a multi-GB log and a terminal can show that a long point is moving.
        self.progress = progress
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
        self.warmup_issued = 0  # sample.issued lines before the first start_performance_tracking
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
        self.osl_latency = array("q")  # per osl entry: its turn's issue-to-complete time (e2e_interactivity)
        self.turns = 0  # tracked samples that are a conversation's turn (agentic_inference)
        self.untracked: set[str] = (
            set()
        )  # turns issued outside tracking, in flight (their OSL is full-run only)
        self.untracked_osl = array("q")  # OSL of the answered untracked turns (agentic-osl-range, full run)
        # per tracked sample, in issue order (checker.recompute.goodput): where its numbers sit in the series above
        self.sample_ttft_ns = array("q")  # -1 until its first chunk arrives
        self.sample_osl_at = array("q")  # index into osl, -1 when it has no output text
        self.sample_tpot_at = array("q")  # index into tpot_tokens/tpot_elapsed, -1 when it has no tpot
        self.sample_ok = bytearray()  # 1 once it completed with data and without an error.* event
        self.sample_error = bytearray()  # 1 when an error.* event arrived while it was in flight
        self.ledger = TokenLedger(self.counter)  # the token counts waiting, and their caches
        self.lines = 0
        # physical consistency (checker.judge.rules.physical): tracked requests in flight, replayed in file order, and
        # the digests that tell one raw log (or one tracked sample sequence) under two points
        self.declared_concurrency = declared_concurrency
        self.max_in_flight = 0
        self.max_in_flight_line: int | None = None  # the issue line where the maximum was first reached
        self.over_declared_line: int | None = (
            None  # the first issue line leaving more than declared in flight
        )
        self.log_digest = hashlib.sha256()  # of the log's bytes as written (decompressed)
        self.sequence_digest = hashlib.sha256()  # of the tracked sample uuids in issue order

    # -- findings ---------------------------------------------------------------------------
    def _finding(self, rule: str, severity: str, message: str, line: int | None, fix: str | None = None):
        seen = self._reported.get(rule, 0)
        self._reported[rule] = seen + 1
        if seen < MAX_FINDINGS_PER_RULE:
            self.findings.add(
                rule, severity, message, file=self.display, line=line, point=self.point, fix=fix
            )
        elif seen == MAX_FINDINGS_PER_RULE:
            self.findings.add(
                rule,
                severity,
                f"More {rule} findings in this log were left out.",
                file=self.display,
                point=self.point,
            )

    def _fallback(self, number: int, what: str, instead: str, why: str) -> None:
        self._finding(
            "tokenizer-chat-template",
            "warning",
            f"Line {number}: {what} were counted from {instead}, the client's own fallback, because {why}; "
            "the counts match a client that had the same problem, not the model's real prompt.",
            number,
            "Check with the model's tokenizer folder (tokenizer.json, tokenizer_config.json, chat_template.jinja).",
        )

    def _queue_isl(self, prompt: str) -> None:
        cached = self.ledger.prompt_cache.get(prompt)
        if cached is not None:
            self.isl.append(cached)
            return
        self.isl.append(0)
        self.ledger.queue_cached(self.ledger.prompt_cache, prompt, prompt, [(self.isl, len(self.isl) - 1)])

    # -- replay -----------------------------------------------------------------------------
    def feed(self, stream: BufferedIOBase) -> None:
        def too_long(line: int, size: int) -> None:
            self._finding(
                "raw-log-line-too-long",
                "error",
                f"Line {line} is {size:,} bytes, over the {self.max_line_bytes:,}-byte cap; "
                "it was skipped, so the recomputed metrics may be incomplete.",
                line,
                "Upload the events.jsonl exactly as the client wrote it.",
            )

        progress = self.progress
        hashed = _HashingReader(stream, self.log_digest)
        for number, raw in iter_lines(hashed, max_line_bytes=self.max_line_bytes, on_too_long=too_long):
            self.lines = number
            if progress is not None and number % PROGRESS_EVERY_LINES == 0:
                progress(number)
            if self.ended:
                break
            event = self._parse(number, raw)
            if event is not None:
                self._apply(number, event)
        while hashed.read(READ_BLOCK_BYTES):  # the digest covers the whole file, past session.ended too
            pass

    def _parse(self, number: int, raw: bytes) -> dict | None:
        if _fast_loads is not None:
            try:
                event = _fast_loads(raw)
            except ValueError:
                event = None  # let the exact path below name the problem
            if isinstance(event, dict):
                ts = event.get("timestamp_ns")
                if isinstance(event.get("event_type"), str) and type(ts) is int and ts >= 0:
                    return event
        if not raw.strip():  # a blank line (rare): skipped, checked only once the fast parse failed
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._finding(
                "raw-log-invalid-utf8",
                "error",
                f"Line {number} is not valid UTF-8 (byte {exc.start}); the line was skipped.",
                number,
                "Upload the events.jsonl exactly as the client wrote it.",
            )
            return None
        try:
            event = _decode(text)
        except ValueError as exc:
            if "non-finite" in str(exc):
                self._finding(
                    "raw-log-nonfinite",
                    "error",
                    f"Line {number} holds NaN or Infinity, which the client never writes; "
                    "the line was skipped.",
                    number,
                )
            else:
                self._finding(
                    "raw-log-invalid-json",
                    "error",
                    f"Line {number} is not valid JSON ({exc}); the line was skipped.",
                    number,
                    "A truncated last line usually means the log was cut while copying.",
                )
            return None
        if not isinstance(event, dict) or not isinstance(event.get("event_type"), str):
            self._finding(
                "raw-log-invalid-event",
                "error",
                f"Line {number} is not an event object with an 'event_type'.",
                number,
            )
            return None
        ts = event.get("timestamp_ns")
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            self._finding(
                "raw-log-invalid-event",
                "error",
                f"Line {number}: 'timestamp_ns' must be a non-negative integer, got {ts!r}.",
                number,
            )
            return None
        return event

    def _apply(self, number: int, event: dict) -> None:
        kind = event["event_type"]
        ts = event["timestamp_ns"]
        if kind != "sample.complete":
            # Everything but completes is written by the main process in time order.
            if self.last_main_ns is not None and ts < self.last_main_ns:
                self._finding(
                    "raw-log-non-monotonic",
                    "error",
                    f"Line {number} ({kind}) is timestamped {self.last_main_ns - ts:,} ns before "
                    "the previous main-process event; the client writes these in time order.",
                    number,
                )
            else:
                self.last_main_ns = ts
        if kind.startswith("session."):
            self._session(number, kind, ts)
            return
        if kind.startswith("error."):
            uuid = event.get("sample_uuid")
            if uuid and uuid in self.inflight:
                self.n_failed += 1
                self.sample_error[self.inflight[uuid][3]] = 1
            return
        uuid = event.get("sample_uuid")
        if not isinstance(uuid, str) or not uuid:
            if kind.startswith("sample."):
                self._finding(
                    "raw-log-invalid-event",
                    "error",
                    f"Line {number}: {kind} without a 'sample_uuid'.",
                    number,
                )
            return
        if kind == "sample.issued":
            self._issued(number, uuid, ts, event.get("data"), event.get("turn"))
        elif kind == "sample.recv_first":
            row = self.inflight.get(uuid)
            if row is None:
                return
            if row[1] is not None:
                self._finding(
                    "raw-log-duplicate-event",
                    "error",
                    f"Line {number}: a second sample.recv_first for sample {uuid}; only the first was used.",
                    number,
                )
                return
            if ts < row[0]:
                self._finding(
                    "raw-log-timestamp-order",
                    "error",
                    f"Line {number}: sample {uuid} received its first chunk before it was issued.",
                    number,
                )
            row[1] = ts
            self.ttft.append(ts - row[0])
            self.sample_ttft_ns[row[3]] = ts - row[0]
        elif kind == "sample.complete":
            self._complete(number, uuid, ts, event)

    def _session(self, number: int, kind: str, ts: int) -> None:
        if kind == "session.started":
            if self.started:
                self._finding(
                    "raw-log-duplicate-event", "error", f"Line {number}: a second session.started.", number
                )
            self.started = True
        elif kind == "session.start_performance_tracking":
            if self.tracking:
                self._finding(
                    "raw-log-duplicate-event",
                    "warning",
                    f"Line {number}: start_performance_tracking while already tracking.",
                    number,
                )
                return
            self.tracking = True
            self.blocks.append([ts, None])
        elif kind == "session.stop_performance_tracking":
            self.tracking = False
            self.stop_ns = ts
        elif kind == "session.ended":
            self.ended = True

    def _issued(self, number: int, uuid: str, ts: int, data: Any, turn: Any = None) -> None:
        if uuid in self.inflight or uuid in self.done:
            self._finding(
                "raw-log-duplicate-event",
                "error",
                f"Line {number}: sample {uuid} was issued twice in the tracked window; "
                "the second issue was ignored.",
                number,
            )
            return
        if not self.tracking:
            if not self.blocks:
                self.warmup_issued += 1
            elif turn is not None:
                self.untracked.add(uuid)
            return
        self.n_issued += 1
        if turn is not None:
            self.turns += 1
        self.inflight[uuid] = [ts, None, len(self.blocks) - 1, len(self.sample_ok)]
        self.sample_ttft_ns.append(-1)
        self.sample_osl_at.append(-1)
        self.sample_tpot_at.append(-1)
        self.sample_ok.append(0)
        self.sample_error.append(0)
        self.sequence_digest.update(uuid.encode("utf-8", "backslashreplace") + b"\n")
        in_flight = len(self.inflight)
        if in_flight > self.max_in_flight:
            self.max_in_flight, self.max_in_flight_line = in_flight, number
        declared = self.declared_concurrency
        if declared is not None and in_flight > declared and self.over_declared_line is None:
            self.over_declared_line = number
        # The client's IslTrigger: token ids, else a non-empty text, else the messages through the chat template;
        # an aborted turn (every field null) has no ISL.
        if isinstance(data, list) and len(data) > 1:
            token_ids = data[2] if len(data) > 2 else None
            if isinstance(token_ids, list):
                self.isl.append(len(token_ids))
            elif isinstance(data[1], str) and data[1]:
                self._queue_isl(data[1])
            elif (prompt := message_prompt(data)) is not None:
                text, why = self.counter.prompt_text(prompt)
                if why is not None:
                    self._fallback(number, "the input tokens of a message prompt", "its JSON text", why)
                self._queue_isl(text)

    def _complete(self, number: int, uuid: str, ts: int, event: dict) -> None:
        row = self.inflight.pop(uuid, None)
        if row is None and uuid in self.untracked:
            self.untracked.discard(uuid)
            self._untracked_osl(event.get("data"))
            return
        if row is None:
            if uuid in self.done:
                self._finding(
                    "raw-log-duplicate-event",
                    "error",
                    f"Line {number}: a second sample.complete for sample {uuid}; it was ignored.",
                    number,
                )
            return
        self.done.add(uuid)
        issued_ns, recv_first_ns, block, sample = row
        if ts < issued_ns:
            self._finding(
                "raw-log-timestamp-order",
                "error",
                f"Line {number}: sample {uuid} completed before it was issued.",
                number,
            )
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
        self.sample_ok[sample] = 0 if self.sample_error[sample] else 1
        if recv_first_ns is not None and ts < recv_first_ns:
            self._finding(
                "raw-log-negative-duration",
                "warning",
                f"Line {number}: sample {uuid} completed {recv_first_ns - ts:,} ns before its first chunk arrived; "
                "this negative time was left out of TPOT.",
                number,
            )
            recv_first_ns = None
        structured = structured_output(data)
        if structured is not None:
            self._complete_structured(number, sample, issued_ns, ts, recv_first_ns, *structured)
            return
        full, after = output_texts(data)
        tpot = None
        if recv_first_ns is not None and after:
            self.tpot_elapsed.append(ts - recv_first_ns)
            self.tpot_tokens.append(0)
            tpot = (self.tpot_tokens, len(self.tpot_tokens) - 1)
            self.sample_tpot_at[sample] = tpot[1]
        if not full:
            if tpot is not None:
                self.ledger.count_into(after, [tpot])
            return
        self.sample_osl_at[sample] = len(self.osl)
        self.osl.append(0)
        self.osl_latency.append(ts - issued_ns)
        osl = (self.osl, len(self.osl) - 1)
        cut = len(full) - len(after)
        if after and (cut == 0 or self.counter.splits_at(full, cut)) and full.endswith(after):
            # count(full) = count(first chunk) + count(after): one count of `after` serves both
            if cut:
                first = full[:cut]
                cached = self.ledger.first_cache.get(first)
                if cached is None:
                    self.ledger.queue_cached(self.ledger.first_cache, first, first, [osl])
                else:
                    self.osl[osl[1]] += cached
            self.ledger.count_into(after, [osl] if tpot is None else [osl, tpot])
        else:
            self.ledger.count_into(full, [osl])
            if tpot is not None:
                self.ledger.count_into(after, [tpot])

    def _untracked_osl(self, data: Any) -> None:
        """The OSL of a turn answered after tracking stopped: no statistic of the window, only the full-run mean."""
        if data is None:
            return
        structured = structured_output(data)
        if structured is not None:
            text, frame, _ = self.counter.answer_text(structured[0])
        else:
            text, frame = output_texts(data)[0], 0
            if not text:
                return
        self.untracked_osl.append(-frame)
        self.ledger.count_into(text, [(self.untracked_osl, len(self.untracked_osl) - 1)])

    def _complete_structured(
        self,
        number: int,
        sample: int,
        issued_ns: int,
        ts: int,
        recv_first_ns: int | None,
        whole: AssistantParts,
        after: AssistantParts,
    ) -> None:
        """An answer with reasoning or tool calls, counted as the client's MessageInput: the assistant message through
        the chat template minus its frame (the slot starts at -frame; summary() clamps at 0 as the client does)."""
        text, frame, why = self.counter.answer_text(whole)
        if why is not None:
            self._fallback(
                number, "the output tokens of an answer with reasoning or tool calls", "its joined parts", why
            )
        self.sample_osl_at[sample] = len(self.osl)
        self.osl.append(-frame)
        self.osl_latency.append(ts - issued_ns)
        self.ledger.count_into(text, [(self.osl, len(self.osl) - 1)])
        if recv_first_ns is None:
            return
        text, frame, _ = self.counter.answer_text(after)
        self.sample_tpot_at[sample] = len(self.tpot_tokens)
        self.tpot_elapsed.append(ts - recv_first_ns)
        self.tpot_tokens.append(-frame)
        self.ledger.count_into(text, [(self.tpot_tokens, len(self.tpot_tokens) - 1)])

    # -- result -----------------------------------------------------------------------------
    def summary(self) -> dict:
        self.ledger.flush()
        if not self.blocks:
            self._finding(
                "raw-log-structure",
                "error",
                "The log has no session.start_performance_tracking event, so no sample is "
                "tracked and no metric can be recomputed.",
                None,
                "Upload the complete events.jsonl of the performance run.",
            )
        if not self.ended:
            self._finding(
                "raw-log-truncated",
                "error",
                f"The log ends after {self.lines:,} lines without session.ended: it is "
                "incomplete or was cut.",
                None,
                "Upload the complete events.jsonl.",
            )
        duration_ns = sum(
            latest - start for start, latest in self.blocks if latest is not None and start is not None
        )
        seconds = duration_ns / 1e9
        osl = np.maximum(
            _int64s(self.osl), 0
        )  # a templated answer can count below its frame: 0, as the client
        isl = _int64s(self.isl)
        tokens_after = _int64s(self.tpot_tokens)
        elapsed = _int64s(self.tpot_elapsed)
        keep = tokens_after > 0
        tpot = elapsed[keep].astype(np.float64) / tokens_after[keep].astype(np.float64)
        total_output_tokens = int(osl.sum())
        out: dict[str, Any] = {
            "n_samples_issued": self.n_issued,
            "n_samples_completed": self.n_completed,
            "n_samples_failed": self.n_failed,
            "duration_ns": duration_ns,
            "ttft": summarize(_int64s(self.ttft), early_stopping=True),
            "tpot": summarize(tpot, early_stopping=True),
            "latency": summarize(_int64s(self.latency), early_stopping=True),
            "output_sequence_lengths": summarize(osl, early_stopping=False),
            "input_sequence_lengths": summarize(isl, early_stopping=False),
            "qps": self.n_completed / seconds if seconds > 0 else None,
            "tps": total_output_tokens / seconds if seconds > 0 else None,
            "finish_reason_counts": dict(self.finish),
            "window_ns": [self.blocks[0][0], self.stop_ns] if self.blocks else None,
            "warmup": {"issued": self.warmup_issued},
            # Tracked requests in flight (issued, not yet completed), replayed in file order; the time-weighted
            # mean over the tracked window is the time all tracked requests spent in flight (their latencies,
            # each inside its tracking block) over the window's length (Little's law).
            "in_flight": {
                "max": self.max_in_flight,
                "max_line": self.max_in_flight_line,
                "over_declared_line": self.over_declared_line,
                "mean": float(_int64s(self.latency).sum()) / duration_ns if duration_ns > 0 else None,
            },
            "raw_log_sha256": self.log_digest.hexdigest(),
            "tracked_sequence_sha256": self.sequence_digest.hexdigest() if self.n_issued else None,
        }
        if self.turns:
            # agentic: the output tokens of the answered turns over the seconds those turns took (docs/agentic.md)
            turn_seconds = float(_int64s(self.osl_latency).sum()) / 1e9
            out["e2e_interactivity"] = total_output_tokens / turn_seconds if turn_seconds > 0 else None
            # every answered turn of the run, tracked or not: what agentic-osl-range gates (docs/agentic.md)
            full = np.concatenate([osl, np.maximum(_int64s(self.untracked_osl), 0)])
            out["output_sequence_lengths_full_run"] = {
                "output_sequence_lengths": {
                    "n": int(len(full)),
                    "avg": float(full.mean()) if len(full) else None,
                }
            }
        return out

    def samples(self) -> SampleSeries:
        """The per-sample arrays of the tracked samples (checker.recompute.goodput), after summary() has flushed the
        token counts."""
        self.ledger.flush()
        osl = np.maximum(_int64s(self.osl), 0)
        osl_at = _int64s(self.sample_osl_at)
        output_tokens = np.where(osl_at >= 0, osl[np.clip(osl_at, 0, None)] if len(osl) else 0, 0)
        tokens_after = _int64s(self.tpot_tokens)
        elapsed = _int64s(self.tpot_elapsed)
        tpot_at = _int64s(self.sample_tpot_at)
        tpot_ns = np.full(len(tpot_at), np.nan)
        has = tpot_at >= 0
        if has.any():
            after = tokens_after[tpot_at[has]]
            with np.errstate(divide="ignore", invalid="ignore"):
                tpot_ns[has] = np.where(after > 0, elapsed[tpot_at[has]] / np.maximum(after, 1), np.nan)
        duration_ns = sum(
            latest - start for start, latest in self.blocks if latest is not None and start is not None
        )
        return SampleSeries(
            ttft_ns=_int64s(self.sample_ttft_ns).copy(),
            tpot_ns=tpot_ns,
            output_tokens=np.asarray(output_tokens, dtype=np.int64),
            ok=np.frombuffer(bytes(self.sample_ok), dtype=np.uint8).astype(bool),
            duration_ns=int(duration_ns),
        )


class _HashingReader:
    """A binary stream's read() that also feeds every block it returns to a digest."""

    def __init__(self, stream: Readable, digest) -> None:
        self.stream = stream
        self.digest = digest

    def read(self, size: int = -1, /) -> bytes:
        block = self.stream.read(size)
        if block:
            self.digest.update(block)
        return block


def _int64s(series: array) -> np.ndarray:
    """A series of array("q") as int64 numbers, without a copy."""
    return np.frombuffer(series, dtype=np.int64) if series else np.zeros(0, np.int64)


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
    if "e2e_interactivity" in summary:
        derived["e2e_interactivity"] = (
            summary["e2e_interactivity"] if _finite(summary["e2e_interactivity"]) else None
        )
    return derived


def _finite(value: Any) -> TypeGuard[float]:
    return finite(value) is not None


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


def recompute_point(
    path: Path,
    *,
    tokenizer,
    findings: Findings,
    display: str,
    point: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress=None,
    declared_concurrency: int | None = None,
    on_samples: Callable[[SampleSeries], None] | None = None,
) -> dict | None:
    """Recompute one point's summary from its raw log; None when the log cannot be read at all.
    `declared_concurrency` lets the replay note the first line that leaves more requests in flight;
    on_samples receives the point's per-sample arrays (checker.recompute.goodput) once the summary is made."""
    replay = PointReplay(
        tokenizer=tokenizer,
        findings=findings,
        display=display,
        point=point,
        max_line_bytes=max_line_bytes,
        progress=progress,
        declared_concurrency=declared_concurrency,
    )
    try:
        stream = open_binary(path)
    except OSError as exc:
        findings.error(
            "raw-log-unreadable", f"The raw log cannot be opened: {exc.strerror}.", file=display, point=point
        )
        return None
    try:
        with stream:
            replay.feed(stream)
    except (CorruptStream, OSError, EOFError) as exc:
        findings.error(
            "raw-log-corrupt",
            f"The compressed raw log is truncated or corrupt after line {replay.lines:,} ({exc}).",
            file=display,
            point=point,
            fix="Compress the log again with `zstd events.jsonl` and upload it whole.",
        )
    summary = replay.summary()
    if on_samples is not None:
        on_samples(replay.samples())
    return summary
