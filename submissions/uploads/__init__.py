"""Chunked, resumable uploads into the default storage, and the immutable versions they become.

Views, the API, tasks and commands call only the services named here. Each upload travels by one of two protocols,
chosen once at its start (`transfer`) and followed by every later step; the services pick the protocol's module
from the upload, never the caller:
  proxied.py -> every part through the portal (any storage backend);
  direct.py  -> the parts straight to the bucket on presigned URLs, verified by a worker (S3 storage only);
  common.py  -> what both share: who may upload, the errors, the quota, a version made of verified uploads.
Imports point one way: this module -> proxied, direct -> common (contracts in pyproject.toml).

  upload_start          -> an Upload row: protocol, part size, parts expected; size caps and the organisation
                           quota are enforced here, before any byte is stored.
  upload_part           -> (proxied) one part through the portal; retries of the same bytes are harmless.
  upload_sign           -> (direct) presigned URLs for parts the client PUTs to the bucket.
  upload_parts_received -> the parts stored so far (the portal's rows, or the bucket's list): what a resuming
                           client still has to send.
  upload_finish         -> the whole file verified (at once, or by a worker for a direct upload), stored
                           content-addressed as blobs/sha256/<ab>/<sha256>, and (by default) a version made and
                           its check queued.
  upload_abort, uploads_expire -> give up an upload; its parts go and its quota is freed.

A version holds one or more files (VersionFile rows): one bundle archive, or a set of run archives, each uploaded
as its own Upload and joined into one version by the last finish (`include_uploads`). Stored bytes are never
changed; a new upload is a new version. A download's HTTP answer is portal.downloads.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable
from datetime import timedelta
from types import ModuleType
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Organisation
from portal.errors import ApplicationError, ConflictError
from submissions.models import Submission, Upload, UploadPart
from submissions.uploads import direct, proxied
from submissions.uploads.common import (
    QuotaExceededError,
    UploadFinished,
    UploadHashMismatchError,
    UploadTooLargeError,
    organisation_storage_used_bytes,
    quota_refusal,
    require_draft,
    require_submitter,
    upload_expected_part_size,
    version_create,
    version_file_chunks,
)
from submissions.uploads.direct import DirectUploadUnavailableError, multipart_uploads_sweep, upload_verify
from submissions.workflow import UPLOAD

__all__ = [
    "DirectUploadUnavailableError",
    "QuotaExceededError",
    "UploadFinished",
    "UploadHashMismatchError",
    "UploadTooLargeError",
    "multipart_uploads_sweep",
    "organisation_storage_used_bytes",
    "upload_abort",
    "upload_expected_part_size",
    "upload_finish",
    "upload_part",
    "upload_parts_discard",
    "upload_parts_received",
    "upload_sign",
    "upload_start",
    "upload_verify",
    "uploads_expire",
    "version_create",
    "version_file_chunks",
]

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

_PROTOCOLS: dict[str, ModuleType] = {Upload.Transfer.PROXIED: proxied, Upload.Transfer.DIRECT: direct}


def _protocol(upload: Upload) -> ModuleType:
    """The module that carries this upload's bytes, by the transfer chosen at its start."""
    return _PROTOCOLS[upload.transfer]


def _transfer_for(requested: str) -> str:
    """ "auto": direct when the portal stores in S3, else proxied; "direct" asks for the bucket (refused at begin
    without S3); anything else is proxied."""
    if requested == "auto":
        return Upload.Transfer.DIRECT if direct.available() else Upload.Transfer.PROXIED
    return Upload.Transfer.DIRECT if requested == Upload.Transfer.DIRECT else Upload.Transfer.PROXIED


def _clean_filename(filename: str) -> str:
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()[:200]
    if not name or name in (".", ".."):
        raise ApplicationError("Give the file's name, e.g. AX-8000_c1.tar.gz.", code="invalid")
    return name


@transaction.atomic
def upload_start(
    *,
    actor,
    submission: Submission,
    filename: str,
    size: int,
    sha256: str,
    transfer: str = Upload.Transfer.PROXIED,
) -> Upload:
    """Open an upload of one file of `size` bytes; the caps and the organisation quota apply here. `transfer`:
    "proxied" (parts through the portal), "direct" (S3 storage only: parts straight to the bucket) or "auto"
    (direct when the portal stores in S3)."""
    require_submitter(actor, submission)
    require_draft(submission)
    sha256 = (sha256 or "").lower()
    if not _SHA256_RE.match(sha256):
        raise ApplicationError("sha256 must be the file's SHA-256 as 64 hex digits.", code="invalid")
    if not isinstance(size, int) or size <= 0:
        raise ApplicationError("size must be the file's size in bytes (> 0).", code="invalid")
    max_bytes = settings.PORTAL_MAX_UPLOAD_BYTES
    if size > max_bytes:
        raise UploadTooLargeError(
            f"The file is {size} bytes; one upload may hold at most {max_bytes} bytes.",
            extra={"max_bytes": max_bytes},
        )
    # Lock the organisation so two uploads started at once cannot both slip under the quota.
    organisation = Organisation.objects.select_for_update().get(pk=submission.organisation_id)
    used = organisation_storage_used_bytes(organisation)
    if used + size > settings.PORTAL_ORG_QUOTA_BYTES:
        raise quota_refusal(organisation, used, size, "this file")
    transfer = _transfer_for(transfer)
    protocol = _PROTOCOLS[transfer]
    part_size = protocol.part_size(size)
    upload = Upload(
        id=uuid.uuid4(),
        submission=submission,
        created_by=actor,
        filename=_clean_filename(filename),
        size_bytes=size,
        sha256=sha256,
        part_size=part_size,
        parts_expected=math.ceil(size / part_size),
        transfer=transfer,
    )
    upload.full_clean()
    protocol.begin(upload=upload)
    upload.save(force_insert=True)
    return upload


def upload_part(*, upload: Upload, index: int, data_stream: BinaryIO, actor=None) -> UploadPart:
    """Store part `index` read from `data_stream` (streamed, never whole in memory); safe to repeat. A direct
    upload refuses it (409 `upload-direct`): its parts go to the bucket."""
    return _protocol(upload).part_put(upload=upload, index=index, data_stream=data_stream, actor=actor)


def upload_sign(*, upload: Upload, parts: list[dict], actor) -> list[dict]:
    """Presigned PUT URLs for a direct upload's parts ({index, content_md5}); each URL accepts exactly that part's
    length and MD5. A proxied upload refuses it (409 `upload-proxied`): its parts go to the portal."""
    return _protocol(upload).parts_sign(upload=upload, parts=parts, actor=actor)


def upload_parts_received(upload: Upload) -> list[dict]:
    """The parts stored so far, by index ({index, size_bytes}, and sha256 for a proxied part); a direct upload's
    are the bucket's own list (empty once it is complete)."""
    return _protocol(upload).parts_received(upload)


def upload_parts_discard(upload: Upload) -> None:
    """Delete what an upload stored before it was verified (parts, or the bucket's multipart and staging object),
    the bytes after commit; the reconciler calls it after aborting a lost verification."""
    _protocol(upload).discard(upload)


def upload_finish(
    *,
    upload: Upload,
    sha256: str,
    actor,
    create_version: bool = True,
    include_uploads: Iterable[Upload] = (),
    kind: str | None = None,
) -> UploadFinished:
    """Verify size and SHA-256 of the whole file, store the blob, and make the version.

    Nothing is versioned unless the bytes match: a mismatch discards what was received and answers
    `upload-hash-mismatch` (the client uploads the file again). With create_version=False the upload waits,
    verified, to join a later finish through include_uploads (a set of run archives). A direct upload is verified
    by a worker: the answer says `verifying` until the version is made; finishing again is harmless.
    """
    return _protocol(upload).finish(
        upload=upload,
        sha256=sha256,
        actor=actor,
        create_version=create_version,
        include_uploads=include_uploads,
        kind=kind,
    )


def _upload_close(upload: Upload, *, actor, action: str, reason: str, idle_before=None) -> bool:
    """open/verified -> aborted (compare-and-set), parts deleted after commit, an audit event written.
    False when the upload had already moved on (finished, joined a version, aborted, or got a part since
    `idle_before`). A verified upload's blob stays: it is content-addressed and may back another upload."""
    closable = Upload.objects.all()
    if idle_before is not None:  # the expiry: only if nothing arrived since the candidate was chosen
        closable = closable.filter(updated_at__lt=idle_before)
    if not UPLOAD.take(
        actor,
        upload,
        "abort",
        reason=reason,
        event=action,
        queryset=closable,
        quiet=True,
        data={
            "submission": upload.submission_id,
            "filename": upload.filename,
            "size_bytes": upload.size_bytes,
            "sha256": upload.sha256,
        },
    ):
        return False
    upload_parts_discard(upload)
    return True


@transaction.atomic
def upload_abort(*, upload: Upload, actor) -> Upload:
    """Give up an upload that is not part of a version yet (open, or verified and waiting): its parts are
    deleted and its bytes no longer count against the organisation's quota. Aborting twice is harmless."""
    require_submitter(actor, upload.submission)
    upload = Upload.objects.select_for_update().get(pk=upload.pk)
    if upload.version_id is not None:  # part of a version: kept as uploaded
        raise ConflictError(
            f"This upload is part of version {upload.version.number}; versions are kept as uploaded.",
            code="upload-done",
            extra={"version": upload.version_id},
        )
    _upload_close(upload, actor=actor, action="upload.aborted", reason="aborted by the uploader")
    upload.refresh_from_db()
    return upload


def uploads_expire(*, now=None) -> list[uuid.UUID]:
    """Abort uploads idle (no new part, no finish) for longer than PORTAL_UPLOAD_EXPIRY_HOURS, open or verified
    but never joined to a version: their parts are deleted and the organisation's quota is freed. Called by
    the periodic cleanup task; safe to run twice."""
    now = now or timezone.now()
    idle_before = now - timedelta(hours=settings.PORTAL_UPLOAD_EXPIRY_HOURS)
    candidates = Upload.objects.filter(
        Upload.states.q("holding"),
        updated_at__lt=idle_before,
    ).order_by("updated_at")
    expired = []
    for upload in candidates.iterator():
        with transaction.atomic():
            if _upload_close(
                upload,
                actor=None,
                action="upload.expired",
                idle_before=idle_before,
                reason=f"idle for more than {settings.PORTAL_UPLOAD_EXPIRY_HOURS} h",
            ):
                expired.append(upload.pk)
    return expired
