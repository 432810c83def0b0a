"""Turns user-given paths (bundles, run archives, folders) into a sandboxed bundle layout, safely.

Accepted inputs (any mix, kind detected from content, not from the file name):
  * a bundle folder: `<org>/<submission_id>/` itself (it has `results/`), or a folder holding exactly
    one such bundle up to two levels down;
  * a bundle archive: .tar.gz/.tgz, .tar.zst, .tar or .zip of such a folder;
  * official run archives (.tar.gz with a top folder c<C>/) and unpacked run folders (point.yaml plus
    performance/result_summary.json or events.jsonl[.zst]).

Archives are read member by member as streams into `workdir` (one sub-folder per input): never
`extractall`, names checked before anything is created, files opened with O_EXCL|O_NOFOLLOW relative
to a directory fd, copies in 1 MiB chunks, caps from `Limits` (total bytes, members, ratio). User
folders are read in place and never written to. Every refusal is a finding; nothing raises.

Grouping. A bundle point is results/<system>/<model>/r<C>/ and takes system and model from those
folder names. A run archive or folder takes its system from system_power.json `system_desc_id`
(which is the bundle's system folder name, e.g. "Acme_AX-8000"), else system_desc.json `system_name`
with spaces turned into "_"; its model from point.yaml `model_name`. Concurrency comes from point.yaml
`concurrency`, else config.yaml settings.load_pattern.target_concurrency, else the folder name c<C>/r<C>.

Display paths (what findings print in `file`), always "/"-separated:
  * archive member: "<archive file name>:<member path as stored>", e.g.
    "AX-8000_c1.tar.gz:c1/performance/result_summary.json";
  * bundle folder: relative to the folder holding <org>/, e.g.
    "AcmeCompute/acme-2026-12-C0-endpoints-001/results/Acme_AX-8000/llama3_1-8b/r1/point.yaml";
  * run folder given unpacked: relative to its parent, e.g. "c1/performance/result_summary.json";
  * a folder ends with "/" (PointInput.display, Layout.root_display), a whole archive is its name.

Rule ids emitted here (docs/input-safety.md has examples and fixes): input-unreadable,
input-multiple-bundles, required-file, duplicate-point, events-ambiguous, archive-path-traversal,
archive-absolute-path, archive-bad-name, archive-link, archive-special-file, archive-encrypted,
archive-too-many-members, archive-too-large, archive-ratio, archive-corrupt, archive-duplicate-member.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from checker.loaders import CorruptStream, ZstdReader, load_descriptor_quietly
from checker.report import Findings
from checker.safedirs import open_subdir

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Caps applied to hostile input; every refusal becomes a finding, never an exception."""

    max_total_bytes: int = 64 * GiB  # total uncompressed bytes over all archives
    max_members: int = 200_000  # archive members over all archives
    max_member_ratio: float = 1000.0  # uncompressed / compressed, per member (and per archive stream)
    max_line_bytes: int = 64 * MiB  # one line of events.jsonl
    max_descriptor_bytes: int = 32 * MiB  # one JSON / YAML descriptor


@dataclass
class PointInput:
    """One load point, its files found in the sandbox, in the bundle's point layout."""

    system: str
    model: str
    concurrency: int
    source: str  # "bundle" | "run-archive" | "run-folder"
    display: str  # how findings name this point's folder, e.g. "AX-8000_c1.tar.gz:c1/" or "results/S/M/r1/"
    dir: Path  # folder in the sandbox (or the user's own folder when given unpacked; never written to)
    # logical name -> file path. Logical names: point.yaml, system_desc.json, result_summary.json,
    # accuracy_results.json, config.yaml, report.txt, sample_idx_map.json, final_snapshot.json,
    # system_power.json (run archives carry their own copy), events (events.jsonl or events.jsonl.zst),
    # power (folder with a measured power trace, portal extension)
    files: dict[str, Path] = field(default_factory=dict)
    # logical name -> display path used in findings ("AX-8000_c1.tar.gz:c1/performance/result_summary.json")
    displays: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.system}/{self.model}/r{self.concurrency}"

    def display_of(self, name: str) -> str:
        return self.displays.get(name) or f"{self.display}{name}"

    def has(self, name: str) -> bool:
        return name in self.files


@dataclass
class Layout:
    """What the inputs hold, grouped: points by (system, model), plus bundle-level files."""

    kind: str  # "bundle" | "run-archives" | "mixed" | "empty"
    points: list[PointInput] = field(default_factory=list)
    root: Path | None = None  # bundle root (<org>/<submission_id>/) when the input was a bundle
    root_display: str = ""
    organisation: str | None = None
    submission_id: str | None = None
    system_power: dict[str, Path] = field(
        default_factory=dict
    )  # system -> results/<system>/system_power.json
    src_readmes: list[Path] = field(default_factory=list)
    docs: list[Path] = field(default_factory=list)
    cli_metadata: Path | None = None
    displays: dict[Path, str] = field(default_factory=dict)  # any sandbox path -> display path
    readable_inputs: int = 0  # how many of the given paths could be opened at all

    def display_for(self, path: Path) -> str:
        """The display path of any file the layout found (falls back to the file name)."""
        return self.displays.get(path) or path.name

    def curves(self) -> dict[tuple[str, str], list[PointInput]]:
        out: dict[tuple[str, str], list[PointInput]] = {}
        for p in sorted(self.points, key=lambda p: (p.system, p.model, p.concurrency)):
            out.setdefault((p.system, p.model), []).append(p)
        return out


# ============================================================================================ reading

ARCHIVE_READ_BYTES = MiB  # copy granularity for archive members
RATIO_FLOOR_BYTES = 64 * 1024  # compressed sizes below this count as this much when checking ratios
MAX_HEADER_BYTES = MiB  # largest pax / GNU long-name header we agree to read into memory
MAX_NAME_PARTS = 64

# logical name -> where the file may sit inside a point folder (bundle layout first, run folder second)
POINT_FILES: dict[str, tuple[str, ...]] = {
    "point.yaml": ("point.yaml",),
    "system_desc.json": ("system_desc.json",),
    "result_summary.json": ("result_summary.json", "performance/result_summary.json"),
    "accuracy_results.json": ("accuracy_results.json", "accuracy/accuracy_results.json"),
    "config.yaml": ("config.yaml",),
    "report.txt": ("report.txt",),
    "sample_idx_map.json": ("sample_idx_map.json",),
    "final_snapshot.json": ("metrics/final_snapshot.json", "final_snapshot.json"),
    "system_power.json": ("system_power.json",),
}
# every point must have these (system_power.json sits one level up in a bundle); accuracy_results.json
# is only written at the points that ran the accuracy probe, and the raw log is checked by check.py.
REQUIRED_FILES = (
    "point.yaml",
    "system_desc.json",
    "result_summary.json",
    "config.yaml",
    "report.txt",
    "sample_idx_map.json",
    "final_snapshot.json",
    "system_power.json",
)
EVENTS_NAMES = ("events.jsonl", "events.jsonl.zst")

_MAGIC_GZIP = b"\x1f\x8b"
_MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"
_MAGIC_ZIP = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_POINT_DIR = re.compile(r"^[rc](\d{1,7})$")


class _Refusal(Exception):
    """Stops reading the current archive: one finding, then what was already written is kept."""

    def __init__(self, rule: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.fix = fix


class _Budget:
    """Caps shared by every archive of one open_inputs call."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes_written = 0
        self.members = 0


class _CountingReader:
    """File-like `read` that counts bytes and enforces the caps on a decompressed stream."""

    def __init__(
        self,
        inner: Any,
        *,
        archive: str,
        budget: _Budget | None = None,
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
        return super()._proc_member(tarfile_obj)


def _name_problem(name: str) -> tuple[str, str] | None:
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

    def __init__(self, archive: Path, dest: Path, *, budget: _Budget, findings: Findings) -> None:
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
            f"{self.name}: member {member!r} {reason}; it was not extracted",
            file=f"{self.name}:{member}",
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
        problem = _name_problem(name)
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
                    self._copy(name, src, out, compressed_size)
                ok = True
            finally:
                if not ok:
                    self.written.discard(key)
                    with contextlib.suppress(OSError):
                        os.unlink(parts[-1], dir_fd=parent)
        finally:
            os.close(parent)

    def _copy(self, name: str, src: Any, out: Any, compressed_size: int | None) -> None:
        limits = self.budget.limits
        written = 0
        while True:
            chunk = src.read(ARCHIVE_READ_BYTES)
            if not chunk:
                return
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
            self.budget.bytes_written += len(chunk)
            out.write(chunk)

    # ---------------------------------------------------------------- tar (.tar, .tar.gz, .tar.zst)

    def extract_tar(self, compression: str) -> None:
        with open(self.archive, "rb") as raw_file:
            raw = _CountingReader(raw_file, archive=self.name)
            if compression == "gzip":
                inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")
            elif compression == "zstd":
                inner = ZstdReader(raw, name=self.name)
            else:
                inner = raw
            stream = _CountingReader(
                inner,
                archive=self.name,
                budget=self.budget,
                compressed=raw if compression != "none" else None,
            )
            tf = tarfile.open(fileobj=stream, mode="r|", tarinfo=_GuardedTarInfo)
            for member in tf:
                self.current = member.name
                if not self.count_member():
                    return
                self._tar_member(tf, member)
                tf.members.clear()  # stream mode keeps every header otherwise
            self.current = ""
            while stream.read(ARCHIVE_READ_BYTES):  # reach the end so gzip / zstd verify their trailers
                pass

    def _tar_member(self, tf: tarfile.TarFile, member: tarfile.TarInfo) -> None:
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
        src = tf.extractfile(member)
        if src is not None:
            self.write(name, parts, src, compressed_size=None)  # tar: the whole stream's ratio is watched

    # ---------------------------------------------------------------- zip

    def extract_zip(self) -> None:
        with zipfile.ZipFile(self.archive) as zf:
            for info in zf.infolist():
                self.current = info.filename
                if not self.count_member():
                    return
                try:
                    self._zip_member(zf, info)
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
                    # one bad member (CRC, unsupported method) does not spoil the others in a zip
                    self.findings.error(
                        "archive-corrupt",
                        f"{self.name}: member {info.filename!r} cannot be read ({exc}); it was skipped",
                        file=f"{self.name}:{info.filename}",
                        fix="Re-create the archive and upload it again.",
                    )
            self.current = ""

    def _zip_member(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
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
        with zf.open(info) as src:
            self.write(name, parts, src, compressed_size=info.compress_size)


def _sniff(path: Path) -> str | None:
    """Archive kind from the first bytes: 'gzip', 'zstd', 'zip', 'tar', or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
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


def _extract_archive(path: Path, kind: str, dest: Path, *, budget: _Budget, findings: Findings) -> bool:
    """Extract into dest; False when nothing could be read (the container itself is broken)."""
    ex = _Extractor(path, dest, budget=budget, findings=findings)
    at = lambda: f" at member {ex.current!r}" if ex.current else ""  # noqa: E731
    try:
        if kind == "zip":
            ex.extract_zip()
        else:
            ex.extract_tar({"gzip": "gzip", "zstd": "zstd", "tar": "none"}[kind])
    except _Refusal as exc:
        message = str(exc) if str(exc).startswith(path.name) else f"{path.name}{at()}: {exc}"
        findings.error(
            exc.rule, message, file=f"{path.name}:{ex.current}" if ex.current else path.name, fix=exc.fix
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
            file=f"{path.name}:{ex.current}" if ex.current else path.name,
            fix="Upload the archive again; check that the copy finished and that its checksum matches.",
        )
    except (struct.error, OverflowError, UnicodeError, KeyError, IndexError, TypeError) as exc:
        # malformed headers can trip the standard library's parsers in ways it does not wrap
        findings.error(
            "archive-corrupt",
            f"{path.name} has malformed headers{at()} ({type(exc).__name__}: {exc}); files after that point were not read",
            file=f"{path.name}:{ex.current}" if ex.current else path.name,
            fix="Re-create the archive with a standard tool and upload it again.",
        )
    finally:
        ex.close()
    return bool(ex.written)


# ============================================================================================ layout


class _Input:
    """One user-given path as found: its sandbox (or own) folder and how to display paths inside it."""

    def __init__(self, base: Path, prefix: str) -> None:
        self.base = base
        self.prefix = prefix

    def display(self, path: Path, *, folder: bool = False) -> str:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        rel = "" if rel == "." else rel
        return self.prefix + rel + ("/" if folder and rel else "")


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if _is_dir(p))
    except OSError:
        return []


def _is_run_folder(path: Path) -> bool:
    return _is_file(path / "point.yaml") and (
        _is_file(path / "performance" / "result_summary.json")
        or any(_is_file(path / n) for n in EVENTS_NAMES)
    )


def _find(root: Path) -> tuple[list[Path], list[Path]]:
    """(bundle roots, run folders) at depth 0..2 below root."""
    levels = [[root]]
    levels.append(_subdirs(root))
    levels.append([g for d in levels[1] for g in _subdirs(d)])
    bundles = [d for level in levels for d in level if _is_dir(d / "results")]
    if bundles:
        return bundles[:1] if bundles[0] == root else bundles, []
    for level in levels:
        runs = [d for d in level if _is_run_folder(d)]
        if runs:
            return [], runs
    return [], []


def _dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]... through nested mappings, None as soon as a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _as_concurrency(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _system_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.strip()).strip("_") or "unknown-system"


class _Builder:
    def __init__(self, limits: Limits, findings: Findings) -> None:
        self.limits = limits
        self.findings = findings
        self.layout = Layout(kind="empty")
        self.sources: set[str] = set()

    def note(self, path: Path, display: str) -> None:
        self.layout.displays[path] = display

    def point(
        self,
        folder: Path,
        src: _Input,
        *,
        source: str,
        system: str | None = None,
        model: str | None = None,
        system_power: Path | None = None,
    ) -> None:
        files: dict[str, Path] = {}
        displays: dict[str, str] = {}
        for logical, candidates in POINT_FILES.items():
            for rel in candidates:
                if _is_file(folder / rel):
                    files[logical] = folder / rel
                    break
        if system_power is not None and "system_power.json" not in files:
            files["system_power.json"] = system_power
        events = [folder / n for n in EVENTS_NAMES if _is_file(folder / n)]
        if events:
            files["events"] = events[0]
        if _is_dir(folder / "power"):
            files["power"] = folder / "power"
        for logical, path in files.items():
            displays[logical] = src.display(path, folder=logical == "power")
            self.note(path, displays[logical])

        point_yaml = load_descriptor_quietly(files.get("point.yaml"), limits=self.limits) or {}
        concurrency = _as_concurrency(point_yaml.get("concurrency"))
        if concurrency is None:
            config = load_descriptor_quietly(files.get("config.yaml"), limits=self.limits)
            concurrency = _as_concurrency(_dig(config, "settings", "load_pattern", "target_concurrency"))
        if concurrency is None:
            match = _POINT_DIR.match(folder.name)
            concurrency = int(match.group(1)) if match else 0
        model_name = point_yaml.get("model_name")
        model = model or (model_name if isinstance(model_name, str) and model_name else "unknown-model")
        if system is None:
            power = load_descriptor_quietly(files.get("system_power.json"), limits=self.limits) or {}
            desc = load_descriptor_quietly(files.get("system_desc.json"), limits=self.limits) or {}
            if isinstance(power.get("system_desc_id"), str) and power["system_desc_id"].strip():
                system = _system_id(power["system_desc_id"])
            elif isinstance(desc.get("system_name"), str) and desc["system_name"].strip():
                system = _system_id(desc["system_name"])
            else:
                system = "unknown-system"

        display = src.display(folder, folder=True)
        p = PointInput(
            system=system,
            model=model,
            concurrency=concurrency,
            source=source,
            display=display,
            dir=folder,
            files=files,
            displays=displays,
        )
        if len(events) > 1:
            self.findings.warning(
                "events-ambiguous",
                f"{display} holds both events.jsonl and events.jsonl.zst; events.jsonl is used",
                file=displays["events"],
                point=p.key,
                fix="Keep only one copy of the raw log.",
            )
        for logical in REQUIRED_FILES:
            if logical not in files:
                if source == "bundle" and logical == "system_power.json":
                    where_display = src.display(folder.parent.parent, folder=True) + "system_power.json"
                else:  # the official tools' place: a bundle's first candidate, a run folder's last
                    candidates = POINT_FILES[logical]
                    where_display = display + (
                        candidates[0]
                        if source == "bundle" or logical == "final_snapshot.json"
                        else candidates[-1]
                    )
                self.findings.error(
                    "required-file",
                    f"{p.key}: {logical} is missing (expected at {where_display})",
                    file=where_display,
                    point=p.key,
                    fix=f"Add {logical} as the official tools wrote it for this load point.",
                )
        self.layout.points.append(p)
        self.sources.add("bundle" if source == "bundle" else "run-archives")

    def bundle(self, root: Path, src: _Input, *, archive: bool) -> None:
        layout = self.layout
        if layout.root is None:
            layout.root = root
            layout.root_display = src.display(root, folder=True)
            if root != src.base or not archive:
                layout.submission_id = root.name
                layout.organisation = root.parent.name if root.parent != root else None
            if _is_file(root / "cli_metadata.json"):
                layout.cli_metadata = root / "cli_metadata.json"
                self.note(layout.cli_metadata, src.display(layout.cli_metadata))
                meta = load_descriptor_quietly(layout.cli_metadata, limits=self.limits) or {}
                for attr, keys in (
                    ("submission_id", ("submission_id",)),
                    ("organisation", ("organisation", "organization", "org")),
                ):
                    for key in keys:
                        if getattr(layout, attr) is None and isinstance(meta.get(key), str):
                            setattr(layout, attr, meta[key])
        else:
            self.findings.warning(
                "input-multiple-bundles",
                f"more than one bundle was given; {src.display(root, folder=True)} is read as extra points of "
                f"{layout.root_display}",
                file=src.display(root, folder=True),
                fix="Check one bundle at a time.",
            )
        self.shared_docs(root, src, docs_folder="docs")
        for system_dir in _subdirs(root / "results"):
            system = system_dir.name
            power = system_dir / "system_power.json"
            if _is_file(power):
                layout.system_power.setdefault(system, power)
                self.note(power, src.display(power))
            else:
                power = None
            for model_dir in _subdirs(system_dir):
                for point_dir in _subdirs(model_dir):
                    self.point(
                        point_dir,
                        src,
                        source="bundle",
                        system=system,
                        model=model_dir.name,
                        system_power=power,
                    )

    def runs(self, folders: list[Path], src: _Input, *, source: str) -> None:
        for folder in folders:
            before = len(self.layout.points)
            self.point(folder, src, source=source)
            p = self.layout.points[before]
            power = p.files.get("system_power.json")
            if power is not None:
                self.layout.system_power.setdefault(p.system, power)
            self.shared_docs(folder, src, docs_folder="documentation")

    def shared_docs(self, folder: Path, src: _Input, *, docs_folder: str) -> None:
        """src/<impl>/README.md and <docs_folder>/*.md below a bundle root or a run folder."""
        for found, pattern, into in (
            ("src", "*/README.md", self.layout.src_readmes),
            (docs_folder, "*.md", self.layout.docs),
        ):
            for path in sorted((folder / found).glob(pattern)) if _is_dir(folder / found) else []:
                if _is_file(path):
                    into.append(path)
                    self.note(path, src.display(path))

    def finish(self) -> Layout:
        layout = self.layout
        kept: dict[str, PointInput] = {}
        for p in layout.points:
            if p.key in kept:
                self.findings.error(
                    "duplicate-point",
                    f"{p.key} is given twice: {kept[p.key].display} and {p.display}; only the first is read",
                    file=p.display,
                    point=p.key,
                    fix="Upload each load point once.",
                )
                continue
            kept[p.key] = p
        layout.points = list(kept.values())
        if not layout.points:
            layout.kind = "empty" if layout.root is None else "bundle"
        elif len(self.sources) > 1:
            layout.kind = "mixed"
        else:
            layout.kind = next(iter(self.sources))
        return layout


def _safe_label(index: int, path: Path) -> str:
    return f"{index:03d}-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", path.name)[:60] or "input")


def open_inputs(paths: list[str | Path], *, workdir: Path, limits: Limits, findings: Findings) -> Layout:
    """Read every path into `workdir` (a private temporary folder) and return the layout found.

    Never raises on bad input: every problem becomes a finding (see the module docstring).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    budget = _Budget(limits)
    builder = _Builder(limits, findings)
    for index, given in enumerate(paths):
        path = Path(given)
        shown = path.name or str(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            findings.error(
                "input-unreadable",
                f"{shown} cannot be opened: {exc.strerror or exc}",
                file=shown,
                fix="Give the path of a bundle folder, a bundle archive or a run archive.",
            )
            continue
        if stat.S_ISDIR(st.st_mode):
            bundles, runs = _find(path)
            if len(bundles) > 1:
                findings.error(
                    "input-unreadable",
                    f"{shown} holds {len(bundles)} bundles ({', '.join(b.name for b in bundles[:5])}); give one",
                    file=shown,
                    fix="Point the checker at one <org>/<submission_id>/ folder.",
                )
                continue
            if bundles:
                root = bundles[0]
                base = root.parent.parent if len(root.parents) >= 2 else root.parent
                builder.bundle(root, _Input(base, ""), archive=False)
            elif runs:
                for run in runs:
                    builder.runs([run], _Input(run.parent, ""), source="run-folder")
            else:
                findings.error(
                    "input-unreadable",
                    f"{shown} is neither a bundle (no results/ folder) nor a run folder (point.yaml with "
                    "performance/result_summary.json or events.jsonl)",
                    file=shown,
                    fix="Give the <org>/<submission_id>/ folder, a run folder or an archive of them.",
                )
                continue
            builder.layout.readable_inputs += 1
            continue
        kind = _sniff(path) if stat.S_ISREG(st.st_mode) else None
        if kind is None:
            findings.error(
                "input-unreadable",
                f"{shown} is not a recognised input (a folder, .tar.gz/.tgz, .tar.zst, .tar or .zip archive)",
                file=shown,
                fix="Upload the bundle or run archives as the official tools write them.",
            )
            continue
        dest = workdir / _safe_label(index, path)
        for attempt in range(1, 1000):  # a workdir reused by an earlier call keeps its folders
            try:
                os.mkdir(dest, 0o700)
                break
            except FileExistsError:
                dest = workdir / f"{_safe_label(index, path)}-{attempt}"
        before = len(findings)
        extracted = _extract_archive(path, kind, dest, budget=budget, findings=findings)
        bundles, runs = _find(dest)
        src = _Input(dest, f"{path.name}:")
        if len(bundles) > 1:
            findings.error(
                "input-unreadable",
                f"{shown} holds {len(bundles)} bundles; upload one per archive",
                file=shown,
                fix="Pack one <org>/<submission_id>/ folder per archive.",
            )
            continue
        if bundles:
            builder.bundle(bundles[0], src, archive=True)
        elif runs:
            builder.runs(runs, src, source="run-archive")
        else:
            if extracted or len(findings) == before:
                findings.error(
                    "input-unreadable",
                    f"{shown} holds neither a bundle (results/ folder) nor a run folder (point.yaml with "
                    "performance/result_summary.json or events.jsonl)",
                    file=shown,
                    fix="Upload the bundle or run archives as the official tools write them.",
                )
            continue
        builder.layout.readable_inputs += 1
    return builder.finish()
