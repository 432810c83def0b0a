"""Checksum manifests in a bundle: `SHA256SUMS` at the bundle root, or `files` in cli_metadata.json.

`SHA256SUMS` uses the `sha256sum` format (`<64 hex>  <path>` per line, `*` before the path for
binary mode). cli_metadata.json may carry `"files": [{"path", "sha256", "size"}]` (a portal
extension; the official CLI writes no checksums). Every listed file must exist inside the bundle
and hash to the listed value; paths are never followed outside the bundle root.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path, PurePosixPath

from checker.report import Findings

MANIFEST = "SHA256SUMS"
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")
MAX_MANIFEST_ENTRIES = 100_000
CHUNK = 1024 * 1024


def _safe_target(root: Path, name: str) -> Path | None:
    """The file a manifest names, or None when the name would leave the bundle."""
    posix = PurePosixPath(name.strip())
    if not name.strip() or posix.is_absolute() or ".." in posix.parts or "\\" in name or "\x00" in name:
        return None
    target = root.joinpath(*posix.parts)
    try:
        target.resolve().relative_to(root.resolve())
    except (OSError, ValueError):
        return None
    return target


def sha256_file(path: Path) -> str:
    """SHA-256 of a regular file, read in chunks, never through a link at its last component."""
    digest = hashlib.sha256()
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _verify(
    root: Path,
    entries: list[tuple[int | None, str, str, int | None]],
    *,
    display: str,
    root_display: str,
    findings: Findings,
    known: dict[Path, tuple[str, int]] | None = None,
) -> int:
    checked = 0
    for line, name, expected, size in entries[:MAX_MANIFEST_ENTRIES]:
        pointer = None if line is not None else f"/files/{checked}"
        target = _safe_target(root, name)
        if target is None:
            findings.error(
                "checksum-path",
                f"{display} lists {name!r}, which is not a path inside the bundle.",
                file=display,
                line=line,
                pointer=pointer,
                fix="List paths relative to the bundle root, without '..' or a leading '/'.",
            )
            continue
        if target.is_symlink() or not target.is_file():
            findings.error(
                "checksum-missing-file",
                f"{display} lists {name}, which is not in the bundle.",
                file=display,
                line=line,
                pointer=pointer,
                fix="Upload the complete bundle, or regenerate the checksum list.",
            )
            continue
        # a raw log read through but not written (descriptors-only reading) was hashed on the way
        actual, actual_size = (known or {}).get(Path(os.path.realpath(target)), (None, None))
        if actual is None:
            actual, actual_size = sha256_file(target), target.stat().st_size
        checked += 1
        if actual != expected.lower():
            findings.error(
                "checksum-mismatch",
                f"{root_display}{name} has SHA-256 {actual[:16]}..., but {display} lists {expected[:16]}...: "
                "the file changed after the list was made, or was damaged in transfer.",
                file=f"{root_display}{name}",
                line=line,
                pointer=pointer,
                fix="Upload the files exactly as built, or regenerate the checksum list from them.",
            )
        elif size is not None and actual_size != size:
            findings.error(
                "checksum-mismatch",
                f"{root_display}{name} is {actual_size} bytes, {display} lists {size}.",
                file=f"{root_display}{name}",
                pointer=pointer,
            )
    if len(entries) > MAX_MANIFEST_ENTRIES:
        findings.warning(
            "checksum-malformed",
            f"{display} lists more than {MAX_MANIFEST_ENTRIES:,} files; the rest were not verified.",
            file=display,
        )
    return checked


def verify_bundle_checksums(
    root: Path | None,
    *,
    root_display: str,
    cli_metadata: Path | None,
    findings: Findings,
    known: dict[Path, tuple[str, int]] | None = None,
) -> int:
    """Verify every checksum manifest the bundle carries; returns how many files matched or not. `known`: real path
    -> (SHA-256, size) of files whose bytes are not on disk (raw logs read through, Layout.raw_log_digests)."""
    if root is None:
        return 0
    checked = 0
    manifest = root / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        display = f"{root_display}{MANIFEST}"
        entries: list[tuple[int | None, str, str, int | None]] = []
        with open(manifest, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if number > MAX_MANIFEST_ENTRIES + 1:
                    break
                try:
                    text = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    findings.error(
                        "checksum-malformed",
                        f"Line {number} of {MANIFEST} is not valid UTF-8.",
                        file=display,
                        line=number,
                    )
                    continue
                if not text.strip() or text.startswith("#"):
                    continue
                match = _LINE.match(text)
                if match is None:
                    findings.error(
                        "checksum-malformed",
                        f"Line {number} of {MANIFEST} is not '<sha256>  <path>'.",
                        file=display,
                        line=number,
                        fix="Make the list with `sha256sum` from the bundle root.",
                    )
                    continue
                entries.append((number, match.group(2), match.group(1), None))
        checked += _verify(
            root, entries, display=display, root_display=root_display, findings=findings, known=known
        )
    if cli_metadata is not None:
        try:
            meta = json.loads(cli_metadata.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = None  # the schema check reports an unreadable cli_metadata.json
        files = meta.get("files") if isinstance(meta, dict) else None
        if isinstance(files, list):
            entries = []
            for item in files:
                if (
                    isinstance(item, dict)
                    and isinstance(item.get("path"), str)
                    and isinstance(item.get("sha256"), str)
                    and re.fullmatch(r"[0-9a-fA-F]{64}", item["sha256"])
                ):
                    size = item.get("size") if isinstance(item.get("size"), int) else None
                    entries.append((None, item["path"], item["sha256"], size))
            checked += _verify(
                root,
                entries,
                display=f"{root_display}cli_metadata.json",
                root_display=root_display,
                findings=findings,
                known=known,
            )
    return checked
