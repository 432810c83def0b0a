"""Uploads straight to the bucket (S3 storage): the portal signs, counts quota and completes; the bytes never pass
through a web process; a worker verifies size and SHA-256 by streaming the object once, and only then is the
version made.

How a file travels (docs/uploads-and-checks.md, "Direct uploads"):
  upload_start(transfer="direct") -> an Upload row and a multipart upload in the bucket under
                   uploads/<upload id>/direct; the whole announced size counts against the quota at once
                   (the portal sees no byte arrive, so it reserves them).
  upload_direct_sign -> presigned UploadPart URLs, each bound to its part's exact length and MD5 (Content-MD5 is
                   a signed header, so the bucket refuses bytes other than the ones signed).
  the client PUTs the parts to the bucket, any order, in parallel, again after an interruption.
  upload_direct_parts -> the parts the bucket holds (ListParts): what a resuming client still has to send.
  upload_direct_finish -> every part there with its exact size: CompleteMultipartUpload, status `verifying`,
                   and `upload_verify_task` queued (unpack queue).
  upload_verify    -> (worker) stream the object once, hash it: a mismatch aborts the upload and deletes the
                   object; a match copies it (server side) to blobs/sha256/<ab>/<sha256>, and the finish the
                   client asked for (a version, or a verified upload that waits to join one) is done.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import logging
import math
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from portal.errors import ApplicationError, ConflictError
from portal.queues import task_send_on_commit
from submissions.models import Upload
from submissions.storage import COPY_CHUNK_BYTES, blob_key
from submissions.workflow import UPLOAD

logger = logging.getLogger(__name__)

# S3's own bounds: parts of 5 MiB to 5 GiB (the last may be smaller), at most 10,000 of them.
S3_MIN_PART_BYTES = 5 * 1024**2
S3_MAX_PART_BYTES = 5 * 1024**3
S3_MAX_PARTS = 10_000
SIGN_BATCH_MAX = 100

# Queued by name: the tasks module imports this one.
UPLOAD_VERIFY_TASK = "submissions.tasks.upload_verify_task"


class DirectUploadUnavailableError(ApplicationError):
    code = "direct-upload-unavailable"
    status_code = 409


def direct_uploads_available() -> bool:
    """Direct uploads need an S3 default storage (the local folder keeps the proxied protocol)."""
    return bool(getattr(default_storage, "bucket_name", None)) and hasattr(default_storage, "connection")


def _bucket():
    return default_storage.connection.meta.client, default_storage.bucket_name


@functools.lru_cache(maxsize=4)
def _client_for(endpoint_url: str, access_key, secret_key, region_name, addressing_style):
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region_name,
        config=Config(s3={"addressing_style": addressing_style or "auto"}, signature_version="s3v4"),
    )


def _signing_client():
    """The client that presigns part URLs: for PORTAL_UPLOAD_BUCKET_URL when set (the bucket's address as the
    submitters' machines reach it, e.g. outside docker-compose's network), else the storage's own. Presigning
    is computed here, no request is sent."""
    public = settings.PORTAL_UPLOAD_BUCKET_URL
    if not public:
        return default_storage.connection.meta.client
    return _client_for(
        public,
        default_storage.access_key,
        default_storage.secret_key,
        default_storage.region_name,
        getattr(default_storage, "addressing_style", None),
    )


def _object_key(key: str) -> str:
    return default_storage._normalize_name(
        key
    )  # our keys are clean relative paths; adds the storage location


def _staging_key(upload: Upload) -> str:
    return f"uploads/{upload.id}/direct"


def direct_part_size(size: int) -> int:
    """The part size of a direct upload of `size` bytes: PORTAL_UPLOAD_DIRECT_PART_BYTES, raised (in whole MiB) when
    the file would otherwise need more than PORTAL_UPLOAD_DIRECT_MAX_PARTS parts."""
    part = settings.PORTAL_UPLOAD_DIRECT_PART_BYTES
    max_parts = settings.PORTAL_UPLOAD_DIRECT_MAX_PARTS
    if math.ceil(size / part) > max_parts:
        mib = 1024**2
        part = math.ceil(size / max_parts / mib) * mib
    return part


def upload_direct_begin(*, upload: Upload) -> None:
    """Open the bucket's multipart upload for a new Upload row (inside upload_start's transaction). Should that
    transaction roll back, the multipart is an orphan: multipart_uploads_sweep aborts it later."""
    if not direct_uploads_available():
        raise DirectUploadUnavailableError(
            'This portal stores files locally: upload the parts to the portal itself (transfer "proxied").'
        )
    if upload.part_size < S3_MIN_PART_BYTES or upload.part_size > S3_MAX_PART_BYTES:
        raise ApplicationError(
            f"A direct upload's part size must be {S3_MIN_PART_BYTES} to {S3_MAX_PART_BYTES} bytes.",
            code="upload-part-size",
        )
    client, bucket = _bucket()
    answer = client.create_multipart_upload(
        Bucket=bucket, Key=_object_key(_staging_key(upload)), ContentType="application/octet-stream"
    )
    upload.multipart_id = answer["UploadId"]


def upload_direct_parts(upload: Upload) -> dict[int, dict]:
    """The parts the bucket holds for this direct upload: index -> {size_bytes, etag}. Empty once it is complete."""
    if upload.transfer != Upload.Transfer.DIRECT or not upload.in_state("open") or not upload.multipart_id:
        return {}
    client, bucket = _bucket()
    parts: dict[int, dict] = {}
    marker = 0
    while True:
        try:
            page = client.list_parts(
                Bucket=bucket,
                Key=_object_key(_staging_key(upload)),
                UploadId=upload.multipart_id,
                PartNumberMarker=marker,
                MaxParts=1000,
            )
        except client.exceptions.NoSuchUpload:
            return {}
        for part in page.get("Parts", []):
            parts[part["PartNumber"] - 1] = {"size_bytes": part["Size"], "etag": part["ETag"]}
        if not page.get("IsTruncated"):
            return parts
        marker = int(page["NextPartNumberMarker"])


def _md5_header(value: str, index: int) -> str:
    try:
        raw = base64.b64decode(value or "", validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ApplicationError(
            f"Part {index}: content_md5 must be the part's MD5 digest in base64 (24 characters, as in Content-MD5).",
            code="upload-part-md5",
            extra={"index": index},
        )
    return base64.b64encode(raw).decode("ascii")


def upload_direct_sign(*, upload: Upload, parts: list[dict], actor) -> list[dict]:
    """Presigned PUT URLs for the given parts ({index, content_md5}); each URL accepts exactly that part's length
    and MD5. Signing again (a retry, a resume) is harmless."""
    from submissions.uploads import _require_submitter, upload_expected_part_size

    _require_submitter(actor, upload.submission)
    if upload.transfer != Upload.Transfer.DIRECT:
        raise ConflictError(
            "This upload sends its parts to the portal (PUT parts/<index>/).", code="upload-proxied"
        )
    if not upload.in_state("open"):
        raise ConflictError("This upload is finished or aborted; start a new one.", code="upload-closed")
    if not parts or len(parts) > SIGN_BATCH_MAX:
        raise ApplicationError(f"Ask for 1 to {SIGN_BATCH_MAX} parts at a time.", code="invalid")
    client, bucket = _signing_client(), default_storage.bucket_name
    expires_s = settings.PORTAL_UPLOAD_SIGN_EXPIRY_S
    signed = []
    for item in parts:
        index = item.get("index")
        if not isinstance(index, int) or not 0 <= index < upload.parts_expected:
            raise ApplicationError(
                f"Part index must be 0..{upload.parts_expected - 1}.", code="upload-part-index"
            )
        md5 = _md5_header(item.get("content_md5", ""), index)
        length = upload_expected_part_size(upload, index)
        url = client.generate_presigned_url(
            "upload_part",
            Params={
                "Bucket": bucket,
                "Key": _object_key(_staging_key(upload)),
                "UploadId": upload.multipart_id,
                "PartNumber": index + 1,
                "ContentLength": length,
                "ContentMD5": md5,
            },
            ExpiresIn=expires_s,
            HttpMethod="PUT",
        )
        signed.append(
            {
                "index": index,
                "method": "PUT",
                "url": url,
                "headers": {"Content-Length": str(length), "Content-MD5": md5},
            }
        )
    Upload.objects.filter(Upload.states.q("open"), pk=upload.pk).update(updated_at=timezone.now())
    return signed


@transaction.atomic
def upload_direct_finish(
    *, upload: Upload, sha256: str, actor, create_version: bool, include_uploads, kind: str | None
) -> Upload:
    """Complete the bucket's multipart upload once every part is there with its exact size, and queue the worker's
    verification; the version (if asked) is made by the worker. Finishing again while it verifies re-queues the
    verification (idempotent), so a lost message costs one more finish."""
    from submissions.uploads import (
        UploadHashMismatchError,
        _require_submitter,
        upload_expected_part_size,
    )

    _require_submitter(actor, upload.submission)
    upload = Upload.objects.select_for_update().select_related("submission").get(pk=upload.pk)
    sha256 = (sha256 or "").lower()
    if sha256 != upload.sha256:
        raise UploadHashMismatchError(
            "The SHA-256 given at finish differs from the one given at start.",
            extra={"expected_sha256": upload.sha256, "received_sha256": sha256},
        )
    if upload.in_state("verifying"):
        task_send_on_commit(UPLOAD_VERIFY_TASK, str(upload.pk))
        return upload
    if upload.in_state("finished"):
        return upload
    if not upload.in_state("open"):
        raise ConflictError(
            f"This upload was aborted{': ' + upload.error_message if upload.error_message else ''}; start a new one.",
            code="upload-closed",
        )
    held = upload_direct_parts(upload)
    missing = [index for index in range(upload.parts_expected) if index not in held]
    if missing:
        raise ConflictError(
            f"{len(missing)} part(s) are not in the bucket yet; send them, then finish again.",
            code="upload-incomplete",
            extra={"missing_parts": missing[:1000]},
        )
    wrong = [
        index
        for index, part in held.items()
        if part["size_bytes"] != upload_expected_part_size(upload, index)
    ]
    if wrong:
        raise ConflictError(
            f"Part(s) {wrong[:20]} have another size than signed; send them again.",
            code="upload-part-size",
            extra={"wrong_parts": wrong[:1000]},
        )
    client, bucket = _bucket()
    client.complete_multipart_upload(
        Bucket=bucket,
        Key=_object_key(_staging_key(upload)),
        UploadId=upload.multipart_id,
        MultipartUpload={
            "Parts": [
                {"PartNumber": index + 1, "ETag": held[index]["etag"]}
                for index in range(upload.parts_expected)
            ]
        },
    )
    UPLOAD.take(
        actor,
        upload,
        "complete_direct",
        fields={
            "finish_request": {
                "actor": actor.pk,
                "create_version": bool(create_version),
                "include_uploads": [str(other.pk) for other in include_uploads],
                "kind": kind,
            },
            "updated_at": timezone.now(),
        },
    )
    task_send_on_commit(UPLOAD_VERIFY_TASK, str(upload.pk))
    return upload


def _delete_staging(upload: Upload) -> None:
    client, bucket = _bucket()
    key = _object_key(_staging_key(upload))
    if upload.multipart_id:
        try:
            client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload.multipart_id)
        except client.exceptions.NoSuchUpload:
            pass  # completed or aborted already
    client.delete_object(Bucket=bucket, Key=key)


def upload_direct_discard(upload: Upload) -> None:
    """After commit: abort the multipart upload and delete the staging object of a direct upload."""
    if upload.transfer == Upload.Transfer.DIRECT and direct_uploads_available():
        transaction.on_commit(lambda: _delete_staging(upload))


def upload_verify(*, upload_id) -> str:
    """(Worker) stream the completed object once and compare its size and SHA-256 with the announced ones; then
    store it content-addressed and do the finish the client asked for. Safe to run twice: only `verifying` moves.
    Returns the upload's status afterwards."""
    upload = Upload.objects.select_related("submission").get(pk=upload_id)
    if not upload.in_state("verifying"):
        return upload.status
    client, bucket = _bucket()
    staging = _object_key(_staging_key(upload))
    digest, size = hashlib.sha256(), 0
    body = client.get_object(Bucket=bucket, Key=staging)["Body"]
    try:
        while chunk := body.read(COPY_CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    finally:
        body.close()
    actual = digest.hexdigest()
    if size != upload.size_bytes or actual != upload.sha256:
        reason = (
            f"The bytes in the bucket ({size} bytes, SHA-256 {actual}) do not match the file announced "
            f"({upload.size_bytes} bytes, SHA-256 {upload.sha256}). Nothing was stored; upload the file again."
        )
        with transaction.atomic():
            if UPLOAD.take(
                None,
                upload,
                "abort",
                reason=reason,
                event="upload.rejected",
                fields={"error_message": reason},
                queryset=Upload.objects.filter(Upload.states.q("verifying")),
                data={"submission": upload.submission_id, "filename": upload.filename},
                quiet=True,
            ):
                transaction.on_commit(lambda: client.delete_object(Bucket=bucket, Key=staging))
        return Upload.Status.ABORTED
    key = blob_key(actual)
    if not default_storage.exists(key):
        client.copy({"Bucket": bucket, "Key": staging}, bucket, _object_key(key))  # server side, in parts
    request = upload.finish_request or {}
    # Verified and (when asked) versioned in one transaction: a client polling never sees `verified` for an
    # upload that is about to become a version.
    with transaction.atomic():
        if not UPLOAD.take(
            None,
            upload,
            "verify_direct",
            fields={"storage_key": key, "updated_at": timezone.now()},
            quiet=True,
        ):
            return Upload.objects.get(pk=upload.pk).status
        result = Upload.Status.VERIFIED
        if request.get("create_version", True):
            result = _version_for(upload, request)
        transaction.on_commit(lambda: client.delete_object(Bucket=bucket, Key=staging))
    return result


def _version_for(upload: Upload, request: dict) -> str:
    from submissions.uploads import version_create

    actor = get_user_model().objects.filter(pk=request.get("actor")).first()
    include = list(Upload.objects.filter(pk__in=request.get("include_uploads") or []))
    upload.refresh_from_db()
    try:
        with transaction.atomic():
            version_create(
                submission=upload.submission,
                uploads=[*include, upload],
                actor=actor,
                kind=request.get("kind"),
            )
    except ApplicationError as exc:  # e.g. the submission left draft meanwhile: the verified upload stays
        Upload.objects.filter(pk=upload.pk).update(error_message=f"no version was made: {exc}"[:2000])
        return Upload.Status.VERIFIED
    return Upload.Status.DONE


def multipart_uploads_sweep(*, now=None) -> list[str]:
    """(Beat, housekeeping) abort the bucket's multipart uploads under uploads/ begun more than
    PORTAL_UPLOAD_EXPIRY_HOURS ago that no open upload owns (a client gone, a start rolled back); open ones are
    expired with their Upload row by uploads_expire. Returns the aborted UploadIds."""
    if not direct_uploads_available():
        return []
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.PORTAL_UPLOAD_EXPIRY_HOURS)
    client, bucket = _bucket()
    prefix = _object_key("uploads/")
    aborted: list[str] = []
    key_marker, id_marker = "", ""
    while True:
        page = client.list_multipart_uploads(
            Bucket=bucket, Prefix=prefix, KeyMarker=key_marker, UploadIdMarker=id_marker
        )
        for item in page.get("Uploads", []):
            if item["Initiated"] >= cutoff:
                continue
            if Upload.objects.filter(Upload.states.q("open"), multipart_id=item["UploadId"]).exists():
                continue
            try:
                client.abort_multipart_upload(Bucket=bucket, Key=item["Key"], UploadId=item["UploadId"])
            except client.exceptions.NoSuchUpload:
                continue
            aborted.append(item["UploadId"])
        if not page.get("IsTruncated"):
            return aborted
        key_marker, id_marker = page.get("NextKeyMarker", ""), page.get("NextUploadIdMarker", "")
