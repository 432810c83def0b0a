"""The raw log of a load point (events.jsonl, or events.jsonl.zst decompressed on the fly), read under caps.

`open_events` raises `CorruptStream` (or its `LineTooLong`) rather than writing a finding, so that the
caller, who knows how far it got, can write it (rules events-corrupt-compression, events-line-too-long).
"""

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

CHUNK = 1024 * 1024  # copy / read granularity
_ZSTD_FEED = 1024  # compressed bytes fed per decompress call: bounds one call's output to ~32 MiB


class CorruptStream(Exception):
    """A compressed or line-oriented stream cannot be read to its end.

    `rule` is the finding rule id the caller should use, `line` the number of the last complete line
    handed out before the problem (0 when none), and str(exc) a sentence for the submitter.
    """

    rule = "events-corrupt-compression"

    def __init__(self, message: str, *, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


class LineTooLong(CorruptStream):
    """One line of the raw log is longer than Limits.max_line_bytes; reading stops there."""

    rule = "events-line-too-long"


# --------------------------------------------------------------------------------------------- zstd


class ZstdReader(io.RawIOBase):
    """Streaming zstd decompression that notices truncation (python-zstandard's reader does not).

    Feeds the decoder small slices of input so one call never produces more than ~32 MiB, walks
    across concatenated frames, and raises CorruptStream when the input ends inside a frame or the
    decoder reports an error.
    """

    def __init__(
        self, raw: io.BufferedIOBase | io.RawIOBase, *, name: str = "stream", closefd: bool = False
    ) -> None:
        super().__init__()
        self._raw = raw
        self._name = name
        self._closefd = closefd
        self._dctx = zstandard.ZstdDecompressor(max_window_size=1 << 31)
        self._obj = self._dctx.decompressobj()
        self._in_frame = False  # fed bytes to the current frame that have not completed it yet
        self._pending = b""
        self._pending_at = 0
        self._input = b""
        self._input_at = 0
        self._eof = False
        self.bytes_out = 0

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._closefd:
                self._raw.close()

    def readable(self) -> bool:
        return True

    def _feed(self) -> bytes:
        if self._input_at >= len(self._input):
            self._input = self._raw.read(64 * 1024)
            self._input_at = 0
            if not self._input:
                return b""
        data = self._input[self._input_at : self._input_at + _ZSTD_FEED]
        self._input_at += len(data)
        return data

    def _more(self) -> bool:
        """Fill self._pending with some output; False at the clean end of the input."""
        while True:
            data = self._feed()
            if not data:
                if self._in_frame:
                    raise CorruptStream(
                        f"{self._name}: zstd stream ends in the middle of a frame (truncated)"
                    )
                return False
            try:
                out = self._obj.decompress(data)
            except zstandard.ZstdError as exc:
                raise CorruptStream(f"{self._name}: zstd data is corrupt ({exc})") from None
            if self._obj.eof:
                rest = self._obj.unused_data
                self._obj = self._dctx.decompressobj()
                self._in_frame = False
                if rest:  # the start of the next frame: read it again with the new decoder
                    self._input = rest + self._input[self._input_at :]
                    self._input_at = 0
            else:
                self._in_frame = True
            if out:
                self._pending, self._pending_at = out, 0
                return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._pending_at >= len(self._pending):
            if self._eof or not self._more():
                self._eof = True
                return 0
        n = min(len(view), len(self._pending) - self._pending_at)
        view[:n] = self._pending[self._pending_at : self._pending_at + n]
        self._pending_at += n
        self.bytes_out += n
        return n


# --------------------------------------------------------------------------------------------- events


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def open_log(path: str | Path, *, buffer_size: int = CHUNK) -> io.BufferedIOBase:
    """A binary stream of events.jsonl or events.jsonl.zst, decompressing by content (zstd magic), not
    by name; closing it closes the file. A truncated or corrupt .zst raises CorruptStream while reading."""
    raw = open(path, "rb")  # noqa: SIM115 - owned by the returned stream
    if raw.peek(4)[:4] == ZSTD_MAGIC:
        return io.BufferedReader(ZstdReader(raw, name=Path(path).name, closefd=True), buffer_size=buffer_size)
    return raw


def open_events(path: str | Path, *, max_line_bytes: int | None = None) -> Iterator[bytes]:
    """Yield the lines (bytes, newline kept) of events.jsonl or events.jsonl.zst, in bounded memory.

    The file kind is chosen by its first bytes (zstd magic), not its name. Raises CorruptStream
    (rule "events-corrupt-compression") when a .zst stream is truncated or corrupt, and LineTooLong
    (a CorruptStream, rule "events-line-too-long") when a line exceeds `max_line_bytes`; both carry
    `.line`, the number of lines already yielded. Lines yielded before the exception are valid.
    The file is closed when the generator is exhausted or closed.
    """
    limit = max_line_bytes if max_line_bytes and max_line_bytes > 0 else None
    stream = open_log(path)
    try:
        line_no = 0
        while True:
            try:
                line = stream.readline(limit + 1 if limit else -1)
            except CorruptStream as exc:
                exc.line = line_no
                raise
            if not line:
                return
            if limit and len(line) > limit and not line.endswith(b"\n"):
                raise LineTooLong(
                    f"line {line_no + 1} is longer than {limit} bytes; the raw log cannot be read past it",
                    line=line_no,
                )
            line_no += 1
            yield line
    except OSError as exc:
        raise CorruptStream(f"cannot read {Path(path).name}: {exc}", line=0) from None
    finally:
        stream.close()
