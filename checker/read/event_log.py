"""The raw event log's format as the official client writes it: events.jsonl(.zst) read as numbered lines in bounded
memory, the finish reasons it names, and the output text of a completion (what the replay, checker.recompute.replay,
and the run archives' per-request reader, checker.read.kinds._events, both count)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import BufferedIOBase
from pathlib import Path
from typing import Any, Protocol

from checker.read.raw_logs import open_log

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call", "other")
READ_BLOCK_BYTES = 4 * 1024 * 1024


def open_binary(path: Path) -> BufferedIOBase:
    """A binary stream of the log, decompressing .zst on the fly (checker.read.raw_logs.open_log)."""
    return open_log(path, buffer_size=READ_BLOCK_BYTES)


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def iter_lines(stream: Readable, *, max_line_bytes: int, on_too_long) -> Iterator[tuple[int, bytes]]:
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
            block = block[cut + 1 :]
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
