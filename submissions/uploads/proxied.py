"""The proxied protocol: every part through the portal, stored beside the others, joined and verified at finish.

  part_put -> each part is streamed from the request into a temporary file (bounded memory), hashed, and stored
              as uploads/<upload id>/<index>-<part sha256>; parts arrive in any order; the same bytes for the same
              index are accepted again (retries), other bytes for a stored index are a conflict.
  finish   -> reads the parts back in order, streaming, hashing incrementally; only when size and SHA-256 match
              does it copy them into the content-addressed blob blobs/sha256/<ab>/<sha256> and (by default) make
              the version and queue its check.

Works with any storage backend (local folder or S3). The steps are the ones common.PROTOCOL_STEPS names; the
package's services call them (submissions/uploads/__init__.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tempfile
from collections.abc import Iterable
from typing import BinaryIO

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Organisation
from portal.errors import ApplicationError, ConflictError
from submissions.models import Upload, UploadPart
from submissions.storage import COPY_CHUNK_BYTES, blob_key, storage_open_stream, storage_save_exact
from submissions.uploads.common import (
    UploadFinished,
    UploadHashMismatchError,
    organisation_storage_used_bytes,
    quota_refusal,
    require_submitter,
    upload_expected_part_size,
    version_create,
)
from submissions.workflow import UPLOAD

# --- storage helpers -------------------------------------------------------------------------


def _parts_folder(upload: Upload) -> str:
    return f"uploads/{upload.id}"


def _part_key(upload: Upload, index: int, sha256: str) -> str:
    return f"{_parts_folder(upload)}/{index:06d}-{sha256}"


def _remove_empty_folder(prefix: str) -> None:
    """Remove a local storage folder once its last part is deleted (object stores have no folders)."""
    try:
        path = default_storage.path(prefix)
    except NotImplementedError:
        return
    with contextlib.suppress(OSError):  # missing, or not empty (a part arriving meanwhile)
        os.rmdir(path)


class _ConcatReader(io.RawIOBase):
    """Reads stored objects one after the other as one stream, hashing and counting what passes."""

    def __init__(self, keys: Iterable[str]):
        self._keys = iter(keys)
        self._current: BinaryIO | None = None
        self.sha256 = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self._current is None:
                key = next(self._keys, None)
                if key is None:
                    return 0
                self._current = storage_open_stream(key)
            data = self._current.read(min(len(buffer), COPY_CHUNK_BYTES))
            if data:
                buffer[: len(data)] = data
                self.sha256.update(data)
                self.size += len(data)
                return len(data)
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        super().close()


# --- the protocol's steps --------------------------------------------------------------------


def part_size(size: int) -> int:
    """Every part but the last has PORTAL_UPLOAD_PART_BYTES."""
    return settings.PORTAL_UPLOAD_PART_BYTES


def begin(*, upload: Upload) -> None:
    """Nothing to open: the parts folder appears with the first part."""


def part_put(*, upload: Upload, index: int, data_stream: BinaryIO, actor=None) -> UploadPart:
    """Store part `index` read from `data_stream` (streamed, never whole in memory); safe to repeat."""
    if actor is not None:
        require_submitter(actor, upload.submission)
    if not UPLOAD.state_allows(upload, "put_part"):
        raise ConflictError("This upload is finished or aborted; start a new one.", code="upload-closed")
    if not isinstance(index, int) or not 0 <= index < upload.parts_expected:
        raise ApplicationError(
            f"Part index must be 0..{upload.parts_expected - 1}.", code="upload-part-index"
        )
    expected = upload_expected_part_size(upload, index)
    organisation = upload.submission.organisation
    known = UploadPart.objects.filter(upload=upload, index=index).exists()  # a retry takes no new space
    if not known:
        used = organisation_storage_used_bytes(organisation)
        if used + expected > settings.PORTAL_ORG_QUOTA_BYTES:  # refused before a byte is read
            raise quota_refusal(organisation, used, expected, f"part {index}")
    digest = hashlib.sha256()
    received = 0
    with tempfile.SpooledTemporaryFile(max_size=COPY_CHUNK_BYTES) as spool:
        while True:
            chunk = data_stream.read(min(COPY_CHUNK_BYTES, expected + 1 - received))
            if not chunk:
                break
            received += len(chunk)
            if received > expected:
                break
            digest.update(chunk)
            spool.write(chunk)
        if received != expected:
            raise ApplicationError(
                f"Part {index} must be exactly {expected} bytes (got {'more' if received > expected else received}).",
                code="upload-part-size",
                extra={"expected_bytes": expected},
            )
        sha256 = digest.hexdigest()
        existing = UploadPart.objects.filter(upload=upload, index=index).first()
        if existing is not None:
            return _same_part_or_conflict(existing, sha256)
        spool.seek(0)
        key = storage_save_exact(_part_key(upload, index, sha256), spool)
    try:
        with transaction.atomic():
            # Quota by bytes received: checked again under the organisation's lock, so parts arriving at once
            # (of this upload or another) cannot together slip over it.
            Organisation.objects.select_for_update().filter(pk=organisation.pk).first()
            used = organisation_storage_used_bytes(organisation)
            if used + received > settings.PORTAL_ORG_QUOTA_BYTES:
                raise quota_refusal(organisation, used, received, f"part {index}")
            part = UploadPart.objects.create(
                upload=upload, index=index, size_bytes=received, sha256=sha256, storage_key=key
            )
            # updated_at is the upload's last activity (the expiry measures idleness from it); 0 rows: the
            # upload was aborted or expired while this part streamed in, so the part must not stay behind.
            if not Upload.objects.filter(Upload.states.q("open"), pk=upload.pk).update(
                updated_at=timezone.now()
            ):
                raise ConflictError(
                    "This upload was aborted meanwhile; start a new one.", code="upload-closed"
                )
            return part
    except IntegrityError:  # the same part arrived twice at once
        return _same_part_or_conflict(UploadPart.objects.get(upload=upload, index=index), sha256)
    except ApplicationError:  # aborted meanwhile, or over the quota: the stored part must not stay behind
        if not UploadPart.objects.filter(storage_key=key).exists():  # unless the same bytes were kept at once
            default_storage.delete(key)
            _remove_empty_folder(_parts_folder(upload))
        raise


def _same_part_or_conflict(existing: UploadPart, sha256: str) -> UploadPart:
    if existing.sha256 == sha256:
        return existing
    raise ConflictError(
        f"Part {existing.index} was already received with other bytes (SHA-256 {existing.sha256}).",
        code="upload-part-conflict",
        extra={"index": existing.index, "stored_sha256": existing.sha256},
    )


def parts_sign(*, upload: Upload, parts: list[dict], actor) -> list[dict]:
    """Nothing to sign: the parts go to the portal."""
    require_submitter(actor, upload.submission)
    raise ConflictError(
        "This upload sends its parts to the portal (PUT parts/<index>/).", code="upload-proxied"
    )


def parts_received(upload: Upload) -> list[dict]:
    """The parts the portal stored, by index: {index, sha256, size_bytes} (reads a prefetched `parts`)."""
    parts = sorted(upload.parts.all(), key=lambda part: part.index)
    return [{"index": part.index, "sha256": part.sha256, "size_bytes": part.size_bytes} for part in parts]


def _missing_parts(upload: Upload) -> list[int]:
    present = set(upload.parts.values_list("index", flat=True))
    return [i for i in range(upload.parts_expected) if i not in present]


def discard(upload: Upload) -> None:
    """Delete the upload's part rows now and their stored bytes after commit."""
    keys = list(upload.parts.values_list("storage_key", flat=True))
    upload.parts.all().delete()

    def remove():
        for key in keys:
            default_storage.delete(key)
        _remove_empty_folder(_parts_folder(upload))

    transaction.on_commit(remove)


def finish(
    *,
    upload: Upload,
    sha256: str,
    actor,
    create_version: bool,
    include_uploads: Iterable[Upload],
    kind: str | None,
) -> UploadFinished:
    """Verify size and SHA-256 of the assembled parts, store the blob, and make the version.

    Nothing is versioned unless the bytes match: a mismatch discards the parts and answers
    `upload-hash-mismatch` (the client uploads the file again). With create_version=False the upload
    waits, verified, to join a later finish through include_uploads (a set of run archives).
    """
    require_submitter(actor, upload.submission)
    refusal: ApplicationError | None = None
    with transaction.atomic():
        # One finish of an upload at a time: a concurrent finish waits here, then finds the upload verified or
        # done and answers the same version (the parts it would read are gone by then).
        upload = Upload.objects.select_for_update().select_related("submission").get(pk=upload.pk)
        try:
            version = _finish_locked(
                upload=upload,
                sha256=sha256,
                actor=actor,
                create_version=create_version,
                include_uploads=include_uploads,
                kind=kind,
            )
        except ApplicationError as exc:  # what was decided before the refusal (aborted, verified) stays
            refusal = exc
    if refusal is not None:
        raise refusal
    upload.refresh_from_db()
    return UploadFinished(upload=upload, version=version)


def _finish_locked(
    *,
    upload: Upload,
    sha256: str,
    actor,
    create_version: bool,
    include_uploads: Iterable[Upload],
    kind: str | None,
):
    sha256 = (sha256 or "").lower()
    # finishing twice is harmless: a verified upload (or one already part of a version) answers as before
    if upload.version_id is not None or UPLOAD.state_allows(upload, "join_version"):
        if sha256 != upload.sha256:
            raise UploadHashMismatchError(
                "This upload was verified with another SHA-256.",
                extra={"expected_sha256": sha256, "received_sha256": upload.sha256},
            )
        if upload.version_id is not None or not create_version:
            return upload.version
    elif not UPLOAD.state_allows(upload, "put_part"):
        raise ConflictError("This upload was aborted; start a new one.", code="upload-closed")
    else:
        if sha256 != upload.sha256:
            raise UploadHashMismatchError(
                "The SHA-256 given at finish differs from the one given at start.",
                extra={"expected_sha256": upload.sha256, "received_sha256": sha256},
            )
        missing = _missing_parts(upload)
        if missing:
            raise ConflictError(
                f"{len(missing)} part(s) are missing; send them, then finish again.",
                code="upload-incomplete",
                extra={"missing_parts": missing[:1000]},
            )
        keys = list(upload.parts.order_by("index").values_list("storage_key", flat=True))
        # Pass 1: verify before anything is versioned (read back, streaming, hashed incrementally).
        reader = _ConcatReader(keys)
        while reader.read(COPY_CHUNK_BYTES):
            pass
        reader.close()
        actual = reader.sha256.hexdigest()
        if reader.size != upload.size_bytes or actual != upload.sha256:
            UPLOAD.take(
                actor,
                upload,
                "abort",
                reason="the received bytes do not match the file announced",
                queryset=Upload.objects.filter(Upload.states.q("open")),
                data={"submission": upload.submission_id, "filename": upload.filename},
                quiet=True,
            )
            discard(upload)
            raise UploadHashMismatchError(
                f"The received bytes ({reader.size} bytes, SHA-256 {actual}) do not match the file announced "
                f"({upload.size_bytes} bytes, SHA-256 {upload.sha256}). Nothing was stored; upload the file again.",
                extra={
                    "expected_sha256": upload.sha256,
                    "received_sha256": actual,
                    "expected_bytes": upload.size_bytes,
                    "received_bytes": reader.size,
                },
            )
        # Pass 2: copy into the content-addressed blob (skipped when these bytes are already stored).
        key = blob_key(actual)
        if not default_storage.exists(key):
            with io.BufferedReader(_ConcatReader(keys), buffer_size=COPY_CHUNK_BYTES) as stream:
                key = storage_save_exact(key, stream)
        if UPLOAD.take(
            actor,
            upload,
            "finish",
            fields={"storage_key": key, "updated_at": timezone.now()},
            queryset=Upload.objects.filter(Upload.states.q("open")),
            quiet=True,
        ):
            discard(upload)
        upload.refresh_from_db()
        if not create_version:
            return None
    if upload.version_id is not None:
        return upload.version
    return version_create(
        submission=upload.submission, uploads=[*include_uploads, upload], actor=actor, kind=kind
    )
