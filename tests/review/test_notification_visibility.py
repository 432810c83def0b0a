"""Embargoed text does not outlive access (issue 19): a reviewer released from an assignment, or blocked by a
conflict declared since, no longer reads the unreleased system's name and figures in their notifications, in the
API or on the page; e-mails and digests never carried them (the submission number and a link only)."""

from __future__ import annotations

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import Notification, NotificationPreference
from accounts.services.notifications import notifications_digest_send
from review.services.assignments import assignment_release
from review.services.thread import comment_post
from tests.factories import ConflictFactory, NotificationFactory
from tests.review.conftest import HIDDEN_NAME

pytestmark = pytest.mark.django_db

FIGURES = "5123.4 tokens/s"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api_rows(client) -> list[dict]:
    answer = client.get("/api/v1/notifications/").json()
    return answer["results"] if isinstance(answer, dict) else answer


def _comment_naming_the_system(world, capture):
    with capture(execute=True):
        return comment_post(
            submission=world["submission"],
            actor=world["submitter"],
            body=f"{HIDDEN_NAME} reaches {FIGURES} at c16 with the new stack.",
        )


def _comment_rows(rows):
    return [row for row in rows if row["kind"] == "review.comment"]


def test_a_released_reviewer_no_longer_reads_the_system_in_notifications(
    review_world, django_capture_on_commit_callbacks
):
    world, reviewer = review_world, review_world["assigned"]
    number = world["submission"].pk
    _comment_naming_the_system(world, django_capture_on_commit_callbacks)
    client = _client(reviewer)
    before = _comment_rows(_api_rows(client))
    assert len(before) == 1 and HIDDEN_NAME in before[0]["body"] and before[0]["hidden"] is False
    assert HIDDEN_NAME in client.get("/accounts/notifications/").content.decode()

    assignment_release(assignment=world["assignment"], actor=world["chair"], reason="Rebalancing the load")

    rows = _api_rows(client)
    answer = client.get("/api/v1/notifications/").content.decode()
    page = client.get("/accounts/notifications/").content.decode()
    one = client.get(f"/api/v1/notifications/{before[0]['id']}/").content.decode()
    for text in (answer, page, one):
        assert HIDDEN_NAME not in text and FIGURES not in text
    comment = _comment_rows(rows)[0]
    assert comment["hidden"] is True and comment["submission"] == number and comment["url"] == ""
    assert comment["subject"] == f"New comment: submission #{number}"
    assert f"New comment: submission #{number}" in page
    # Still theirs to mark read.
    assert client.post(f"/api/v1/notifications/{comment['id']}/read/").status_code == 200

    # An auditor, who still reads the thread, reads the same notification in full.
    auditor_rows = _comment_rows(_api_rows(_client(world["auditor"])))
    assert len(auditor_rows) == 1 and HIDDEN_NAME in auditor_rows[0]["body"] and not auditor_rows[0]["hidden"]


def test_a_conflict_declared_after_the_notification_hides_it_at_read_time(
    review_world, django_capture_on_commit_callbacks
):
    world, reviewer = review_world, review_world["assigned"]
    _comment_naming_the_system(world, django_capture_on_commit_callbacks)
    client = _client(reviewer)
    assert HIDDEN_NAME in client.get("/api/v1/notifications/").content.decode()
    # Declared straight in the table (no release of the assignment): the read itself must apply it.
    ConflictFactory(organisation=world["organisations"]["acme"], other=world["organisations"]["nimbus"])
    assert HIDDEN_NAME not in client.get("/api/v1/notifications/").content.decode()
    assert HIDDEN_NAME not in client.get("/accounts/notifications/").content.decode()
    assert FIGURES not in client.get("/accounts/notifications/").content.decode()


def test_e_mails_and_digests_carry_the_number_and_a_link_only(
    review_world, django_capture_on_commit_callbacks
):
    world = review_world
    number = world["submission"].pk
    NotificationPreference.objects.create(
        user=world["auditor"], delivery=NotificationPreference.Delivery.DIGEST
    )
    _comment_naming_the_system(world, django_capture_on_commit_callbacks)
    immediate = [message for message in mail.outbox if message.to == [world["assigned"].email]]
    assert len(immediate) == 1
    assert f"submission #{number}" in immediate[0].subject
    assert f"/review/submissions/{number}/" in immediate[0].body
    assert HIDDEN_NAME not in immediate[0].body + immediate[0].subject
    assert FIGURES not in immediate[0].body and "new stack" not in immediate[0].body

    assert notifications_digest_send()["emails"] == 1
    digest = mail.outbox[-1]
    assert digest.to == [world["auditor"].email] and f"New comment: submission #{number}" in digest.body
    assert HIDDEN_NAME not in digest.body and FIGURES not in digest.body


def test_rendering_at_read_time_costs_the_same_queries_for_few_or_many_notifications(
    review_world,
):
    world, reviewer = review_world, review_world["assigned"]
    client = _client(reviewer)

    def queries_for(count: int) -> int:
        Notification.objects.filter(user=reviewer).delete()
        for index in range(count):
            NotificationFactory(
                user=reviewer,
                kind="review.comment",
                subject=f"New comment {index}",
                body=f"{HIDDEN_NAME} figure {index}",
                submission_ref=world["submission"].pk if index % 2 else world["submission"].pk + 1000 + index,
            )
        with CaptureQueriesContext(connection) as api:
            rows = _api_rows(client)
        with CaptureQueriesContext(connection) as page:
            client.get("/accounts/notifications/")
        assert len(rows) == count and sum(row["hidden"] for row in rows) == count // 2
        return len(api.captured_queries) + len(page.captured_queries)

    assert queries_for(4) == queries_for(40)


def test_the_submitting_organisation_reads_what_it_was_told_about_its_own_draft(role_users, draft):
    submitter = role_users["submitter"]
    NotificationFactory(
        user=submitter,
        kind="waiver.granted",
        subject=f"Waiver granted on submission #{draft.pk}",
        body="Granted: the sample run is short by design",
        submission_ref=draft.pk,
    )
    NotificationFactory(
        user=role_users["chair"],
        kind="waiver.requested",
        subject=f"Waiver asked for on submission #{draft.pk}",
        body="The sample run is short by design",
        submission_ref=draft.pk,
    )
    mine = _api_rows(_client(submitter))
    assert len(mine) == 1 and not mine[0]["hidden"] and "short by design" in mine[0]["body"]
    # A draft is its organisation's alone (DESIGN.md's visibility table): the chair reads it once submitted.
    chairs = _api_rows(_client(role_users["chair"]))
    assert chairs[0]["hidden"] and "short by design" not in chairs[0]["body"]
