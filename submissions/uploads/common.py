"""What both upload protocols share: who may upload, the errors, the quota, a part's size, the finish's answer, and
the immutable version that verified uploads become. Imports neither protocol (contract `uploads-common-below`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Sum

from accounts.models import Organisation
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from submissions.checks.queue import check_run_create
from submissions.models import Submission, SubmissionVersion, Upload, UploadPart, VersionFile
from submissions.selectors import user_can_submit_for
from submissions.storage import storage_iter_chunks
from submissions.workflow import SUBMISSION_FILES, UPLOAD

# The steps each protocol module (proxied, direct) provides under these names; the package's services pick the
# module by the upload's `transfer` and call the step (tests/submissions/test_upload_protocols.py).
PROTOCOL_STEPS = ("part_size", "begin", "part_put", "parts_sign", "parts_received", "finish", "discard")


class UploadTooLargeError(ApplicationError):
    code = "upload-too-large"
    status_code = 413


class QuotaExceededError(ApplicationError):
    code = "quota-exceeded"
    status_code = 413


class UploadHashMismatchError(ApplicationError):
    code = "upload-hash-mismatch"
    status_code = 422


@dataclass(frozen=True)
class UploadFinished:
    """A finish's answer: the upload as it is now, the version when one was made, and whether a worker is still
    verifying the bytes (a direct upload: the version, if asked, comes with the verification)."""

    upload: Upload
    version: SubmissionVersion | None
    verifying: bool = False


# --- permissions and caps --------------------------------------------------------------------


def require_submitter(actor, submission: Submission) -> None:
    if not user_can_submit_for(actor, submission.organisation):
        raise NotAllowedError(
            f"Only submitters of {submission.organisation.name} can upload to this submission."
        )


def require_draft(submission: Submission) -> None:
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


def quota_refusal(organisation: Organisation, used: int, size: int, what: str) -> QuotaExceededError:
    quota = settings.PORTAL_ORG_QUOTA_BYTES
    return QuotaExceededError(
        f"{organisation.name} stores {used} of its {quota} bytes; {what} ({size} bytes) does not fit. "
        "Finish or abort uploads in progress, or ask the chair for more space.",
        extra={"quota_bytes": quota, "used_bytes": used},
    )


def upload_expected_part_size(upload: Upload, index: int) -> int:
    if index < upload.parts_expected - 1:
        return upload.part_size
    return upload.size_bytes - upload.part_size * (upload.parts_expected - 1)


# --- versions --------------------------------------------------------------------------------


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

    require_submitter(actor, submission)
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    require_draft(submission)
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


def version_file_chunks(version_file: VersionFile) -> Iterator[bytes]:
    """The stored bytes of a version file, streamed (for downloads and the checker)."""
    return storage_iter_chunks(version_file.storage_key)
