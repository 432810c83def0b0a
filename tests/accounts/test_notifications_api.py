"""Notifications through the API and the page: only the caller's own, mark read, the delivery preference."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import NotificationPreference
from tests.factories import NotificationFactory, UserFactory
from tests.submissions.support import api_client

pytestmark = pytest.mark.django_db


def test_api_lists_and_marks_only_own_notifications():
    alice, bob = UserFactory(), UserFactory()
    mine = NotificationFactory.create_batch(2, user=alice)
    theirs = NotificationFactory(user=bob)
    client = api_client(alice)
    assert {row["id"] for row in client.get("/api/v1/notifications/").json()["results"]} == {
        n.pk for n in mine
    }
    assert client.post(f"/api/v1/notifications/{theirs.pk}/read/").status_code == 404
    read = client.post(f"/api/v1/notifications/{mine[0].pk}/read/")
    assert read.status_code == 200 and read.json()["read_at"]
    assert [row["id"] for row in client.get("/api/v1/notifications/?unread=1").json()["results"]] == [
        mine[1].pk
    ]
    assert client.post("/api/v1/notifications/read-all/").json() == {"marked": 1}
    theirs.refresh_from_db()
    assert theirs.read_at is None


def test_api_preference_get_and_put():
    user = UserFactory()
    client = api_client(user)
    assert client.get("/api/v1/notification-preference/").json() == {"delivery": "immediate"}
    assert client.put("/api/v1/notification-preference/", {"delivery": "digest"}, format="json").json() == {
        "delivery": "digest"
    }
    bad = client.put("/api/v1/notification-preference/", {"delivery": "weekly"}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid"
    assert NotificationPreference.objects.get(user=user).delivery == "digest"


def test_page_lists_own_marks_read_and_saves_the_preference():
    alice, bob = UserFactory(), UserFactory()
    NotificationFactory(user=alice, subject="Please review submission #7 (llama3_1-8b)")
    theirs = NotificationFactory(user=bob, subject="Bob's secret")
    client = Client()
    client.force_login(alice)
    body = client.get("/accounts/notifications/").content.decode()
    assert "Please review submission #7" in body and "Bob&#x27;s secret" not in body and "1 unread" in body
    client.post("/accounts/notifications/read/", {"id": str(theirs.pk)})
    theirs.refresh_from_db()
    assert theirs.read_at is None
    client.post("/accounts/notifications/read/")
    assert "0 unread" in client.get("/accounts/notifications/").content.decode()
    client.post("/accounts/notifications/preference/", {"delivery": "digest"})
    assert NotificationPreference.objects.get(user=alice).delivery == "digest"
    assert Client().get("/accounts/notifications/").status_code == 302
