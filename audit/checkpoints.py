"""Signed checkpoints of the audit log's head, kept outside the database.

Once a day (beat: audit.tasks.audit_checkpoint_task) the chain is verified and its head - the newest event's
sequence and hash - is written, signed with the portal's audit key, to the `audit_checkpoints` storage as
`checkpoint-<sequence>-<UTC time>.json`. `manage.py verify_audit_log` checks the chain against the newest one:
a log emptied or cut short (even by TRUNCATE with the trigger disabled), or rewritten with every hash
recomputed, no longer reaches that head.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import connection
from django.utils import timezone

from audit.hashing import canonical_timestamp, checkpoint_signature, signature_matches
from audit.selectors import audit_chain_head

STORAGE_ALIAS = "audit_checkpoints"
FORMAT = 1
_NAME_RE = re.compile(r"^checkpoint-(\d{12})-(\d{8}T\d{6}Z)\.json$")
_HASH_RE = re.compile(r"^[0-9a-f]{64}$")


class CheckpointError(Exception):
    """The newest checkpoint cannot be trusted: unreadable, malformed, or not signed with the audit key."""


@dataclass(frozen=True)
class Checkpoint:
    """A signed head of the chain: the event `sequence` had `hash` when the checkpoint was written."""

    sequence: int
    hash: str
    created_at: str
    name: str

    @property
    def head(self) -> tuple[int, str]:
        return self.sequence, self.hash

    def __str__(self) -> str:
        return f"signed checkpoint {self.name} (#{self.sequence}, written {self.created_at})"


def _storage():
    return storages[STORAGE_ALIAS]


def checkpoint_write(*, now: dt.datetime | None = None) -> Checkpoint:
    """Write a signed checkpoint of the current head. Verify the chain first (audit_checkpoint_task does):
    a checkpoint vouches for whatever chain it finds."""
    sequence, digest = audit_chain_head()
    created = (now or timezone.now()).astimezone(dt.UTC)
    fields = {
        "format": FORMAT,
        "sequence": sequence,
        "hash": digest,
        "created_at": canonical_timestamp(created),
    }
    body = {**fields, "signature": checkpoint_signature(fields)}
    name = f"checkpoint-{sequence:012d}-{created:%Y%m%dT%H%M%SZ}.json"
    saved = _storage().save(name, ContentFile((json.dumps(body, indent=2) + "\n").encode()))
    cache.delete(_latest_key())
    return Checkpoint(sequence, digest, fields["created_at"], saved)


LATEST_CACHE_S = 60
_NONE = "none"


def _latest_key() -> str:
    storage = _storage()
    where = getattr(storage, "bucket_name", None) or getattr(storage, "location", "")
    return f"audit:checkpoint-latest:{connection.settings_dict.get('NAME')}:{type(storage).__name__}:{where}"


def checkpoint_latest_cached() -> Checkpoint | None:
    """checkpoint_latest() for the public head page: listing the checkpoint folder (an S3 listing in production,
    growing by one file a day) is done at most once a minute and right after a checkpoint is written here. A
    checkpoint that fails its signature is never cached: each request re-reads it and raises CheckpointError."""
    cached = cache.get(_latest_key())
    if cached is not None:
        return None if cached == _NONE else cached
    latest = checkpoint_latest()
    cache.set(_latest_key(), _NONE if latest is None else latest, LATEST_CACHE_S)
    return latest


def checkpoint_latest() -> Checkpoint | None:
    """The checkpoint with the highest sequence (the newest of those), or None when none was written yet.
    Raises CheckpointError when that file is not a checkpoint signed with the audit key."""
    storage = _storage()
    try:
        _, files = storage.listdir("")
    except FileNotFoundError:
        return None
    names = sorted(name for name in files if _NAME_RE.match(name))
    if not names:
        return None
    name = names[-1]
    try:
        with storage.open(name, "rb") as handle:
            body = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {name} cannot be read: {exc}") from None
    if not isinstance(body, dict):
        raise CheckpointError(f"checkpoint {name} is not a JSON object")
    fields = {key: body.get(key) for key in ("format", "sequence", "hash", "created_at")}
    if (
        fields["format"] != FORMAT
        or not isinstance(fields["sequence"], int)
        or fields["sequence"] < 0
        or not isinstance(fields["hash"], str)
        or not _HASH_RE.match(fields["hash"])
        or not isinstance(fields["created_at"], str)
    ):
        raise CheckpointError(f"checkpoint {name} lacks format, sequence, hash or created_at")
    if not signature_matches(checkpoint_signature(fields), str(body.get("signature", ""))):
        raise CheckpointError(
            f"checkpoint {name} is not signed with the portal's audit key: it was forged or altered"
        )
    if int(_NAME_RE.match(name).group(1)) != fields["sequence"]:
        raise CheckpointError(
            f"checkpoint {name} names another sequence than the #{fields['sequence']} it holds"
        )
    return Checkpoint(fields["sequence"], fields["hash"], fields["created_at"], name)
