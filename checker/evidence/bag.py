"""The evidence pack's layout: a BagIt bag (RFC 8493) with SHA-256 manifests, serialised as one zip whose single top
folder is the bag. Written here (the `bagit` package works on folders in place and cannot build a bag in memory or
read one from a zip); the tests read our bags with `bagit` as an independent check."""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
MANIFEST = "manifest-sha256.txt"
TAG_MANIFEST = "tagmanifest-sha256.txt"
FETCH = "fetch.txt"
MAX_FILES = 10_000
MAX_PACK_BYTES = 8 * 1024**3
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so the same bag always zips to the same bytes


class BagError(ValueError):
    """A pack that is not a readable bag."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Fetched:
    """A payload file held elsewhere (fetch.txt): its URL, size and SHA-256."""

    url: str
    size: int
    sha256: str


def _manifest(entries: dict[str, str]) -> bytes:
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(entries.items())).encode()


def bag_build(
    *,
    payload: dict[str, bytes],
    info: dict[str, str],
    fetched: dict[str, Fetched] | None = None,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The bag's files {path: bytes} without its tag manifest, and the payload manifest {path: sha256}. Payload
    paths start with data/; `fetched` payload files are listed in the manifest and in fetch.txt, not held."""
    fetched = fetched or {}
    for name in [*payload, *fetched]:
        if not name.startswith("data/") or ".." in PurePosixPath(name).parts:
            raise BagError(f"A payload file lives under data/: {name!r}.")
    entries = {name: sha256_hex(data) for name, data in payload.items()}
    entries |= {name: item.sha256 for name, item in fetched.items()}
    octets = sum(len(data) for data in payload.values()) + sum(item.size for item in fetched.values())
    lines = [f"{key}: {value}" for key, value in info.items()]
    lines.append(f"Payload-Oxum: {octets}.{len(entries)}")
    files = dict(payload)
    files["bagit.txt"] = BAGIT_TXT
    files["bag-info.txt"] = ("\n".join(lines) + "\n").encode()
    files[MANIFEST] = _manifest(entries)
    if fetched:
        files[FETCH] = "".join(
            f"{item.url} {item.size} {name}\n" for name, item in sorted(fetched.items())
        ).encode()
    return files, entries


def bag_finish(files: dict[str, bytes]) -> dict[str, bytes]:
    """The bag with its tag manifest over every file outside data/."""
    tags = {name: sha256_hex(data) for name, data in files.items() if not name.startswith("data/")}
    tags.pop(TAG_MANIFEST, None)
    return {**files, TAG_MANIFEST: _manifest(tags)}


def bag_zip(name: str, files: dict[str, bytes]) -> bytes:
    """The bag as a zip with one top folder `name`, same bytes for the same files."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            entry = zipfile.ZipInfo(f"{name}/{path}", date_time=ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, files[path])
    return out.getvalue()


@dataclass
class Bag:
    """A bag read back: its files, its name, and what its manifests and fetch.txt say."""

    name: str
    files: dict[str, bytes]
    manifest: dict[str, str] = field(default_factory=dict)
    tag_manifest: dict[str, str] = field(default_factory=dict)
    fetch: dict[str, Fetched] = field(default_factory=dict)


def _safe(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


def bag_read(path: Path) -> Bag:
    """Read a pack from its zip or its unpacked folder, refusing what a hostile archive holds (paths outside the
    bag, links, more than MAX_FILES files or MAX_PACK_BYTES bytes)."""
    raw: dict[str, bytes] = {}
    if path.is_dir():
        for item in sorted(path.rglob("*")):
            if item.is_symlink():
                raise BagError(f"{item} is a link: a pack holds files only.")
            if item.is_file():
                raw[item.relative_to(path).as_posix()] = item.read_bytes()
                if len(raw) > MAX_FILES:
                    raise BagError(f"The pack holds more than {MAX_FILES} files.")
        name = path.name
        files = raw
    else:
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise BagError(f"{path} is neither a pack folder nor a zip: {exc}.") from exc
        with archive:
            entries = [e for e in archive.infolist() if not e.is_dir()]
            if len(entries) > MAX_FILES or sum(e.file_size for e in entries) > MAX_PACK_BYTES:
                raise BagError("The pack is larger than a pack can be.")
            for entry in entries:
                if not _safe(entry.filename) or (entry.external_attr >> 16) & 0o170000 == 0o120000:
                    raise BagError(f"The zip entry {entry.filename!r} points outside the pack or is a link.")
                raw[entry.filename] = archive.read(entry)
        tops = {name.split("/", 1)[0] for name in raw}
        if len(tops) != 1 or any("/" not in name for name in raw):
            raise BagError("A serialised bag holds exactly one top folder.")
        name = tops.pop()
        files = {key.split("/", 1)[1]: value for key, value in raw.items()}
    bag = Bag(name=name, files=files)
    bag.manifest = _parse_manifest(files, MANIFEST)
    bag.tag_manifest = _parse_manifest(files, TAG_MANIFEST)
    if FETCH in files:
        for number, line in enumerate(files[FETCH].decode("utf-8", "replace").splitlines(), 1):
            parts = line.split(" ", 2)
            if len(parts) != 3 or not parts[1].isdigit() or not _safe(parts[2]):
                raise BagError(f"fetch.txt line {number} is not 'url length path'.")
            # a path the manifest does not list has no digest: the verifier reports it
            bag.fetch[parts[2]] = Fetched(parts[0], int(parts[1]), bag.manifest.get(parts[2], ""))
    return bag


def _parse_manifest(files: dict[str, bytes], name: str) -> dict[str, str]:
    if name not in files:
        raise BagError(f"The pack has no {name}.")
    entries = {}
    for number, line in enumerate(files[name].decode("utf-8", "replace").splitlines(), 1):
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or not _safe(path):
            raise BagError(f"{name} line {number} is not 'sha256  path'.")
        entries[path] = digest.lower()
    return entries
