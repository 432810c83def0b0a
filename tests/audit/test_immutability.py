"""Recorded audit events cannot be changed or removed: not by the ORM, not by raw SQL on PostgreSQL."""

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent, AuditLogImmutableError
from audit.services import audit_event_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def event():
    with transaction.atomic():
        return audit_event_record(actor=None, action="system.checked", data={"ok": True})


def test_save_of_existing_event_is_refused(event):
    event.action = "system.forged"
    with pytest.raises(AuditLogImmutableError):
        event.save()


def test_delete_of_event_is_refused(event):
    with pytest.raises(AuditLogImmutableError):
        event.delete()


@pytest.mark.parametrize(
    "operation",
    [
        lambda qs: qs.update(action="system.forged"),
        lambda qs: qs.delete(),
        lambda qs: qs.bulk_update(list(qs), ["action"]),
        lambda qs: qs.bulk_create([AuditEvent(sequence=99, action="a.b")]),
    ],
    ids=["update", "delete", "bulk_update", "bulk_create"],
)
def test_queryset_changes_are_refused(event, operation):
    with pytest.raises(AuditLogImmutableError):
        operation(AuditEvent.objects.all())
    assert AuditEvent.objects.get(pk=event.pk).action == "system.checked"


def test_deleting_an_actor_with_events_is_refused(event):
    from django.db.models import ProtectedError

    from tests.factories import UserFactory

    user = UserFactory()
    with transaction.atomic():
        audit_event_record(actor=user, action="user.logged_in")
    with pytest.raises(ProtectedError):
        user.delete()


@pytest.mark.parametrize(
    "sql",
    ["UPDATE audit_auditevent SET action = 'system.forged'", "DELETE FROM audit_auditevent"],
    ids=["update", "delete"],
)
def test_postgres_trigger_refuses_raw_update_and_delete(event, sql):
    if connection.vendor != "postgresql":
        pytest.skip("the append-only trigger exists on PostgreSQL only")
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEvent.objects.get(pk=event.pk).action == "system.checked"
