"""The canonical form of an audit event, its SHA-256 and its HMAC; shared by recording and verification."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder


def canonical_timestamp(value: dt.datetime) -> str:
    """UTC with microseconds, the precision both PostgreSQL and SQLite keep."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def normalise_data(data: Any) -> Any:
    """The data as it reads back from a JSON column (dates, UUIDs, decimals as strings)."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def canonical_json(fields: dict[str, Any]) -> str:
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def event_hash(
    *,
    sequence: int,
    created_at: dt.datetime,
    actor_id: int | None,
    true_actor_id: int | None,
    action: str,
    object_type: str,
    object_id: str,
    data: Any,
    request_id: str,
    prev_hash: str,
) -> str:
    """SHA-256 over prev_hash and the canonical JSON of the event's fields."""
    payload = canonical_json(
        {
            "sequence": sequence,
            "created_at": canonical_timestamp(created_at),
            "actor_id": actor_id,
            "true_actor_id": true_actor_id,
            "action": action,
            "object_type": object_type,
            "object_id": object_id,
            "data": data,
            "request_id": request_id,
        }
    )
    return hashlib.sha256(f"{prev_hash}\n{payload}".encode()).hexdigest()


def stored_event_hash(event) -> str:
    """Recompute the hash of a stored AuditEvent row from its columns."""
    return event_hash(
        sequence=event.sequence,
        created_at=event.created_at,
        actor_id=event.actor_id,
        true_actor_id=event.true_actor_id,
        action=event.action,
        object_type=event.object_type,
        object_id=event.object_id,
        data=event.data,
        request_id=event.request_id,
        prev_hash=event.prev_hash,
    )


def _hmac_hex(purpose: str, message: str) -> str:
    key = settings.PORTAL_AUDIT_HMAC_KEY.encode()
    return hmac.new(key, f"{purpose}\n{message}".encode(), hashlib.sha256).hexdigest()


def event_signature(event_hash_hex: str) -> str:
    """HMAC-SHA256 of an event's hash with the portal's audit key (settings.PORTAL_AUDIT_HMAC_KEY, kept outside
    the database). The hash covers the event and, through prev_hash, every event before it; without the key
    nobody who can write the table can make a recomputed or forged event verify."""
    return _hmac_hex("audit-event", event_hash_hex)


def checkpoint_signature(fields: dict[str, Any]) -> str:
    """HMAC-SHA256 of a checkpoint's canonical JSON (audit.checkpoints) with the same key."""
    return _hmac_hex("audit-checkpoint", canonical_json(fields))


def signature_matches(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), (given or "").encode())
