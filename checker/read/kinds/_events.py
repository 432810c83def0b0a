"""The per-request reader of the MLPerf Endpoints raw log (events.jsonl[.zst]), shared by `bundle` and `run_archives`.

It yields the tracked samples (issued inside a performance-tracking block, DESIGN.md "Metrics") in file order
of their completion, as RequestRecords in seconds on the log's monotonic clock. The point's metrics are still
recomputed by checker.recompute.replay (the exact, tokenizer-batched replay); this reader is the common record type that
SLO queries and comparisons with imported runs use. Unparseable lines are skipped here: the recompute reports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from checker.read.kinds.base import RequestRecord
from checker.read.raw_logs import CorruptStream, open_events


def read_requests(
    path: Path, *, token_counter=None, max_line_bytes: int | None = None
) -> Iterator[RequestRecord]:
    """The tracked samples of the raw log at `path`; output tokens counted only when a token counter is given
    (checker.recompute.tokens.TokenCounter.output_tokens: an answer's OSL as the replay counts it)."""
    tracking = False
    inflight: dict[str, list] = {}  # uuid -> [issued_ns, first_ns, failed, turn]
    try:
        for raw in open_events(path, max_line_bytes=max_line_bytes):
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind, ts, uuid = event.get("event_type"), event.get("timestamp_ns"), event.get("sample_uuid")
            if not isinstance(kind, str) or not isinstance(ts, int):
                continue
            if kind == "session.start_performance_tracking":
                tracking = True
            elif kind == "session.stop_performance_tracking":
                tracking = False
            elif kind == "session.ended":
                break
            elif not isinstance(uuid, str):
                continue
            elif kind == "sample.issued":
                if tracking and uuid not in inflight:
                    turn = event.get("turn")
                    inflight[uuid] = [ts, None, False, turn if isinstance(turn, int) else None]
            elif kind == "sample.recv_first":
                if uuid in inflight and inflight[uuid][1] is None:
                    inflight[uuid][1] = ts
            elif kind.startswith("error."):
                if uuid in inflight:
                    inflight[uuid][2] = True
            elif kind == "sample.complete" and uuid in inflight:
                issued_ns, first_ns, failed, turn = inflight.pop(uuid)
                data = event.get("data")
                tokens = None
                if token_counter is not None and data is not None:
                    tokens = token_counter.output_tokens(data)
                yield RequestRecord(
                    issued_s=issued_ns / 1e9,
                    first_token_s=None if first_ns is None else first_ns / 1e9,
                    end_s=ts / 1e9,
                    output_tokens=tokens,
                    ok=not failed and data is not None,
                    turn=turn,
                )
    except (CorruptStream, OSError):
        return
