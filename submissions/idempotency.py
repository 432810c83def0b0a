"""Idempotency-Key for write endpoints: a retried request gets the first response, not a second effect.

The key is scoped to the user. The first request with a key records (endpoint, request hash) before it
runs and its response after; a repeat with the same endpoint and body replays that response; the same
key with another endpoint or body is refused with 409 `idempotency-key-reused`; a repeat while the first
is still running gets 409 `idempotency-key-in-progress`. Only successful (2xx) responses are kept: an
error releases the key, so the client may fix the cause and retry with the same key.

Keys live PORTAL_IDEMPOTENCY_KEY_TTL_HOURS (default 24): an older key is ignored (a retry after that
is a new request) and the periodic cleanup task deletes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.response import Response

from portal.errors import ConflictError
from submissions.models import IdempotencyKey

HEADER = "Idempotency-Key"


def request_fingerprint(method: str, path: str, body) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{method}\n{path}\n{canonical}".encode()).hexdigest()


def idempotency_begin(
    *, user, key: str, endpoint: str, request_hash: str
) -> tuple[IdempotencyKey | None, Response | None]:
    """(record to complete, None) for a first request; (None, replayed response) for a repeat."""
    key = key.strip()[:200]
    IdempotencyKey.objects.filter(user=user, key=key, created_at__lt=_expired_before()).delete()
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(
                user=user, key=key, endpoint=endpoint, request_hash=request_hash
            ), None
    except IntegrityError:
        pass
    record = IdempotencyKey.objects.get(user=user, key=key)
    if record.endpoint != endpoint or record.request_hash != request_hash:
        raise ConflictError(
            "This Idempotency-Key was used for another request; use a new key for a new request.",
            code="idempotency-key-reused",
            extra={"endpoint": record.endpoint},
        )
    if record.response_status is None:
        raise ConflictError(
            "The first request with this Idempotency-Key is still running; retry shortly.",
            code="idempotency-key-in-progress",
        )
    response = Response(record.response_body, status=record.response_status)
    response["Idempotent-Replayed"] = "true"
    return None, response


def _expired_before(now=None):
    return (now or timezone.now()) - timedelta(hours=settings.PORTAL_IDEMPOTENCY_KEY_TTL_HOURS)


def idempotency_keys_expire(*, now=None) -> int:
    """Delete keys older than PORTAL_IDEMPOTENCY_KEY_TTL_HOURS (the periodic cleanup task calls this)."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=_expired_before(now)).delete()
    return deleted


def idempotency_end(record: IdempotencyKey | None, response) -> None:
    if record is None:
        return
    if 200 <= response.status_code < 300 and isinstance(response, Response):
        IdempotencyKey.objects.filter(pk=record.pk).update(
            response_status=response.status_code,
            response_body=json.loads(json.dumps(response.data, default=str)),
        )
    else:
        IdempotencyKey.objects.filter(pk=record.pk).delete()


def idempotent(view_method):
    """Wrap a DRF view method that takes a JSON body (the body is part of the request hash)."""

    @functools.wraps(view_method)
    def wrapper(self, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if not key or not request.user.is_authenticated:
            return view_method(self, request, *args, **kwargs)
        endpoint = f"{request.method} {request.path}"
        record, replay = idempotency_begin(
            user=request.user,
            key=key,
            endpoint=endpoint,
            request_hash=request_fingerprint(request.method, request.path, request.data),
        )
        if replay is not None:
            return replay
        try:
            response = view_method(self, request, *args, **kwargs)
        except BaseException:
            IdempotencyKey.objects.filter(pk=record.pk).delete()
            raise
        idempotency_end(record, response)
        return response

    return wrapper
