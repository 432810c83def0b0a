"""Notifications: mark read, the delivery preference, and the daily digest with a frozen clock, e-mails counted
in locmem: one message per digest user, each notification e-mailed exactly once, even with two beat processes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.db import close_old_connections, connection

from accounts.models import Notification, NotificationPreference
from accounts.services.notifications import (
    notification_preference_set,
    notifications_digest_send,
    notifications_mark_read,
    notify,
)
from portal.errors import ApplicationError
from tests.factories import NotificationFactory, NotificationPreferenceFactory, UserFactory

FROZEN = datetime(2025, 3, 4, 7, 0, tzinfo=UTC)


@pytest.fixture
def digest_user(db):
    user = UserFactory(username="digesting", email="digesting@example.org")
    NotificationPreferenceFactory(user=user, delivery="digest")
    return user


@pytest.mark.django_db(transaction=True)
def test_immediate_users_get_one_email_per_notification_and_digest_users_none(digest_user):
    immediate = UserFactory(username="immediate", email="immediate@example.org")
    notify(users=[immediate, digest_user], kind="review.assigned", subject="Please review submission #7")
    assert [message.to for message in mail.outbox] == [["immediate@example.org"]]
    assert Notification.objects.get(user=digest_user).emailed_at is None


@pytest.mark.django_db(transaction=True)
def test_digest_sends_one_message_with_every_pending_notification_once(digest_user):
    for number in range(3):
        NotificationFactory(user=digest_user, subject=f"Objection {number} on submission #7", url="/review/")
    already = NotificationFactory(user=digest_user, subject="Old news", emailed_at=FROZEN - timedelta(days=1))
    other = UserFactory(username="other-digest", email="other@example.org")
    NotificationPreferenceFactory(user=other, delivery="digest")  # nothing pending: no e-mail

    assert notifications_digest_send(now=FROZEN) == {"emails": 1, "notifications": 3}
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["digesting@example.org"]
    assert "3 notifications" in message.subject
    for number in range(3):
        assert f"Objection {number} on submission #7" in message.body
    assert "Old news" not in message.body
    assert f"{settings.PORTAL_SITE_URL}/review/" in message.body
    assert set(Notification.objects.exclude(pk=already.pk).values_list("emailed_at", flat=True)) == {FROZEN}

    # The next day: nothing new, nothing sent; a new notification goes out in the next digest only.
    assert notifications_digest_send(now=FROZEN + timedelta(days=1)) == {"emails": 0, "notifications": 0}
    NotificationFactory(user=digest_user, subject="A new one")
    notifications_digest_send(now=FROZEN + timedelta(days=2))
    assert len(mail.outbox) == 2
    assert "A new one" in mail.outbox[1].body and "Objection 0" not in mail.outbox[1].body


@pytest.mark.django_db(transaction=True)
def test_two_beat_processes_email_each_notification_exactly_once(digest_user):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    users = [digest_user]
    for number in range(4):
        user = UserFactory(username=f"digest-{number}", email=f"digest-{number}@example.org")
        NotificationPreferenceFactory(user=user, delivery="digest")
        users.append(user)
    for user in users:
        for number in range(5):
            NotificationFactory(user=user, subject=f"Event {number}")
    barrier = threading.Barrier(2)
    results, errors = [], []

    def beat():
        try:
            barrier.wait()
            results.append(notifications_digest_send(now=FROZEN))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(result["notifications"] for result in results) == 25
    assert len(mail.outbox) == 5  # one message per user, whichever process sent it
    assert sorted(message.to[0] for message in mail.outbox) == sorted(user.email for user in users)
    assert not Notification.objects.filter(emailed_at__isnull=True).exists()


@pytest.mark.django_db(transaction=True)
def test_switching_to_immediate_leaves_earlier_rows_to_the_digest(digest_user):
    NotificationFactory(user=digest_user, subject="Queued for the digest")
    notification_preference_set(user=digest_user, delivery="immediate")
    notify(users=[digest_user], kind="x", subject="Sent at once")
    assert [message.subject for message in mail.outbox] == ["[Endpoints Portal] Sent at once"]


@pytest.mark.django_db
def test_mark_read_only_touches_the_users_own_rows(digest_user):
    mine = NotificationFactory.create_batch(2, user=digest_user)
    theirs = NotificationFactory(user=UserFactory())
    assert notifications_mark_read(user=digest_user, notification_ids=[mine[0].pk, theirs.pk]) == 1
    assert notifications_mark_read(user=digest_user) == 1
    theirs.refresh_from_db()
    assert theirs.read_at is None


@pytest.mark.django_db
def test_preference_set_and_refuses_unknown_delivery():
    user = UserFactory()
    assert notification_preference_set(user=user, delivery="digest").delivery == "digest"
    assert NotificationPreference.objects.get(user=user).delivery == "digest"
    with pytest.raises(ApplicationError) as refused:
        notification_preference_set(user=user, delivery="weekly")
    assert refused.value.code == "invalid"


def test_digest_is_scheduled_by_beat():
    entry = settings.CELERY_BEAT_SCHEDULE["notifications-digest"]
    assert entry["task"] == "accounts.tasks.notifications_digest_task"
