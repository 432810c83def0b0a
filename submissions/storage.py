"""Stored bytes: content-addressed keys, streaming reads, and the check worker's local cache of blobs.

Every verified file lives once under blobs/sha256/<ab>/<sha256> in the default storage (a local folder
or S3). A check task needs some of a version's files as local files: `fetch_to_folder` takes each from
this worker's cache (a folder keyed by SHA-256, PORTAL_CHECK_CACHE_DIR) or downloads it once, hashing
what it reads, so a point task reads only its own archive and repeats read nothing from storage.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

COPY_CHUNK_BYTES = 1024 * 1024


class StoredBlobCorruptError(Exception):
    """A stored blob's bytes no longer hash to its key: storage lost or changed data."""


def blob_key(sha256: str) -> str:
    """Where a verified file lives: content-addressed, so identical bytes are stored once."""
    return f"blobs/sha256/{sha256[:2]}/{sha256}"


def storage_open_stream(key: str) -> BinaryIO:
    """A readable stream of a stored object that never holds the whole object in memory.

    django-storages' S3File downloads the object into a spooled buffer on first read; for S3 we read
    the HTTP body directly instead.
    """
    bucket_name = getattr(default_storage, "bucket_name", None)
    if bucket_name and hasattr(default_storage, "connection"):
        client = default_storage.connection.meta.client
        name = default_storage._normalize_name(key)  # our keys are already clean relative paths
        return client.get_object(Bucket=bucket_name, Key=name)["Body"]
    return default_storage.open(key, "rb")


def storage_iter_chunks(key: str, chunk_bytes: int = COPY_CHUNK_BYTES) -> Iterator[bytes]:
    stream = storage_open_stream(key)
    try:
        while chunk := stream.read(chunk_bytes):
            yield chunk
    finally:
        stream.close()


def storage_save_exact(key: str, content: BinaryIO) -> str:
    """Save under exactly `key` unless it already exists (content-addressed keys hold the same bytes)."""
    if default_storage.exists(key):
        return key
    return default_storage.save(key, File(content, name=key.rsplit("/", 1)[-1]))


# --- the check worker's cache ------------------------------------------------------------------


@dataclass(frozen=True)
class StoredFile:
    """One stored file a check needs: where it is, what it must hash to, and the name findings give it."""

    storage_key: str
    sha256: str
    size_bytes: int
    filename: str


def _cache_dir() -> Path:
    folder = Path(settings.PORTAL_CHECK_CACHE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _download_verified(stored: StoredFile, target: Path, *, on_chunk: Callable[[], None] | None) -> None:
    """Copy the stored object to `target` (atomically), refusing bytes that do not hash to its SHA-256."""
    digest = hashlib.sha256()
    handle, partial_name = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    partial = Path(partial_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in storage_iter_chunks(stored.storage_key):
                digest.update(chunk)
                out.write(chunk)
                if on_chunk is not None:
                    on_chunk()
        if digest.hexdigest() != stored.sha256:
            raise StoredBlobCorruptError(
                f"stored file {stored.filename} ({stored.storage_key}) does not hash to its SHA-256 "
                f"{stored.sha256}: the storage lost or changed its bytes"
            )
        os.chmod(partial, 0o444)
        os.replace(partial, target)  # several worker processes may fetch the same blob: last one wins
    finally:
        partial.unlink(missing_ok=True)


def _evict(cache: Path, *, keep: set[Path]) -> None:
    """Drop the least recently used blobs until the cache fits PORTAL_CHECK_CACHE_MAX_BYTES."""
    budget = settings.PORTAL_CHECK_CACHE_MAX_BYTES
    entries = []
    for path in cache.iterdir():
        if path.name.startswith(".") or path in keep:
            continue
        try:
            info = path.stat()
        except FileNotFoundError:  # another process evicted it
            continue
        entries.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in entries) + sum(p.stat().st_size for p in keep if p.exists())
    for _, size, path in sorted(entries):
        if total <= budget:
            break
        path.unlink(missing_ok=True)  # a task still reading it holds a hard link, not this name
        total -= size


def fetch_to_folder(
    files: Iterable[StoredFile], folder: Path, *, on_chunk: Callable[[], None] | None = None
) -> list[Path]:
    """Local copies of `files` under `folder`, each as <folder>/<n>/<filename> (the checker names archives
    in findings by file name; numbered folders keep equal names apart). Served from the worker's cache
    when it holds the blob, otherwise downloaded once into it; returns the paths in order."""
    cache = _cache_dir()
    paths, used = [], set()
    for index, stored in enumerate(files):
        cached = cache / stored.sha256
        target_dir = folder / str(index)
        target_dir.mkdir(parents=True, exist_ok=True)
        name = stored.filename.replace("/", "_").replace("\\", "_")
        target = target_dir / (name if name not in ("", ".", "..") else "upload")
        for _ in range(2):  # a blob evicted by another process between the two steps is fetched again
            if cached.exists():
                os.utime(cached)  # most recently used
            else:
                _download_verified(stored, cached, on_chunk=on_chunk)
            try:
                os.link(cached, target)
                break
            except FileNotFoundError:
                continue
            except OSError:  # another file system, or hard links not allowed: copy
                shutil.copyfile(cached, target)
                break
        else:
            raise FileNotFoundError(f"{stored.filename} left the check cache twice while being fetched")
        used.add(cached)
        paths.append(target)
    _evict(cache, keep=used)
    return paths
