"""Declared endpoints: a submission's system under test as a URL (docs/remeasurement.md).

Writes go through `endpoint_declare` (the submission table's `declare_endpoint` row); the credential is encrypted
with Fernet keyed by PORTAL_ENDPOINT_KEY, never returned to a page or the API (they say "set" / "not set"), and
decrypted only by `endpoint_credential` for the spot-check worker, which sends it to the endpoint's host alone
(portal.egress)."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.selectors import user_is_auditor, user_is_chair, user_org_ids
from audit.services import audit_event_record
from portal.egress import EgressRefused, Target, credential_refusal
from portal.errors import ApplicationError
from submissions.models import Endpoint, Submission
from submissions.workflow import SUBMISSION_FILES

MAX_CREDENTIAL_CHARS = 4096


def _fernet() -> Fernet:
    # Any long string as the setting; Fernet wants 32 url-safe base64 bytes: its SHA-256 with a purpose prefix.
    digest = hashlib.sha256(b"portal-endpoint-credential:" + settings.PORTAL_ENDPOINT_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def credential_encrypt(credential: str) -> str:
    return _fernet().encrypt(credential.encode()).decode()


def endpoint_credential(endpoint: Endpoint) -> str | None:
    """The credential in clear, for the spot-check worker only (None when none is set or the key changed)."""
    if not endpoint.credential_encrypted:
        return None
    try:
        return _fernet().decrypt(endpoint.credential_encrypted.encode()).decode()
    except InvalidToken:
        return None


def _check_url(url: str) -> str:
    """The URL as stored, checked by the egress guard's own reading of it (what a spot-check will connect to)."""
    url = (url or "").strip()
    try:
        Target.from_url(url)
    except EgressRefused as exc:
        raise ApplicationError(exc.detail, code="endpoint-url-invalid") from exc
    return url.rstrip("/")


@transaction.atomic
def endpoint_declare(
    *,
    submission: Submission,
    actor,
    url: str,
    model_name: str,
    stays_up: bool,
    public: bool,
    credential: str | None = None,
    clear_credential: bool = False,
) -> Endpoint:
    """Declare (or change) the endpoint of a submission's system under test. `credential` None keeps the stored
    one; an empty `credential` with `clear_credential` removes it."""
    SUBMISSION_FILES.require(actor, submission, "declare_endpoint")
    url = _check_url(url)
    model_name = (model_name or "").strip()
    if not model_name:
        raise ApplicationError("Give the model name the endpoint serves.", code="endpoint-model-missing")
    if credential and (problem := credential_refusal(credential)) is not None:
        raise ApplicationError(problem, code="endpoint-credential-invalid")
    if credential is not None and len(credential) > MAX_CREDENTIAL_CHARS:
        raise ApplicationError(
            f"The credential is longer than {MAX_CREDENTIAL_CHARS} characters.",
            code="endpoint-credential-invalid",
        )
    endpoint = Endpoint.objects.select_for_update().filter(submission=submission).first()
    if endpoint is None:
        endpoint = Endpoint(submission=submission)
    endpoint.url, endpoint.model_name = url, model_name[:200]
    endpoint.stays_up, endpoint.public = bool(stays_up), bool(public)
    endpoint.declared_by = actor
    credential_changed = False
    if credential:
        endpoint.credential_encrypted = credential_encrypt(credential)
        credential_changed = True
    elif clear_credential and endpoint.credential_encrypted:
        endpoint.credential_encrypted = ""
        credential_changed = True
    try:
        endpoint.full_clean(exclude=["submission", "declared_by"])
    except ValidationError as exc:
        raise ApplicationError(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()), code="endpoint-invalid"
        ) from exc
    endpoint.save()
    audit_event_record(
        actor=actor,
        action="submission.endpoint_declared",
        obj=submission,
        # Never the credential: whether it changed, and whether one is set.
        data={
            "url": url,
            "model_name": endpoint.model_name,
            "stays_up": endpoint.stays_up,
            "public": endpoint.public,
            "credential": "set" if endpoint.has_credential else "not set",
            "credential_changed": credential_changed,
        },
    )
    return endpoint


def endpoint_view(endpoint: Endpoint | None) -> dict | None:
    """What a page or the API shows of an endpoint: never the credential, only whether one is set."""
    if endpoint is None:
        return None
    return {
        "url": endpoint.url,
        "model_name": endpoint.model_name,
        "stays_up": endpoint.stays_up,
        "public": endpoint.public,
        "credential": "set" if endpoint.has_credential else "not set",
        "declared_at": endpoint.declared_at.isoformat() if endpoint.declared_at else None,
    }


def endpoint_visible_to(user, submission: Submission) -> Endpoint | None:
    """The submission's endpoint when this user may see it (DESIGN.md's table, narrowed): the submitting
    organisation's members, auditors and the chair; anyone else only once published and made public."""
    endpoint = Endpoint.objects.filter(submission=submission).first()
    if endpoint is None:
        return None
    if user is not None and user.is_authenticated:
        if submission.organisation_id in user_org_ids(user):
            return endpoint
        if (user_is_auditor(user) or user_is_chair(user)) and not submission.in_state("draft"):
            return endpoint
    if endpoint.public and submission.in_state("published"):
        return endpoint
    return None
