"""Reads of the audit log: its head and the chain verification (who may read it: access.visibility)."""

from __future__ import annotations

from dataclasses import dataclass

from audit.hashing import event_signature, signature_matches, stored_event_hash
from audit.models import GENESIS_HASH, AuditEvent


@dataclass(frozen=True)
class ChainBreak:
    """The first place where the stored chain differs from what was recorded."""

    sequence: int
    event_id: int
    reason: str

    def __str__(self) -> str:
        return f"audit event #{self.sequence} (id {self.event_id}): {self.reason}"


@dataclass(frozen=True)
class ChainVerification:
    """Result of walking the chain: how many events were checked and the first break, if any."""

    checked: int
    first_break: ChainBreak | None

    @property
    def ok(self) -> bool:
        return self.first_break is None


def audit_chain_head() -> tuple[int, str]:
    """(sequence, hash) of the newest event: publish it outside the database so that a removed
    tail of the chain, which leaves a valid shorter chain, is still detected (`--expect-head`)."""
    last = AuditEvent.objects.order_by("-sequence").values_list("sequence", "hash").first()
    return (0, GENESIS_HASH) if last is None else (last[0], last[1])


def audit_chain_verify(
    *,
    batch_size: int = 2000,
    expect_head: tuple[int, str] | None = None,
    checkpoint_head: tuple[int, str] | None = None,
    checkpoint_label: str = "signed checkpoint",
) -> ChainVerification:
    """Walk the chain in sequence order: each hash must match its content and carry the HMAC of the audit key,
    link to its predecessor, and sequences must run 1, 2, 3... without gaps (a gap means a removed event).
    With `expect_head` (a head published earlier) or `checkpoint_head` (the newest signed checkpoint,
    audit.checkpoints), the chain must still reach that event with that hash: a truncated log, or one
    rewritten with every hash recomputed, does not."""
    result = _walk_chain(batch_size=batch_size)
    for head, source in ((checkpoint_head, checkpoint_label), (expect_head, "published head")):
        if result.ok and head is not None:
            result = _reaches(result, head, source)
    return result


def _reaches(result: ChainVerification, head: tuple[int, str], source: str) -> ChainVerification:
    sequence, digest = head
    if sequence == 0:
        return result
    if result.checked < sequence:
        return ChainVerification(
            result.checked,
            ChainBreak(
                sequence,
                0,
                f"the chain ends at #{result.checked}, but #{sequence} was recorded as its head by the {source}: "
                "the log was truncated or the newest events were removed",
            ),
        )
    event = AuditEvent.objects.filter(sequence=sequence).values_list("pk", "hash").first()
    if event is None or event[1] != digest:
        return ChainVerification(
            result.checked,
            ChainBreak(
                sequence,
                event[0] if event else 0,
                f"the hash differs from the {source}: the chain was rewritten",
            ),
        )
    return result


def _walk_chain(*, batch_size: int) -> ChainVerification:
    expected_prev = GENESIS_HASH
    expected_sequence = 1
    checked = 0
    for event in AuditEvent.objects.order_by("sequence").iterator(chunk_size=batch_size):
        checked += 1
        if event.sequence != expected_sequence:
            return ChainVerification(
                checked,
                ChainBreak(
                    event.sequence,
                    event.pk,
                    f"sequence jumps from #{expected_sequence - 1} to #{event.sequence}: "
                    "events were removed or renumbered",
                ),
            )
        if event.prev_hash != expected_prev:
            return ChainVerification(
                checked,
                ChainBreak(
                    event.sequence,
                    event.pk,
                    "prev_hash does not match the hash of the preceding event: "
                    "events were removed, reordered or rewritten before it",
                ),
            )
        if stored_event_hash(event) != event.hash:
            return ChainVerification(
                checked,
                ChainBreak(
                    event.sequence, event.pk, "content does not match its hash: the event was altered"
                ),
            )
        if not signature_matches(event_signature(event.hash), event.signature):
            return ChainVerification(
                checked,
                ChainBreak(
                    event.sequence,
                    event.pk,
                    "its signature is not the HMAC of the portal's audit key: the event was forged or "
                    "rewritten by someone without the key (or PORTAL_AUDIT_HMAC_KEY changed)",
                ),
            )
        expected_prev = event.hash
        expected_sequence += 1
    return ChainVerification(checked, None)
