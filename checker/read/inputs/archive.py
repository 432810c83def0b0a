"""Reads bundle and run archives into a private folder, member by member, refusing anything unsafe.

Archives are read member by member as streams into `workdir` (one sub-folder per input): never
`extractall`, names checked before anything is created, files opened with O_EXCL|O_NOFOLLOW relative
to a directory fd, copies in 1 MiB chunks, caps from `Limits` (total bytes, members, ratio). Every
refusal is a finding; nothing raises.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import zstandard

from checker.read.inputs.limits import Limits, MiB
from checker.read.raw_logs import CorruptStream, ZstdReader
from checker.read.safedirs import open_subdir
from checker.report import Findings

ARCHIVE_READ_BYTES = MiB  # copy granularity for archive members
RATIO_FLOOR_BYTES = 64 * 1024  # compressed sizes below this count as this much when checking ratios
MAX_HEADER_BYTES = MiB  # largest pax / GNU long-name header we agree to read into memory
MAX_NAME_PARTS = 64

# The raw logs: the largest members by far, read only by the per-point recompute. Reading with raw_logs=False
# streams them through (every cap and corruption check still applies, their SHA-256 is taken) but writes each
# as an empty placeholder: the steps that only need the descriptors save the disk and the writes.
RAW_LOG_NAMES = ("events.jsonl", "events.jsonl.zst")

_MAGIC_GZIP = b"\x1f\x8b"
_MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"
_MAGIC_ZIP = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")


class _Refusal(Exception):
    """Stops reading the current archive: one finding, then what was already written is kept."""

    def __init__(self, rule: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.fix = fix


class Budget:
    """Caps shared by every archive of one open_inputs call."""

    def __init__(self, limits: Limits, *, inflation_basis: int = 0) -> None:
        self.limits = limits
        self.bytes_written = 0
        self.members = 0
        self.inflated = limits.inflated_before  # bytes read out of archives (tar streams, zip members)
        self.inflation_basis = limits.inflation_basis_bytes or inflation_basis
        self.raw_logs = True  # False: raw logs are read through, not written (open_inputs(raw_logs=False))
        self.raw_log_digests: dict[
            Path, tuple[str, int]
        ] = {}  # real path of a placeholder -> (SHA-256, size)
        self.inflation_cap = (
            int(limits.max_inflation * max(self.inflation_basis, RATIO_FLOOR_BYTES))
            if limits.max_inflation is not None
            else None
        )

    def inflate(self, count: int, archive: str) -> None:
        """Count `count` more bytes read out of `archive`; a _Refusal past the inputs' inflation cap."""
        self.inflated += count
        if self.inflation_cap is not None and self.inflated > self.inflation_cap:
            raise _Refusal(
                "archive-inflation",
                f"{archive}: the inputs expand to more than {self.limits.max_inflation:g} times their "
                f"{self.inflation_basis} compressed bytes (the cap is {self.inflation_cap} bytes); reading stopped",
                "Real result files compress 5 to 20 times: leave out padding, repeated content and files the "
                "checker does not need, or split the upload.",
            )


class _CountingReader:
    """File-like `read` that counts bytes and enforces the caps on a decompressed stream."""

    def __init__(
        self,
        inner: Any,
        *,
        archive: str,
        budget: Budget | None = None,
        compressed: _CountingReader | None = None,
    ) -> None:
        self.inner = inner
        self.count = 0
        self.archive = archive
        self.budget = budget
        self.compressed = compressed

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > 16 * MiB:
            size = 16 * MiB  # tarfile never needs more at once; larger asks are served in pieces
        data = self.inner.read(size)
        self.count += len(data)
        if self.budget is not None:
            self.budget.inflate(len(data), self.archive)
        if self.compressed is not None and self.budget is not None:
            limits = self.budget.limits
            basis = max(self.compressed.count, RATIO_FLOOR_BYTES)
            if self.count > limits.max_member_ratio * basis:
                raise _Refusal(
                    "archive-ratio",
                    f"{self.archive} expands to more than {limits.max_member_ratio:g} times its compressed size "
                    f"({self.count} bytes from {self.compressed.count}); reading stopped (possible archive bomb)",
                    "Pack the files without padding or repeated content; real result files never compress this well.",
                )
            if self.count > limits.max_total_bytes:
                raise _Refusal(
                    "archive-too-large",
                    f"{self.archive} expands to more than {limits.max_total_bytes} bytes; reading stopped",
                    "Split the upload or leave out files the checker does not need.",
                )
        return data


class _HashSink:
    """Where a raw log read through goes: its SHA-256, not the disk."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return len(data)


class _GuardedTarInfo(tarfile.TarInfo):
    """Refuses extended headers big enough to exhaust memory before tarfile reads them in."""

    def _proc_member(self, tarfile_obj: Any) -> Any:
        if (
            self.type
            in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
            and self.size > MAX_HEADER_BYTES
        ):
            raise _Refusal(
                "archive-corrupt",
                f"has an extended tar header of {self.size} bytes (more than {MAX_HEADER_BYTES})",
                "Re-create the archive with a standard tar tool.",
            )
        return super()._proc_member(tarfile_obj)  # type: ignore[misc]  # tarfile's private hook, absent from the stubs


def printable_name(name: str) -> str:
    """A member name as findings show it: bytes that are not UTF-8 as \\xNN (tar hands them over as surrogate
    escapes), NUL and other control characters as \\xNN or \\uNNNN; a plain name is unchanged."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that does not stand for a byte
        raw = name.encode("utf-8", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(
        ch if ch.isprintable() else (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        for ch in text
    )


def quoted_name(name: str) -> str:
    """How messages quote a member name: repr() for a plain name, the escaped bytes in quotes otherwise."""
    shown = printable_name(name)
    return repr(name) if shown == name else f"'{shown}'"


def name_problem(name: str) -> tuple[str, str] | None:
    """(rule, reason) when an archive member name must not be written, else None."""
    if "\x00" in name:
        return "archive-bad-name", "contains a NUL byte"
    if "\\" in name:
        return "archive-bad-name", "contains a backslash (Windows path separators are not allowed)"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "archive-absolute-path", "is an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "archive-path-traversal", "contains a '..' component that points outside the archive"
    if any(ord(ch) < 32 or 0xD800 <= ord(ch) <= 0xDFFF or ord(ch) == 0x7F for ch in name):
        return "archive-bad-name", "contains control characters or bytes that are not UTF-8"
    if len(parts) > MAX_NAME_PARTS or any(len(p.encode("utf-8")) > 255 for p in parts):
        return "archive-bad-name", "is too deep or has a component longer than 255 bytes"
    return None


def _parts(name: str) -> list[str]:
    return [p for p in name.split("/") if p not in ("", ".")]


class _Extractor:
    """Writes archive members as streams into one private folder, refusing anything unsafe."""

    def __init__(self, archive: Path, dest: Path, *, budget: Budget, findings: Findings) -> None:
        self.archive = archive
        self.name = archive.name
        self.dest = dest
        self.budget = budget
        self.findings = findings
        self.written: set[tuple[str, ...]] = set()
        self.current = ""
        self.dest_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def close(self) -> None:
        os.close(self.dest_fd)

    def refuse(self, rule: str, member: str, reason: str, fix: str) -> None:
        self.findings.error(
            rule,
            f"{self.name}: member {quoted_name(member)} {reason}; it was not extracted",
            file=f"{self.name}:{printable_name(member)}",
            fix=fix,
        )

    def count_member(self) -> bool:
        if self.budget.members >= self.budget.limits.max_members:
            self.findings.error(
                "archive-too-many-members",
                f"{self.name} holds more than {self.budget.limits.max_members} members (over all inputs); "
                "the rest were not read",
                file=self.name,
                fix="Leave out files the checker does not need, or pack fewer points per upload.",
            )
            return False
        self.budget.members += 1
        return True

    def check_name(self, name: str) -> list[str] | None:
        problem = name_problem(name)
        if problem:
            rule, reason = problem
            fixes = {
                "archive-absolute-path": "Create the archive from inside the bundle folder with relative paths.",
                "archive-path-traversal": "Create the archive with relative paths that stay inside the bundle.",
                "archive-bad-name": "Rename the file to plain UTF-8 with '/' separators and re-create the archive.",
            }
            self.refuse(rule, name, reason, fixes[rule])
            return None
        parts = _parts(name)
        return parts or None

    def _open_parent(self, parts: list[str]) -> int:
        return open_subdir(self.dest_fd, parts, mode=0o700)

    def make_dir(self, name: str, parts: list[str]) -> None:
        try:
            os.close(self._open_parent(parts))
        except OSError:
            self.refuse(
                "archive-duplicate-member",
                name,
                "is a folder but a file of that name came earlier",
                "Re-create the archive so each path appears once.",
            )

    def write(self, name: str, parts: list[str], src: Any, *, compressed_size: int | None) -> None:
        """Copy `src` to dest/parts in chunks; raises _Refusal on a cap, keeps no partial file."""
        key = tuple(parts)
        if key in self.written:
            self.refuse(
                "archive-duplicate-member",
                name,
                "appears more than once in the archive (the first copy is used)",
                "Re-create the archive so each path appears once.",
            )
            return
        try:
            parent = self._open_parent(parts[:-1])
        except OSError:
            self.refuse(
                "archive-duplicate-member",
                name,
                "sits below a path that is a file, not a folder",
                "Re-create the archive so each path appears once.",
            )
            return
        try:
            try:
                fd = os.open(
                    parts[-1],
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600,
                    dir_fd=parent,
                )
            except OSError:
                self.refuse(
                    "archive-duplicate-member",
                    name,
                    "clashes with a file or folder of the same name",
                    "Re-create the archive so each path appears once.",
                )
                return
            self.written.add(key)
            ok = False
            try:
                with os.fdopen(fd, "wb") as out:
                    if self.budget.raw_logs or parts[-1] not in RAW_LOG_NAMES:
                        self._copy(name, src, out, compressed_size)
                    else:  # read through, hashed, not written
                        sink = _HashSink()
                        size = self._copy(name, src, sink, compressed_size)
                        path = os.path.realpath(self.dest.joinpath(*parts))
                        self.budget.raw_log_digests[Path(path)] = (sink.digest.hexdigest(), size)
                ok = True
            finally:
                if not ok:
                    self.written.discard(key)
                    with contextlib.suppress(OSError):
                        os.unlink(parts[-1], dir_fd=parent)
        finally:
            os.close(parent)

    def _copy(self, name: str, src: Any, out: Any, compressed_size: int | None) -> int:
        """Copy to `out` (a file, or a hash when only read through); returns the member's size."""
        limits = self.budget.limits
        written = 0
        while True:
            chunk = src.read(ARCHIVE_READ_BYTES)
            if not chunk:
                return written
            written += len(chunk)
            if self.budget.bytes_written + len(chunk) > limits.max_total_bytes:
                raise _Refusal(
                    "archive-too-large",
                    f"{self.name}: member {name!r} takes the inputs over {limits.max_total_bytes} uncompressed bytes; "
                    "reading stopped",
                    "Split the upload or leave out files the checker does not need.",
                )
            if compressed_size is not None and written > limits.max_member_ratio * max(
                compressed_size, RATIO_FLOOR_BYTES
            ):
                raise _Refusal(
                    "archive-ratio",
                    f"{self.name}: member {name!r} expands to more than {limits.max_member_ratio:g} times its "
                    f"compressed size of {compressed_size} bytes; reading stopped (possible zip bomb)",
                    "Pack the files without padding or repeated content; real result files never compress this well.",
                )
            if compressed_size is not None:  # a zip member (a tar stream is counted as it is read)
                self.budget.inflate(len(chunk), self.name)
            self.budget.bytes_written += len(chunk)
            out.write(chunk)

    # ---------------------------------------------------------------- tar (.tar, .tar.gz, .tar.zst)

    def extract_tar(self, compression: str) -> None:
        with open(self.archive, "rb") as raw_file:
            raw = _CountingReader(raw_file, archive=self.name)
            if compression == "gzip":
                # GzipFile, ZstdReader and tarfile's stream mode call only read() on these readers
                inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[call-overload]
            elif compression == "zstd":
                inner = ZstdReader(raw, name=self.name)  # type: ignore[arg-type]
            else:
                inner = raw
            stream = _CountingReader(
                inner,
                archive=self.name,
                budget=self.budget,
                compressed=raw if compression != "none" else None,
            )
            tar = tarfile.open(fileobj=stream, mode="r|", tarinfo=_GuardedTarInfo)  # type: ignore[call-overload]
            for member in tar:
                self.current = member.name
                if not self.count_member():
                    return
                self._tar_member(tar, member)
                tar.members.clear()  # stream mode keeps every header otherwise
            self.current = ""
            while stream.read(ARCHIVE_READ_BYTES):  # reach the end so gzip / zstd verify their trailers
                pass

    def _tar_member(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        name = member.name
        if member.issym() or member.islnk():
            kind = "a symbolic link" if member.issym() else "a hard link"
            self.refuse(
                "archive-link",
                name,
                f"is {kind} (to {member.linkname!r})",
                "Replace links with the real files before packing (tar --dereference).",
            )
            return
        if not (member.isreg() or member.isdir()) or member.issparse():
            self.refuse(
                "archive-special-file",
                name,
                "is not a regular file or folder (device, FIFO or sparse file)",
                "Pack only regular files and folders.",
            )
            return
        parts = self.check_name(name)
        if parts is None:
            return
        if member.isdir():
            self.make_dir(name, parts)
            return
        if self.budget.bytes_written + member.size > self.budget.limits.max_total_bytes:
            raise _Refusal(
                "archive-too-large",
                f"{self.name}: member {name!r} declares {member.size} bytes, over the {self.budget.limits.max_total_bytes}-byte "
                "limit for all inputs; reading stopped",
                "Split the upload or leave out files the checker does not need.",
            )
        src = tar.extractfile(member)
        if src is not None:
            self.write(name, parts, src, compressed_size=None)  # tar: the whole stream's ratio is watched

    # ---------------------------------------------------------------- zip

    def extract_zip(self) -> None:
        with zipfile.ZipFile(self.archive) as zip_file:
            for info in zip_file.infolist():
                self.current = info.filename
                if not self.count_member():
                    return
                try:
                    self._zip_member(zip_file, info)
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
                    # one bad member (CRC, unsupported method) does not spoil the others in a zip
                    self.findings.error(
                        "archive-corrupt",
                        f"{self.name}: member {quoted_name(info.filename)} cannot be read ({exc}); it was skipped",
                        file=f"{self.name}:{printable_name(info.filename)}",
                        fix="Re-create the archive and upload it again.",
                    )
            self.current = ""

    def _zip_member(self, zip_file: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        name = info.filename
        mode = info.external_attr >> 16
        if info.create_system == 3 and mode:
            if stat.S_ISLNK(mode):
                self.refuse(
                    "archive-link",
                    name,
                    "is a symbolic link",
                    "Replace links with the real files before packing.",
                )
                return
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and stat.S_IFMT(mode):
                self.refuse(
                    "archive-special-file",
                    name,
                    "is not a regular file or folder",
                    "Pack only regular files and folders.",
                )
                return
        parts = self.check_name(name)
        if parts is None:
            return
        if info.is_dir():
            self.make_dir(name, parts)
            return
        if info.flag_bits & 0x1:
            self.refuse("archive-encrypted", name, "is encrypted", "Upload the archive without a password.")
            return
        limits = self.budget.limits
        if self.budget.bytes_written + info.file_size > limits.max_total_bytes:
            raise _Refusal(
                "archive-too-large",
                f"{self.name}: member {name!r} declares {info.file_size} bytes, over the {limits.max_total_bytes}-byte "
                "limit for all inputs; reading stopped",
                "Split the upload or leave out files the checker does not need.",
            )
        if info.file_size > limits.max_member_ratio * max(info.compress_size, RATIO_FLOOR_BYTES):
            self.refuse(
                "archive-ratio",
                name,
                f"declares {info.file_size} bytes from {info.compress_size} compressed (possible zip bomb)",
                "Pack the files without padding or repeated content.",
            )
            return
        with zip_file.open(info) as src:
            self.write(name, parts, src, compressed_size=info.compress_size)


def sniff_archive(path: Path) -> str | None:
    """Archive kind from the first bytes: 'gzip', 'zstd', 'zip', 'tar', or None."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(512)
    except OSError:
        return None
    if head.startswith(_MAGIC_GZIP):
        return "gzip"
    if head.startswith(_MAGIC_ZSTD):
        return "zstd"
    if head.startswith(_MAGIC_ZIP):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return None


def extract_archive(path: Path, kind: str, dest: Path, *, budget: Budget, findings: Findings) -> bool:
    """Extract into dest; False when nothing could be read (the container itself is broken)."""
    extractor = _Extractor(path, dest, budget=budget, findings=findings)
    at = lambda: f" at member {quoted_name(extractor.current)}" if extractor.current else ""  # noqa: E731
    where = lambda: f"{path.name}:{printable_name(extractor.current)}" if extractor.current else path.name  # noqa: E731
    try:
        if kind == "zip":
            extractor.extract_zip()
        else:
            extractor.extract_tar({"gzip": "gzip", "zstd": "zstd", "tar": "none"}[kind])
    except _Refusal as exc:
        message = str(exc) if str(exc).startswith(path.name) else f"{path.name}{at()}: {exc}"
        findings.error(
            exc.rule,
            message,
            file=where(),
            fix=exc.fix,
        )
    except (
        tarfile.TarError,
        zipfile.BadZipFile,
        EOFError,
        zlib.error,
        CorruptStream,
        zstandard.ZstdError,
        gzip.BadGzipFile,
        ValueError,
    ) as exc:
        findings.error(
            "archive-corrupt",
            f"{path.name} is truncated or corrupt{at()} ({exc}); files after that point were not read",
            file=where(),
            fix="Upload the archive again; check that the copy finished and that its checksum matches.",
        )
    except (struct.error, OverflowError, UnicodeError, KeyError, IndexError, TypeError) as exc:
        # malformed headers can trip the standard library's parsers in ways it does not wrap
        findings.error(
            "archive-corrupt",
            f"{path.name} has malformed headers{at()} ({type(exc).__name__}: {exc}); files after that point were not read",
            file=where(),
            fix="Re-create the archive with a standard tool and upload it again.",
        )
    finally:
        extractor.close()
    return bool(extractor.written)
