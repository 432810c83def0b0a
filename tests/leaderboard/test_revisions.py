"""A result's revisions on the public pages, data downloads and API: the newest revision is what the result shows
and ranks with; every older one stays reachable by number (?revision=N) with its own bundle; an extension not yet
published shows nowhere public, though the result it extends is public."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

from leaderboard.board import selectors
from tests.factories import BenchmarkFactory
from tests.leaderboard.support import extend, publish
from tests.states import put

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(role_users, storage_dir):
    """A result published with 6 points (revision 1), extended by c64 and c128 (revision 2, 'serve 2.0'), then
    by a re-measured c32 (revision 3, 'serve 2.1'); plus an extension in review adding c256 ('serve 3.0-rc')."""
    benchmark = BenchmarkFactory(model_id="bench-8b", display_name="Bench 8B")
    acme = role_users["organisations"]["acme"]
    publication = publish(benchmark=benchmark, organisation=acme, scale=1.0)
    from leaderboard.models import Publication

    curve = publication.curve
    curve["points"] = curve["points"][:6]
    Publication.objects.filter(pk=publication.pk).update(curve=curve)
    publication.refresh_from_db()
    second = extend(publication, add=(64, 128), stack="serve 2.0")
    third = extend(publication, remeasure=(32,), stack="serve 2.1", factor=1.3)
    pending = extend(publication, add=(256,), stack="serve 3.0-rc", status="in_review", publish_now=False)
    return {"publication": publication, "second": second, "third": third, "pending": pending}


def _get(url, user=None):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client.get(url)


def test_the_result_shows_the_newest_revision_and_a_timeline_of_every_revision(result):
    publication = result["publication"]
    page = _get(f"/results/{publication.public_id}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Revisions" in body and "revision 3 of 3" in body
    for number, stack in ((1, ""), (2, "serve 2.0"), (3, "serve 2.1")):
        assert f'data-revision="{number}"' in body and stack in body
    assert "Added concurrency 64, 128." in body
    assert "Re-measured concurrency 32" in body
    assert "chart-revisions" in body  # the chart of how the curve moved
    assert [p["concurrency"] for p in publication.curve["points"]] == [1, 2, 4, 8, 16, 32, 64, 128]
    labels = {p["concurrency"]: (p["revision"], p["stack"]) for p in publication.curve["points"]}
    assert labels[1] == (1, "") and labels[64] == (2, "serve 2.0") and labels[32] == (3, "serve 2.1")
    # The extension under review leaks nowhere: neither its stack nor its point.
    assert "serve 3.0-rc" not in body and "r256" not in body


def test_an_older_revision_is_served_by_number_with_its_own_bundle(result):
    publication = result["publication"]
    first = _get(f"/results/{publication.public_id}/?revision=1").content.decode()
    assert "You are looking at revision 1" in first and "revision 1 of 3" in first
    revision_1 = selectors.publication_at_revision(publication, 1)
    assert (
        revision_1.version.sha256 in first and publication.version.sha256 not in first.split("Revisions")[0]
    )
    data = json.loads(_get(f"/results/{publication.public_id}/points.json?revision=2").content)
    assert data["revision"] == 2 and [p["concurrency"] for p in data["points"]] == [
        1,
        2,
        4,
        8,
        16,
        32,
        64,
        128,
    ]
    assert data["bundle_sha256"] == result["second"].submitted_version.sha256
    rows = list(
        csv.DictReader(
            io.StringIO(_get(f"/results/{publication.public_id}/points.csv?revision=1").content.decode())
        )
    )
    assert len(rows) == 6 and {r["revision"] for r in rows} == {"1"}
    for bad in ("4", "0", "x", "99999999"):
        assert _get(f"/results/{publication.public_id}/?revision={bad}").status_code == 404
        assert _get(f"/api/v1/public/results/{publication.public_id}/?revision={bad}").status_code == 404


def test_the_api_serves_every_revision_and_rankings_use_the_newest(result):
    publication = result["publication"]
    newest = _get(f"/api/v1/public/results/{publication.public_id}/").json()
    assert newest["revision"] == 3 and len(newest["points"]) == 8
    assert [r["revision"] for r in newest["revisions"]] == [1, 2, 3]
    assert [r["stack"] for r in newest["revisions"]] == ["", "serve 2.0", "serve 2.1"]
    assert newest["revisions"][2]["replaced"][0]["concurrency"] == 32
    assert len({r["bundle_sha256"] for r in newest["revisions"]}) == 3
    old = _get(f"/api/v1/public/results/{publication.public_id}/?revision=1").json()
    assert old["revision"] == 1 and len(old["points"]) == 6
    board = selectors.publications_ranked(publication.submission.benchmark)
    assert board[0].headline["points"] == 8
    assert "serve 3.0-rc" not in json.dumps(newest)


def test_an_extension_in_review_is_seen_only_where_its_submission_is(result, role_users):
    pending = result["pending"]
    for who, status in (("anonymous", 302), ("reviewer", 404), ("submitter", 200), ("auditor", 200)):
        user = role_users[who]
        response = _get(f"/submissions/{pending.pk}/", user)
        assert response.status_code == status, who


def test_an_extension_scheduled_for_a_date_becomes_the_next_revision_when_due(result, role_users):
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import PublicationRevision
    from leaderboard.publishing import services
    from submissions.models import Submission

    publication, pending = result["publication"], result["pending"]
    put(Submission.objects.filter(pk=pending.pk), "audited")
    pending.refresh_from_db()
    when = timezone.now() + timedelta(days=3)
    scheduled = services.publication_schedule(
        submission=pending, actor=role_users["submitter"], mode="date", publish_at=when
    )
    assert scheduled.status == "scheduled" and scheduled.number is None
    assert services.publications_publish_due(now=timezone.now()) == []
    assert "serve 3.0-rc" not in _get(f"/results/{publication.public_id}/").content.decode()
    assert services.publications_publish_due(now=when + timedelta(minutes=1)) == [
        f"{publication.public_id} r4"
    ]
    revision = PublicationRevision.objects.get(submission=pending)
    assert revision.number == 4 and revision.status == "published"
    publication.refresh_from_db()
    assert publication.headline["points"] == 9 and publication.version_id == pending.submitted_version_id
    assert services.publications_publish_due(now=when + timedelta(minutes=2)) == []  # exactly once


def test_the_api_opens_an_extension_and_refuses_a_hardware_change(role_users, storage_dir):
    from submissions.models import Submission
    from tests.submissions.support import api_client

    publication = publish(organisation=role_users["organisations"]["acme"])
    url = f"/api/v1/submissions/{publication.submission_id}/extend/"
    submitter = api_client(role_users["submitter"])
    refused = submitter.post(url, {"stack": "serve 2.0", "hardware_changed": True}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "extension-hardware-change"
    assert "new submission" in refused.json()["detail"]
    assert api_client(role_users["reviewer"]).post(url, {"stack": "s"}, format="json").status_code in (
        403,
        404,
    )
    assert submitter.post(url, {}, format="json").status_code == 400  # the stack is required
    opened = submitter.post(url, {"stack": "serve 2.0", "software": "serve 1.0 -> 2.0"}, format="json")
    assert opened.status_code == 201, opened.json()
    body = opened.json()
    assert body["extends"] == publication.submission_id and body["status"] == "draft"
    assert body["stack"] == "serve 2.0" and body["changes"]["software"] == "serve 1.0 -> 2.0"
    assert Submission.objects.get(pk=body["id"]).extends_id == publication.submission_id
    again = submitter.post(url, {"stack": "serve 2.1"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "extension-open"


def test_auditors_see_the_delta_and_the_audit_queue_marks_the_extension(result, role_users):
    from submissions.models import Submission

    pending = result["pending"]
    put(Submission.objects.filter(pk=pending.pk), "peer_reviewed")
    auditor = role_users["auditor"]
    page = _get(f"/review/audit/{pending.pk}/", auditor).content.decode()
    assert "data-extension-delta" in page and "Extension of" in page
    assert "serve 3.0-rc" in page and "data-delta-added" in page and "data-delta-replaced" not in page
    queue = _get("/review/audit/", auditor).content.decode()
    assert 'class="badge extension"' in queue
