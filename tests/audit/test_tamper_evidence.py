"""What an attacker with database access can no longer do unnoticed: empty the log (TRUNCATE), rewrite it with
every hash recomputed, append a forged event - and what the application's own database role cannot do at all."""

import json
import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from audit.checkpoints import checkpoint_latest
from audit.hashing import event_hash, event_signature
from audit.models import GENESIS_HASH, AuditEvent
from audit.services import audit_event_record
from audit.tasks import audit_checkpoint_task
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.fail("these tests need PostgreSQL (DATABASE_URL): its triggers and roles are what they test")


@pytest.fixture
def checkpoint_dir(tmp_path, settings):
    """The signed checkpoints go to a fresh folder (outside the database, like the real store)."""
    folder = tmp_path / "checkpoints"
    settings.STORAGES = {
        **settings.STORAGES,
        "audit_checkpoints": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        },
    }
    return folder


def record(n: int):
    """n events, their foreign keys checked now (as if committed: the test's transaction never is)."""
    actor = UserFactory()
    with transaction.atomic():
        events = [
            audit_event_record(actor=actor, action="submission.submitted", data={"n": i}) for i in range(n)
        ]
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    return events


def as_owner(*statements, params=None):
    """SQL as the table's owner (the suite's role) with the append-only triggers disabled: what a stolen owner
    password allows."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        for statement in statements:
            cursor.execute(statement, params)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def rewrite_chain(changes: dict[int, dict], *, sign: bool) -> None:
    """Change the data of some events and recompute every hash after them (the algorithm is public);
    with `sign`, also their HMACs, as only someone holding the audit key could."""
    prev = GENESIS_HASH
    rows = []
    for event in AuditEvent.objects.order_by("sequence"):
        data = changes.get(event.sequence, event.data)
        digest = event_hash(
            sequence=event.sequence,
            created_at=event.created_at,
            actor_id=event.actor_id,
            true_actor_id=event.true_actor_id,
            action=event.action,
            object_type=event.object_type,
            object_id=event.object_id,
            data=data,
            request_id=event.request_id,
            prev_hash=prev,
        )
        signature = event_signature(digest) if sign else event.signature
        rows.append((json.dumps(data), prev, digest, signature, event.sequence))
        prev = digest
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        # Hashes are unique: park them first so the rewrite never collides with a row not yet rewritten.
        cursor.execute("UPDATE audit_auditevent SET hash = 'x' || id")
        cursor.executemany(
            "UPDATE audit_auditevent SET data = %s, prev_hash = %s, hash = %s, signature = %s WHERE sequence = %s",
            rows,
        )
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def verify(*args) -> str:
    """The command's message when it fails (exit 1), else '' ."""
    try:
        call_command("verify_audit_log", *args)
    except CommandError as exc:
        assert exc.returncode == 1
        return str(exc)
    return ""


@pytest.mark.parametrize(
    "sql", ["TRUNCATE audit_auditevent", "TRUNCATE auth_user CASCADE"], ids=["direct", "cascade"]
)
def test_truncate_is_refused(sql):
    record(2)
    with pytest.raises(DatabaseError, match="append-only: TRUNCATE refused"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert AuditEvent.objects.count() == 2


def test_truncated_log_fails_against_the_checkpoint(checkpoint_dir, capsys):
    record(3)
    call_command("verify_audit_log", "--write-checkpoint")
    assert "Wrote signed checkpoint checkpoint-000000000003-" in capsys.readouterr().out
    as_owner("TRUNCATE audit_auditevent")
    assert AuditEvent.objects.count() == 0
    message = verify()
    assert "#3" in message and "the log was truncated" in message
    assert "checkpoint-000000000003-" in message


def test_log_rewritten_with_recomputed_hashes_fails_without_the_key(checkpoint_dir):
    record(4)
    rewrite_chain({2: {"n": 99}}, sign=False)
    assert AuditEvent.objects.get(sequence=2).data == {"n": 99}
    message = verify("--no-checkpoint")  # every hash and link is consistent: only the HMAC tells
    assert "#2" in message and "signature is not the HMAC" in message


def test_log_rewritten_even_with_the_key_fails_against_the_checkpoint(checkpoint_dir):
    record(4)
    assert audit_checkpoint_task() is True
    rewrite_chain({2: {"n": 99}}, sign=True)
    assert verify("--no-checkpoint") == ""  # consistent in itself, signatures and all ...
    message = verify()  # ... but it no longer reaches the signed checkpoint
    assert "#4" in message and "differs from the signed checkpoint" in message


def test_forged_event_appended_without_the_key_is_detected(checkpoint_dir):
    record(2)
    assert audit_checkpoint_task() is True
    last = AuditEvent.objects.get(sequence=2)
    forged = AuditEvent(
        sequence=3,
        created_at=last.created_at,
        action="waiver.granted",
        data={"reason": "forged"},
        prev_hash=last.hash,
    )
    forged.hash = event_hash(
        sequence=3,
        created_at=forged.created_at,
        actor_id=None,
        true_actor_id=None,
        action=forged.action,
        object_type="",
        object_id="",
        data=forged.data,
        request_id="",
        prev_hash=last.hash,
    )
    with connection.cursor() as cursor:  # an INSERT: the triggers do not even need to be disabled
        cursor.execute(
            "INSERT INTO audit_auditevent (sequence, created_at, action, object_type, object_id, data, request_id,"
            " prev_hash, hash, signature) VALUES (3, %s, %s, '', '', %s, '', %s, %s, %s)",
            [
                forged.created_at,
                forged.action,
                json.dumps(forged.data),
                forged.prev_hash,
                forged.hash,
                "0" * 64,
            ],
        )
    message = verify()  # the checkpoint (#2) is still reached: the HMAC catches the forgery
    assert "#3" in message and "signature is not the HMAC" in message
    assert audit_checkpoint_task() is False  # a broken chain is never vouched for
    assert checkpoint_latest().sequence == 2


def test_checkpoint_not_signed_with_the_key_is_refused(checkpoint_dir):
    record(2)
    call_command("verify_audit_log", "--write-checkpoint")
    path = next(checkpoint_dir.iterdir())
    body = json.loads(path.read_text())
    body["sequence"] = 1  # move the checkpoint back, as if the newest events had never existed
    (checkpoint_dir / "checkpoint-000000000009-20990101T000000Z.json").write_text(json.dumps(body))
    message = verify()
    assert "checkpoint-000000000009" in message and "not signed with the portal's audit key" in message


def test_checkpoint_task_writes_a_signed_checkpoint_of_the_head(checkpoint_dir, capsys):
    events = record(3)
    assert audit_checkpoint_task() is True
    checkpoint = checkpoint_latest()
    assert (checkpoint.sequence, checkpoint.hash) == (3, events[-1].hash)
    call_command("verify_audit_log")
    assert "reaches the signed checkpoint checkpoint-000000000003-" in capsys.readouterr().out


@pytest.fixture
def app_role():
    """The role the application runs as, made by `db_roles` (rolled back with the test's transaction)."""
    role = f"portal_app_test_{os.getpid()}"
    call_command("db_roles", "--app-role", role, "--no-login")
    return role


def _as_role(role: str, sql: str, params=None):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {role}")
        cursor.execute(sql, params)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET action = 'system.forged'",
        "DELETE FROM audit_auditevent",
        "TRUNCATE audit_auditevent",
        "ALTER TABLE audit_auditevent DISABLE TRIGGER USER",
        "DROP TRIGGER audit_event_no_truncate ON audit_auditevent",
    ],
    ids=["update", "delete", "truncate", "disable-trigger", "drop-trigger"],
)
def test_app_role_cannot_change_or_empty_the_audit_log(app_role, sql):
    record(1)
    with pytest.raises(DatabaseError, match="permission denied|must be owner"):
        _as_role(app_role, sql)
    assert AuditEvent.objects.get(sequence=1).action == "submission.submitted"


def test_app_role_can_record_read_and_change_other_tables(app_role):
    user = UserFactory()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {app_role}")
        event = audit_event_record(actor=user, action="user.logged_in")
        cursor.execute("UPDATE auth_user SET first_name = 'Ada' WHERE id = %s", [user.pk])
        cursor.execute("SELECT count(*) FROM audit_auditevent")
        assert cursor.fetchone()[0] == 1
    assert event.sequence == 1
    assert verify("--no-checkpoint") == ""


def test_db_roles_refuses_the_owner_and_sqlite_names(capsys):
    with pytest.raises(CommandError, match="owner"):
        call_command("db_roles", "--app-role", "postgres", "--no-login")
    with pytest.raises(CommandError, match="plain lower-case"):
        call_command("db_roles", "--app-role", "app; DROP TABLE x", "--no-login")
    with pytest.raises(CommandError, match="PORTAL_DB_APP_PASSWORD"):
        call_command("db_roles", "--app-role", f"portal_app_test_{os.getpid()}")


def test_deploy_check_warns_unless_the_portal_runs_as_the_app_role(app_role):
    from audit.system_checks import audit_log_role_check

    assert [w.id for w in audit_log_role_check()] == ["audit.W001"]  # the suite's role owns everything
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {app_role}")
        assert audit_log_role_check() == []
