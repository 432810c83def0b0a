"""The audit chain: appended in order, linked by hash, secrets masked, and verified end to end."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from audit.hashing import event_signature, stored_event_hash
from audit.models import GENESIS_HASH, AuditEvent
from audit.selectors import audit_chain_verify
from audit.services import AuditOutsideTransactionError, audit_event_record, mask_secrets
from tests.factories import OrganisationFactory, UserFactory

pytestmark = pytest.mark.django_db


def record_three():
    actor = UserFactory()
    organisation = OrganisationFactory()
    with transaction.atomic():
        return [
            audit_event_record(actor=actor, action="organisation.created", obj=organisation, data={"n": 1}),
            audit_event_record(actor=None, action="system.checked", data={"n": 2}),
            audit_event_record(actor=actor, action="submission.submitted", data={"n": 3}, request_id="r-3"),
        ]


def test_events_are_numbered_and_linked():
    first, second, third = record_three()
    assert [e.sequence for e in (first, second, third)] == [1, 2, 3]
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.hash and third.prev_hash == second.hash
    assert first.object_type == "accounts.organisation" and first.object_id == str(first.object_id)
    assert second.actor is None
    assert third.request_id == "r-3"
    for event in AuditEvent.objects.all():  # hash survives the database round trip
        assert stored_event_hash(event) == event.hash


def test_secrets_are_masked_at_any_depth():
    data = {
        "password": "x",
        "nested": {"api_key": "k", "Token": "t", "keyboard": "ok"},
        "items": [{"client_secret": "s"}],
        "sha256": "abc",
    }
    assert mask_secrets(data) == {
        "password": "***",
        "nested": {"api_key": "***", "Token": "***", "keyboard": "ok"},
        "items": [{"client_secret": "***"}],
        "sha256": "abc",
    }
    with transaction.atomic():
        event = audit_event_record(
            actor=None, action="user.password_changed", data={"new_password": "hunter2"}
        )
    assert AuditEvent.objects.get(pk=event.pk).data == {"new_password": "***"}


def test_action_must_be_a_dotted_name():
    with transaction.atomic(), pytest.raises(ValueError, match="dotted"):
        audit_event_record(actor=None, action="Submitted")


@pytest.mark.django_db(transaction=True)
def test_recording_outside_a_transaction_is_refused():
    with pytest.raises(AuditOutsideTransactionError):
        audit_event_record(actor=None, action="system.checked")
    assert AuditEvent.objects.count() == 0


def test_events_roll_back_with_the_callers_transaction():
    record_three()
    with pytest.raises(RuntimeError), transaction.atomic():
        audit_event_record(actor=None, action="submission.withdrawn")
        raise RuntimeError("the change failed")
    assert AuditEvent.objects.count() == 3
    with transaction.atomic():
        event = audit_event_record(actor=None, action="submission.withdrawn")
    assert event.sequence == 4
    assert audit_chain_verify().ok


def test_verify_command_passes_on_an_intact_chain(capsys):
    record_three()
    call_command("verify_audit_log")
    assert "Audit log chain OK: 3 events verified." in capsys.readouterr().out


def _raw(sql, params=()):
    """Run SQL behind the ORM's back, bypassing the append-only trigger like an attacker with DB access."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")


def _verify_fails_at(sequence: int, reason: str):
    with pytest.raises(CommandError, match=rf"#{sequence} .*{reason}") as excinfo:
        call_command("verify_audit_log")
    assert excinfo.value.returncode == 1


def test_altered_event_is_detected():
    record_three()
    _raw("UPDATE audit_auditevent SET data = %s WHERE sequence = 2", ['{"n": 99}'])
    _verify_fails_at(2, "altered")


def test_altered_actor_is_detected():
    first, _, _ = record_three()
    other = UserFactory()
    _raw("UPDATE audit_auditevent SET actor_id = %s WHERE sequence = 1", [other.pk])
    _verify_fails_at(1, "altered")


def test_removed_event_is_detected():
    record_three()
    _raw("DELETE FROM audit_auditevent WHERE sequence = 2")
    _verify_fails_at(3, "removed")


def test_removed_and_renumbered_event_is_detected():
    record_three()
    _raw("DELETE FROM audit_auditevent WHERE sequence = 2")
    _raw("UPDATE audit_auditevent SET sequence = 2 WHERE sequence = 3")
    _verify_fails_at(2, "removed, reordered")


def test_reordered_events_are_detected():
    record_three()
    _raw("UPDATE audit_auditevent SET sequence = 1000 WHERE sequence = 2")
    _raw("UPDATE audit_auditevent SET sequence = 2 WHERE sequence = 3")
    _raw("UPDATE audit_auditevent SET sequence = 3 WHERE sequence = 1000")
    _verify_fails_at(2, "removed, reordered")


def test_recomputed_hash_still_breaks_the_link_to_the_next_event():
    """Even with the audit key (signature recomputed too), rewriting one event breaks the next one's link."""
    record_three()
    event = AuditEvent.objects.get(sequence=2)
    event.data = {"n": 99}
    forged = stored_event_hash(event)
    _raw(
        "UPDATE audit_auditevent SET data = %s, hash = %s, signature = %s WHERE sequence = 2",
        ['{"n": 99}', forged, event_signature(forged)],
    )
    _verify_fails_at(3, "prev_hash")


def test_recomputed_hash_without_the_key_is_detected_at_the_event_itself():
    record_three()
    event = AuditEvent.objects.get(sequence=2)
    event.data = {"n": 99}
    forged = stored_event_hash(event)
    _raw("UPDATE audit_auditevent SET data = %s, hash = %s WHERE sequence = 2", ['{"n": 99}', forged])
    _verify_fails_at(2, "signature is not the HMAC")


def test_removed_newest_events_are_detected_against_a_published_head(capsys):
    record_three()
    call_command("verify_audit_log", "--print-head")
    head = capsys.readouterr().out.strip()
    assert head.startswith("3:")
    _raw("DELETE FROM audit_auditevent WHERE sequence = 3")
    call_command("verify_audit_log")  # a shorter chain is still a valid chain on its own ...
    with pytest.raises(CommandError, match=r"#3 .*newest events were removed") as excinfo:
        call_command("verify_audit_log", "--expect-head", head)  # ... but not against the published head
    assert excinfo.value.returncode == 1


def test_rewritten_chain_differs_from_the_published_head(capsys):
    record_three()
    call_command("verify_audit_log", "--print-head")
    sequence, _ = capsys.readouterr().out.strip().split(":")
    with pytest.raises(CommandError, match=r"#3 .*differs from the published head"):
        call_command("verify_audit_log", "--expect-head", f"{sequence}:{'0' * 64}")
    with pytest.raises(CommandError, match="SEQUENCE:HASH"):
        call_command("verify_audit_log", "--expect-head", "garbage")
