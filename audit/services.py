"""Writes to the audit log. Call audit_event_record inside the same transaction as the change it records."""

from __future__ import annotations

import re
import zlib
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Model
from django.utils import timezone

from audit.hashing import event_hash, event_signature, normalise_data
from audit.models import GENESIS_HASH, AuditEvent
from portal.request_context import current_request_id

MASK = "***"
# Keys whose values never reach the log: password, passwd, secret, token, credential(s),
# authorization, and "key" as a whole word (api_key, secret-key, key) - not "keyboard" or "monkey".
_SECRET_KEY_RE = re.compile(
    r"(password|passwd|secret|token|credential|authorization|(^|[_\-.])key($|[_\-.])|apikey|privatekey)",
    re.IGNORECASE,
)
# Arbitrary constant naming the audit chain's PostgreSQL advisory lock.
_CHAIN_LOCK_ID = zlib.crc32(b"endpoints-portal:audit-chain")


class AuditOutsideTransactionError(RuntimeError):
    """audit_event_record was called outside a transaction, so the event could outlive a rolled-back change."""


def mask_secrets(data: Any) -> Any:
    """A copy of data with the values of secret-looking keys replaced by "***", at any depth."""
    if isinstance(data, dict):
        return {
            key: (MASK if isinstance(key, str) and _SECRET_KEY_RE.search(key) else mask_secrets(value))
            for key, value in data.items()
        }
    if isinstance(data, list | tuple):
        return [mask_secrets(item) for item in data]
    return data


def _object_ref(obj: Model | None) -> tuple[str, str]:
    if obj is None:
        return "", ""
    return obj._meta.label_lower, "" if obj.pk is None else str(obj.pk)


def _lock_chain(using: str) -> AuditEvent | None:
    """Serialise writers and return the chain's last event."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_ID])
        return AuditEvent.objects.using(using).order_by("-sequence").first()
    # SQLite runs transactions IMMEDIATE (see settings), so this transaction already holds the write lock;
    # select_for_update covers other databases. The unique sequence/hash columns back both up.
    return AuditEvent.objects.using(using).select_for_update().order_by("-sequence").first()


def audit_event_record(
    *,
    actor,
    action: str,
    obj: Model | None = None,
    data: dict | None = None,
    true_actor=None,
    request_id: str | None = None,
) -> AuditEvent:
    """Append one event to the chain. actor None means the system; secrets in data are masked."""
    using = router.db_for_write(AuditEvent)
    if not transaction.get_connection(using).in_atomic_block:
        raise AuditOutsideTransactionError(
            "audit_event_record must run inside the caller's transaction.atomic() block."
        )
    if not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", action):
        raise ValueError(
            f"Audit action {action!r} must be a dotted lower-case name like 'submission.submitted'."
        )
    object_type, object_id = _object_ref(obj)
    clean_data = normalise_data(mask_secrets(data or {}))
    request_id = request_id or current_request_id() or ""

    last = _lock_chain(using)
    sequence = 1 if last is None else last.sequence + 1
    prev_hash = GENESIS_HASH if last is None else last.hash
    created_at = timezone.now()
    actor_id = actor.pk if actor is not None else None
    true_actor_id = true_actor.pk if true_actor is not None else None
    fields = {
        "sequence": sequence,
        "created_at": created_at,
        "actor_id": actor_id,
        "true_actor_id": true_actor_id,
        "action": action,
        "object_type": object_type,
        "object_id": object_id,
        "data": clean_data,
        "request_id": request_id,
        "prev_hash": prev_hash,
    }
    # The hash covers exactly the fields stored: verify_audit_log recomputes it from the row.
    digest = event_hash(**fields)
    event = AuditEvent(**fields, hash=digest, signature=event_signature(digest))
    event.full_clean()
    event.save(using=using)
    return event
