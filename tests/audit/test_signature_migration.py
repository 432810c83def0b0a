"""Migration audit 0003 signs the events recorded before it, so that an existing log verifies afterwards."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from audit.hashing import event_hash, event_signature
from audit.models import GENESIS_HASH, AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("audit", "0002_append_only_trigger")]


def test_events_recorded_before_the_migration_are_signed_by_it(capsys):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    OldEvent = executor.loader.project_state(BEFORE).apps.get_model("audit", "AuditEvent")
    prev = GENESIS_HASH
    for sequence in (1, 2):
        fields = {
            "sequence": sequence,
            "created_at": timezone.now(),
            "actor_id": None,
            "true_actor_id": None,
            "action": "system.checked",
            "object_type": "",
            "object_id": "",
            "data": {"n": sequence},
            "request_id": "",
            "prev_hash": prev,
        }
        prev = event_hash(**fields)
        OldEvent.objects.create(**fields, hash=prev)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    events = list(AuditEvent.objects.order_by("sequence"))
    assert [e.signature for e in events] == [event_signature(e.hash) for e in events]
    call_command("verify_audit_log", "--no-checkpoint")
    assert "Audit log chain OK: 2 events verified." in capsys.readouterr().out
