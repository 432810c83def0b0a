"""The raw event log's format as the official client writes it: events.jsonl(.zst) read as numbered lines in bounded
memory, the finish reasons it names, and the output text of a completion (what the replay, checker.recompute.replay,
and the run archives' per-request reader, checker.read.kinds._events, both count)."""

from __future__ import annotations

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
    """(full output text, text after the first streamed chunk) of a plain-text TextModelOutput payload: the chunks
    joined with no separator, the first streamed chunk being output[0] (the client's __str__ and
    text_after_first_chunk). An answer with reasoning or tool calls is counted through the chat template instead
    (checker.recompute.chat_template.structured_output)."""
    if not isinstance(data, list) or len(data) < 2:
        return "", ""
    output = data[1]
    if isinstance(output, str):
        return output, ""
    if isinstance(output, list):
        chunks = [s for s in output if isinstance(s, str)]
        return "".join(chunks), "".join(chunks[1:])
    return "", ""
