"""The file browser of the review page: the members of a frozen version's stored archives, and one member
shown page by page with line numbers.

Archives are read as streams, never extracted and never loaded whole: tar members are walked in stream mode
(`r|`), a member's lines are read in 64 KiB chunks up to the requested page, every line is cut at
LINE_BYTES_MAX, and decompression is capped (ratio and total) as the checker caps it. A member is found by
its name inside the archive, never by a path on disk; names that could point outside the archive
(absolute, `..`, backslashes, NUL or control characters) are refused before anything is read.
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import zstandard
from django.core.cache import cache

from checker.read.inputs.archive import name_problem
from checker.recompute.chat_template import merge_tool_calls
from portal.errors import ApplicationError
from submissions.storage import storage_open_stream

MiB = 1024 * 1024
LINES_PER_PAGE = 200
LINES_PER_PAGE_MAX = 1000
LINE_BYTES_MAX = 4000  # a longer line is cut (and marked) on the page; download the file for all of it
# A conversation's events are read whole to say what each carried (an agentic prompt holds the whole history), then
# shown cut like any line; a page of a conversation holds at most LINES_PER_PAGE of them.
CONVERSATION_LINE_BYTES_MAX = 512 * 1024
MEMBERS_LISTED_MAX = 5000
SCAN_BYTES_MAX = 8 * 1024 * MiB  # decompressed bytes read to reach a member or a page
RATIO_MAX = 1000.0  # decompressed / compressed, as checker.read.inputs.Limits
RATIO_FLOOR_BYTES = 64 * 1024
HEADER_BYTES_MAX = MiB  # largest pax / GNU long-name header read into memory
CHUNK_BYTES = 64 * 1024


class PathRefused(ApplicationError):
    """A member name that could point outside the archive."""

    code = "path-outside-archive"
    status_code = 400


class MemberNotFound(ApplicationError):
    code = "member-not-found"
    status_code = 404


class ArchiveUnreadable(ApplicationError):
    code = "archive-unreadable"
    status_code = 422


@dataclass
class Member:
    """One entry of an archive: `viewable` when it is a regular file the browser can page through."""

    name: str
    size: int
    kind: str  # file, link, other
    viewable: bool


@dataclass
class MemberListing:
    members: list[Member]
    truncated: bool = False
    single_file: bool = False  # the stored file is not an archive: it is shown as one text member
    problem: str = ""


@dataclass
class Line:
    number: int
    text: str
    cut: bool = False
    turn: dict | None = None  # in a conversation: what the event carried (turn_row), read from the whole line


@dataclass
class MemberPage:
    member: str
    page: int
    per_page: int
    lines: list[Line] = field(default_factory=list)
    has_next: bool = False
    binary: bool = False
    conversation: str = (
        ""  # only the raw log's lines of this conversation (agentic runs), with their own numbers
    )
    decompressed: str = (
        ""  # "zstd" / "gzip" when a compressed member (events.jsonl.zst) is shown decompressed
    )

    @property
    def first_line(self) -> int:
        if self.conversation:
            return self.lines[0].number if self.lines else 0
        return (self.page - 1) * self.per_page + 1

    @property
    def last_line(self) -> int:
        return self.lines[-1].number if self.lines else self.first_line - 1


def member_name_checked(name: str) -> str:
    """The member name as given, or PathRefused when it could point outside the archive."""
    if not name or len(name) > 4096:
        raise PathRefused("Give the name of a file inside the archive.")
    problem = name_problem(
        name
    )  # the checker's own rule for member names (absolute, '..', NUL, backslash...)
    if problem is not None:
        raise PathRefused(f"That name {problem[1]}: give the name of a file inside the archive.")
    return name


def _clean(name: str) -> str:
    return "/".join(part for part in name.split("/") if part not in ("", "."))


# --- Capped streams ------------------------------------------------------------------------------


class _Counting:
    """read() that counts bytes and stops a decompressed stream at the ratio and total caps."""

    def __init__(self, inner: Any, *, compressed: Any = None, total_max: int = SCAN_BYTES_MAX):
        self.inner = inner
        self.compressed = compressed
        self.total_max = total_max
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > 16 * MiB:
            size = 16 * MiB
        data = self.inner.read(size)
        self.count += len(data)
        if self.compressed is not None and self.count > RATIO_MAX * max(
            self.compressed.count, RATIO_FLOOR_BYTES
        ):
            raise ArchiveUnreadable("The archive expands far beyond its compressed size; it is not shown.")
        if self.count > self.total_max:
            raise ArchiveUnreadable(
                f"Reaching this part of the archive means reading more than {self.total_max // MiB} MiB; "
                "download the file instead."
            )
        return data


class _Known:
    """A compressed size known in advance (a zip member's)."""

    def __init__(self, count: int):
        self.count = count


class _Prefixed:
    """A stream with its first bytes already read (to sniff the format) put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head = head
        self.rest = rest

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size is None or size < 0:
                data, self.head = self.head + self.rest.read(), b""
                return data
            data, self.head = self.head[:size], self.head[size:]
            return data
        return self.rest.read(size)


class _GuardedTarInfo(tarfile.TarInfo):
    """Refuses extended headers big enough to exhaust memory before tarfile reads them in."""

    def _proc_member(self, tarfile_obj: Any) -> Any:
        big = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
        if self.type in big and self.size > HEADER_BYTES_MAX:
            raise ArchiveUnreadable("The archive has an oversized tar header; it is not shown.")
        return super()._proc_member(tarfile_obj)  # type: ignore[misc]


def _sniff(stream: BinaryIO) -> tuple[str, Any]:
    head = stream.read(512)
    kind = "plain"
    if head.startswith(b"\x1f\x8b"):
        kind = "gzip"
    elif head.startswith(b"\x28\xb5\x2f\xfd"):
        kind = "zstd"
    elif head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        kind = "zip"
    elif len(head) >= 262 and head[257:262] == b"ustar":
        kind = "tar"
    return kind, _Prefixed(head, stream)


def _decompressed(kind: str, raw: _Counting, *, total_max: int = SCAN_BYTES_MAX) -> _Counting:
    if kind == "gzip":
        inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[call-overload]
    elif kind == "zstd":
        inner = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[arg-type]
    else:
        return _Counting(raw, total_max=total_max)
    return _Counting(inner, compressed=raw, total_max=total_max)


def _kind_of(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.issym() or info.islnk():
        return "link"
    return "dir" if info.isdir() else "other"


# --- Listing members ------------------------------------------------------------------------------

Opener = Callable[[], BinaryIO]


def _single_name(filename: str) -> str:
    for suffix in (".gz", ".zst"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def list_members(open_stream: Opener, filename: str) -> MemberListing:
    """The archive's regular files (and links, shown but not followed), in archive order, at most
    MEMBERS_LISTED_MAX. A stored file that is not an archive is one member named like the file."""
    stream = open_stream()
    try:
        kind, sniffed = _sniff(stream)
        raw = _Counting(sniffed)
        if kind == "zip":
            return _list_zip(open_stream)
        data = _decompressed(kind, raw)
        members: list[Member] = []
        try:
            tar = tarfile.open(fileobj=data, mode="r|", tarinfo=_GuardedTarInfo)  # type: ignore[call-overload]
        except tarfile.ReadError:
            return MemberListing([Member(_single_name(filename), 0, "file", True)], single_file=True)
        try:
            for info in tar:
                tar.members.clear()  # stream mode keeps every header otherwise
                if info.isdir():
                    continue
                if len(members) >= MEMBERS_LISTED_MAX:
                    return MemberListing(members, truncated=True)
                kind_of = _kind_of(info)
                members.append(Member(_clean(info.name), info.size, kind_of, kind_of == "file"))
        except (tarfile.TarError, EOFError, OSError, zstandard.ZstdError) as exc:
            return MemberListing(
                members, problem=f"The archive is damaged after {len(members)} files ({exc})."
            )
        return MemberListing(members)
    finally:
        stream.close()


def _list_zip(open_stream: Opener) -> MemberListing:
    with open_stream() as stream, zipfile.ZipFile(stream) as archive:  # type: ignore[arg-type]
        members = []
        for info in archive.infolist():
            if info.is_dir():
                continue
            if len(members) >= MEMBERS_LISTED_MAX:
                return MemberListing(members, truncated=True)
            members.append(Member(_clean(info.filename), info.file_size, "file", True))
        return MemberListing(members)


# --- One member, page by page ---------------------------------------------------------------------


def _lines(reader: Any, keep_max: int = LINE_BYTES_MAX) -> Iterator[tuple[bytes, bool]]:
    """(line without its newline, cut) from a read()-able stream: at most keep_max bytes of each line
    are kept, the rest is read past, never held."""
    kept = b""
    cut = False
    while True:
        chunk = reader.read(CHUNK_BYTES)
        if not chunk:
            if kept or cut:
                yield kept, cut
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            room = keep_max - len(kept)
            if len(piece) > room:
                kept += piece[:room]
                cut = True
            else:
                kept += piece
            if newline < 0:
                break
            yield kept, cut
            kept, cut = b"", False
            start = newline + 1


def _of_conversation(raw: bytes, wanted: bytes) -> bool:
    """The event line's conversation_id is `wanted` (a JSON string's bytes, quotes included)."""
    at = raw.find(b'"conversation_id"')
    if at < 0:
        return False
    rest = raw[at + len(b'"conversation_id"') :].lstrip(b" ")
    return rest.startswith(b":") and rest[1:].lstrip(b" ").startswith(wanted)


def _page_of(
    reader: Any, *, member: str, page: int, per_page: int, decompressed: str = "", conversation: str = ""
) -> MemberPage:
    result = MemberPage(
        member=member, page=page, per_page=per_page, decompressed=decompressed, conversation=conversation
    )
    first = (page - 1) * per_page + 1
    last = first + per_page - 1
    wanted = json.dumps(conversation).encode() if conversation else b""
    position = 0  # of the lines shown: every line, or those of the conversation
    keep = CONVERSATION_LINE_BYTES_MAX if conversation else LINE_BYTES_MAX
    for number, (raw, cut) in enumerate(_lines(reader, keep), start=1):
        if number == 1 and b"\x00" in raw:
            result.binary = True
            return result
        if wanted and not _of_conversation(raw, wanted):
            continue
        position += 1
        if position < first:
            continue
        if position > last:
            result.has_next = True
            break
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if not conversation:
            result.lines.append(Line(number, text, cut))
            continue
        row = turn_row(number, text, cut)  # from the whole line (a prompt's history is long), shown cut
        shown = raw[:LINE_BYTES_MAX].decode("utf-8", errors="replace").rstrip("\r")
        result.lines.append(Line(number, shown, cut or len(raw) > LINE_BYTES_MAX, turn=row))
    return result


_FIELD = re.compile(r'"(event_type|conversation_id)"\s*:\s*"((?:[^"\\]|\\.){0,200})"|"turn"\s*:\s*(\d+)')


def _fields(text: str) -> dict:
    """event_type, conversation_id and turn of an event line, read even from a line cut at LINE_BYTES_MAX."""
    found: dict = {}
    for match in _FIELD.finditer(text):
        if match.group(3) is not None:
            found.setdefault("turn", int(match.group(3)))
        else:
            found.setdefault(match.group(1), match.group(2))
    return found


def conversations_on(lines: list[Line]) -> list[str]:
    """The conversations (agentic runs) whose events are on these raw-log lines, in order of first appearance."""
    seen: dict[str, None] = {}
    for line in lines:
        conversation = _fields(line.text).get("conversation_id")
        if conversation:
            seen.setdefault(conversation, None)
    return list(seen)


def turn_row(number: int, text: str, cut: bool) -> dict:
    """One event of a conversation: line, turn, event and what it carried (the prompt's messages, the answer's
    text or tool calls, the error), so a reviewer reads the turns and their tool calls together."""
    fields = _fields(text)
    try:
        event = json.loads(text) if not cut else None
    except ValueError:
        event = None
    data = event.get("data") if isinstance(event, dict) else None
    kind = fields.get("event_type", "")
    detail, calls = "", []
    if kind == "sample.issued":
        if isinstance(data, list) and len(data) > 3 and isinstance(data[3], list):
            choice = data[7] if len(data) > 7 and data[7] else None
            detail = f"prompt of {len(data[3])} messages" + (f", tool_choice {choice}" if choice else "")
        elif isinstance(data, list) and all(x is None for x in data[1:]):
            detail = "aborted turn: no prompt"
        else:
            detail = "prompt (a line too long to read here: see it below)" if cut else ""
    elif kind == "sample.complete":
        if isinstance(event, dict) and data is None:
            detail = "no answer (the request failed or the turn was aborted)"
        elif isinstance(data, list) and len(data) > 1:
            reason = event.get("finish_reason") if isinstance(event, dict) else None
            output = (
                data[1]
                if isinstance(data[1], str)
                else "".join(x for x in data[1] or [] if isinstance(x, str))
            )
            calls = [
                f"{(c.get('function') or {}).get('name', '?')}({(c.get('function') or {}).get('arguments', '')})"
                for c in merge_tool_calls(data[3] if len(data) > 3 else None) or []
            ]
            detail = f"{reason or 'answer'}: {output[:160]}" if output else f"{reason or 'answer'}"
    elif kind.startswith("error.") and isinstance(data, list):
        detail = " ".join(str(x) for x in data[1:3])[:200]
    return {"line": number, "turn": fields.get("turn"), "event": kind, "detail": detail, "calls": calls}


def _member_reader(src: Any, name: str) -> tuple[Any, str]:
    """Compressed members (events.jsonl.zst, *.gz) are shown decompressed, with the same caps."""
    counted = _Counting(src)
    if name.endswith(".zst"):
        return _decompressed("zstd", counted), "zstd"
    if name.endswith(".gz") and not name.endswith(".tar.gz"):
        return _decompressed("gzip", counted), "gzip"
    return counted, ""


def member_page(
    open_stream: Opener,
    filename: str,
    member: str,
    *,
    page: int = 1,
    per_page: int = LINES_PER_PAGE,
    conversation: str = "",
) -> MemberPage:
    """Lines ((page-1)*per_page+1 ...) of one member, read as a stream up to that page."""
    member = member_name_checked(member)
    wanted = _clean(member)
    page = max(1, page)
    per_page = max(1, min(per_page, LINES_PER_PAGE_MAX))
    stream = open_stream()
    try:
        kind, sniffed = _sniff(stream)
        if kind == "zip":
            return _zip_page(open_stream, wanted, page=page, per_page=per_page, conversation=conversation)
        data = _decompressed(kind, _Counting(sniffed))
        try:
            tar = tarfile.open(fileobj=data, mode="r|", tarinfo=_GuardedTarInfo)  # type: ignore[call-overload]
        except tarfile.ReadError:
            if wanted != _single_name(filename):
                raise MemberNotFound(
                    f"{filename} is a single file, not an archive holding {member}."
                ) from None
            single = open_stream()
            try:
                single_kind, single_sniffed = _sniff(single)
                reader = _decompressed(single_kind, _Counting(single_sniffed))
                return _page_of(
                    reader, member=wanted, page=page, per_page=per_page, conversation=conversation
                )
            finally:
                single.close()
        try:
            for info in tar:
                tar.members.clear()
                if _clean(info.name) != wanted:
                    continue
                if not info.isreg():
                    raise MemberNotFound(f"{member} is not a regular file (links are not followed).")
                src = tar.extractfile(info)
                reader, decompressed = _member_reader(src, wanted)
                return _page_of(
                    reader,
                    member=wanted,
                    page=page,
                    per_page=per_page,
                    decompressed=decompressed,
                    conversation=conversation,
                )
        except (tarfile.TarError, EOFError, zstandard.ZstdError, gzip.BadGzipFile) as exc:
            raise ArchiveUnreadable(f"{filename} cannot be read up to {member} ({exc}).") from None
        raise MemberNotFound(f"{filename} holds no file {member}.")
    finally:
        stream.close()


def _zip_page(
    open_stream: Opener, wanted: str, *, page: int, per_page: int, conversation: str = ""
) -> MemberPage:
    with open_stream() as stream, zipfile.ZipFile(stream) as archive:  # type: ignore[arg-type]
        for info in archive.infolist():
            if _clean(info.filename) != wanted or info.is_dir():
                continue
            if info.flag_bits & 0x1:
                raise ArchiveUnreadable(f"{wanted} is encrypted.")
            with archive.open(info) as src:
                # a zip member's own ratio is capped like a tar stream's
                capped = _Counting(src, compressed=_Known(max(info.compress_size, RATIO_FLOOR_BYTES)))
                reader, decompressed = _member_reader(capped, wanted)
                return _page_of(
                    reader,
                    member=wanted,
                    page=page,
                    per_page=per_page,
                    decompressed=decompressed,
                    conversation=conversation,
                )
    raise MemberNotFound(f"The archive holds no file {wanted}.")


def page_of_line(line: int, per_page: int = LINES_PER_PAGE) -> int:
    return max(1, (max(1, line) - 1) // per_page + 1)


# --- Stored files of a version (Django side) ------------------------------------------------------


def version_file_members(version_file) -> MemberListing:
    """The members of one stored file, cached by its SHA-256 (the bytes never change)."""

    key = f"review:members:v1:{version_file.sha256}"
    listing = cache.get(key)
    if listing is None:
        listing = list_members(
            lambda: storage_open_stream(version_file.storage_key), version_file.original_filename
        )
        if not listing.problem:
            cache.set(key, listing, 24 * 3600)
    return listing


def version_file_page(
    version_file, member: str, *, page: int = 1, per_page: int = LINES_PER_PAGE, conversation: str = ""
) -> MemberPage:

    return member_page(
        lambda: storage_open_stream(version_file.storage_key),
        version_file.original_filename,
        member,
        page=page,
        per_page=per_page,
        conversation=conversation,
    )
