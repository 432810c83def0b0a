"""Chunked, resumable uploads into the default storage, and the immutable versions they become.

How a file travels (whatever the storage backend: local folder or S3):
  upload_start  -> an Upload row: part size, parts expected; size caps and the organisation quota
                   are enforced here, before any byte is stored.
  upload_part   -> each part is streamed from the request into a temporary file (bounded memory),
                   hashed, and stored as uploads/<upload id>/<index>-<part sha256>; parts arrive in
                   any order; the same bytes for the same index are accepted again (retries), other
                   bytes for a stored index are a conflict.
  upload_finish -> reads the parts back in order, streaming, hashing incrementally; only when size
                   and SHA-256 match does it copy them into the content-addressed blob
                   blobs/sha256/<ab>/<sha256> and (by default) create the version and queue its check.

A version holds one or more files (VersionFile rows): one bundle archive, or a set of run
archives, each uploaded as its own Upload and joined into one version by the last finish
(`include_uploads`). Stored bytes are never changed; a new upload is a new version.

One module (~620 lines) on purpose: every step of the protocol works on the same part layout, caps and row
locks, and reads best top to bottom. Direct uploads to the bucket are submissions.direct_uploads; a download's
HTTP answer is portal.downloads.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import re
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max, Sum
from django.utils import timezone

from accounts.models import Organisation
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.checks.queue import check_run_create
from submissions.direct_uploads import direct_part_size, upload_direct_begin, upload_direct_discard
from submissions.models import (
    Submission,
    SubmissionVersion,
    Upload,
    UploadPart,
    VersionFile,
)
from submissions.selectors import user_can_submit_for
from submissions.storage import (
    COPY_CHUNK_BYTES,
    blob_key,
    storage_iter_chunks,
    storage_open_stream,
    storage_save_exact,
)
from submissions.workflow import SUBMISSION_FILES, UPLOAD

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class UploadTooLargeError(ApplicationError):
    code = "upload-too-large"
    status_code = 413


class QuotaExceededError(ApplicationError):
    code = "quota-exceeded"
    status_code = 413


class UploadHashMismatchError(ApplicationError):
    code = "upload-hash-mismatch"
    status_code = 422


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


# --- permissions and caps --------------------------------------------------------------------


def _require_submitter(actor, submission: Submission) -> None:
    if not user_can_submit_for(actor, submission.organisation):
        raise NotAllowedError(
            f"Only submitters of {submission.organisation.name} can upload to this submission."
        )


def _require_draft(submission: Submission) -> None:
    """A draft, or a submission the reviewers sent back (the `upload` row of the submission's table): its new
    version is what `resubmit` sends them."""
    if not SUBMISSION_FILES.state_allows(submission, "upload"):
        raise ConflictError(
            f"Submission #{submission.pk} is {submission.get_status_display().lower()}: "
            "new versions can only be uploaded to a draft or to a submission sent back for changes.",
            code="submission-not-draft",
        )


def organisation_storage_used_bytes(organisation: Organisation) -> int:
    """Bytes counted against the quota: stored version files, verified uploads waiting to join a version, and the
    parts received so far of open uploads. Bytes only announced (an upload started, its parts not sent) count
    nothing: announcing cannot hold space."""
    stored = (
        VersionFile.objects.filter(version__submission__organisation=organisation).aggregate(
            total=Sum("size_bytes")
        )["total"]
        or 0
    )
    verified = (
        Upload.objects.filter(Upload.states.q("verified"), submission__organisation=organisation).aggregate(
            total=Sum("size_bytes")
        )["total"]
        or 0
    )
    received = (
        UploadPart.objects.filter(
            Upload.states.q("open", via="upload"), upload__submission__organisation=organisation
        ).aggregate(total=Sum("size_bytes"))["total"]
        or 0
    )
    # A direct upload's bytes go to the bucket unseen: its whole size is reserved from its start to its end.
    reserved = (
        Upload.objects.filter(
            Upload.states.q("arriving"),
            submission__organisation=organisation,
            transfer=Upload.Transfer.DIRECT,
        ).aggregate(total=Sum("size_bytes"))["total"]
        or 0
    )
    return stored + verified + received + reserved


def _quota_refusal(organisation: Organisation, used: int, size: int, what: str) -> QuotaExceededError:
    quota = settings.PORTAL_ORG_QUOTA_BYTES
    return QuotaExceededError(
        f"{organisation.name} stores {used} of its {quota} bytes; {what} ({size} bytes) does not fit. "
        "Finish or abort uploads in progress, or ask the chair for more space.",
        extra={"quota_bytes": quota, "used_bytes": used},
    )


def _clean_filename(filename: str) -> str:
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()[:200]
    if not name or name in (".", ".."):
        raise ApplicationError("Give the file's name, e.g. AX-8000_c1.tar.gz.", code="invalid")
    return name


# --- services --------------------------------------------------------------------------------


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
    """Open an upload of one file of `size` bytes; the caps and the organisation quota apply here. With
    transfer="direct" (S3 storage only) the parts go straight to the bucket (submissions/direct_uploads.py)."""
    _require_submitter(actor, submission)
    _require_draft(submission)
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
        raise _quota_refusal(organisation, used, size, "this file")
    direct = transfer == Upload.Transfer.DIRECT
    part_size = direct_part_size(size) if direct else settings.PORTAL_UPLOAD_PART_BYTES
    upload = Upload(
        id=uuid.uuid4(),
        submission=submission,
        created_by=actor,
        filename=_clean_filename(filename),
        size_bytes=size,
        sha256=sha256,
        part_size=part_size,
        parts_expected=math.ceil(size / part_size),
        transfer=Upload.Transfer.DIRECT if direct else Upload.Transfer.PROXIED,
    )
    upload.full_clean()
    if direct:
        upload_direct_begin(upload=upload)
    upload.save(force_insert=True)
    return upload


def upload_expected_part_size(upload: Upload, index: int) -> int:
    if index < upload.parts_expected - 1:
        return upload.part_size
    return upload.size_bytes - upload.part_size * (upload.parts_expected - 1)


def upload_part(*, upload: Upload, index: int, data_stream: BinaryIO, actor=None) -> UploadPart:
    """Store part `index` read from `data_stream` (streamed, never whole in memory); safe to repeat."""
    if actor is not None:
        _require_submitter(actor, upload.submission)
    if not UPLOAD.state_allows(upload, "put_part"):
        raise ConflictError("This upload is finished or aborted; start a new one.", code="upload-closed")
    if upload.transfer == Upload.Transfer.DIRECT:
        raise ConflictError(
            "This upload sends its parts straight to the bucket: ask for their URLs (POST sign/).",
            code="upload-direct",
        )
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
            raise _quota_refusal(organisation, used, expected, f"part {index}")
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
                raise _quota_refusal(organisation, used, received, f"part {index}")
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


def upload_missing_parts(upload: Upload) -> list[int]:
    present = set(upload.parts.values_list("index", flat=True))
    return [i for i in range(upload.parts_expected) if i not in present]


def _discard_parts(upload: Upload) -> None:
    upload_direct_discard(upload)
    keys = list(upload.parts.values_list("storage_key", flat=True))
    upload.parts.all().delete()

    def remove():
        for key in keys:
            default_storage.delete(key)
        _remove_empty_folder(_parts_folder(upload))

    transaction.on_commit(remove)


def upload_finish(
    *,
    upload: Upload,
    sha256: str,
    actor,
    create_version: bool = True,
    include_uploads: Iterable[Upload] = (),
    kind: str | None = None,
) -> SubmissionVersion | None:
    """Verify size and SHA-256 of the assembled parts, store the blob, and make the version.

    Nothing is versioned unless the bytes match: a mismatch discards the parts and answers
    `upload-hash-mismatch` (the client uploads the file again). With create_version=False the upload
    waits, verified, to join a later finish through include_uploads (a set of run archives).
    """
    _require_submitter(actor, upload.submission)
    refusal: ApplicationError | None = None
    with transaction.atomic():
        # One finish of an upload at a time: a concurrent finish waits here, then finds the upload verified or
        # done and answers the same version (the parts it would read are gone by then).
        upload = Upload.objects.select_for_update().select_related("submission").get(pk=upload.pk)
        try:
            version = _upload_finish_locked(
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
    return version


def _upload_finish_locked(
    *,
    upload: Upload,
    sha256: str,
    actor,
    create_version: bool,
    include_uploads: Iterable[Upload],
    kind: str | None,
) -> SubmissionVersion | None:
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
        missing = upload_missing_parts(upload)
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
            _discard_parts(upload)
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
            _discard_parts(upload)
        upload.refresh_from_db()
        if not create_version:
            return None
    if upload.version_id is not None:
        return upload.version
    return version_create(
        submission=upload.submission, uploads=[*include_uploads, upload], actor=actor, kind=kind
    )


def _version_sha256(files: list[Upload]) -> str:
    if len(files) == 1:
        return files[0].sha256
    lines = "".join(
        f"{u.sha256}  {u.filename}\n" for u in sorted(files, key=lambda u: (u.filename, u.sha256))
    )
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


@transaction.atomic
def version_create(
    *, submission: Submission, uploads: list[Upload], actor, kind: str | None = None
) -> SubmissionVersion:
    """Join verified uploads into the submission's next immutable version and queue its check."""

    _require_submitter(actor, submission)
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    _require_draft(submission)
    ids = list(dict.fromkeys(u.pk for u in uploads))
    locked = list(Upload.objects.select_for_update().filter(pk__in=ids).order_by("created_at", "filename"))
    if len(locked) != len(ids):
        raise ApplicationError("Some uploads do not exist.", code="invalid")
    for upload in locked:
        if upload.submission_id != submission.pk:
            raise ApplicationError(f"Upload {upload.id} belongs to another submission.", code="invalid")
        if not UPLOAD.state_allows(upload, "join_version"):
            raise ConflictError(
                f"Upload {upload.id} ({upload.filename}) is {upload.status}, not verified.",
                code="upload-not-verified",
            )
    if (
        kind is None
    ):  # a first guess: the check records the kind the registry detects (submissions.checks.steps._version_kind_record)
        kind = SubmissionVersion.Kind.RUN_ARCHIVES if len(locked) > 1 else SubmissionVersion.Kind.BUNDLE
    number = (submission.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = SubmissionVersion(
        submission=submission,
        number=number,
        kind=kind,
        size_bytes=sum(u.size_bytes for u in locked),
        sha256=_version_sha256(locked),
        uploader=actor,
    )
    version.full_clean()
    version.save()
    for position, upload in enumerate(locked):
        VersionFile.objects.create(
            version=version,
            position=position,
            original_filename=upload.filename,
            storage_key=upload.storage_key,
            size_bytes=upload.size_bytes,
            sha256=upload.sha256,
        )
    for upload in locked:
        UPLOAD.take(actor, upload, "join_version", fields={"version": version})
    audit_event_record(
        actor=actor,
        action="version.uploaded",
        obj=version,
        data={
            "submission": submission.pk,
            "number": number,
            "kind": kind,
            "sha256": version.sha256,
            "size_bytes": version.size_bytes,
            "files": [u.filename for u in locked],
        },
    )
    check_run_create(version=version, actor=None)
    return version


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
    _discard_parts(upload)
    return True


@transaction.atomic
def upload_abort(*, upload: Upload, actor) -> Upload:
    """Give up an upload that is not part of a version yet (open, or verified and waiting): its parts are
    deleted and its bytes no longer count against the organisation's quota. Aborting twice is harmless."""
    _require_submitter(actor, upload.submission)
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


def version_file_chunks(version_file: VersionFile) -> Iterator[bytes]:
    """The stored bytes of a version file, streamed (for downloads and the checker)."""
    return storage_iter_chunks(version_file.storage_key)
