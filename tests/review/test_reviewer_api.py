"""The reviewer's API per actor: assignments, reviews, the thread, the version diff and the file browser.
Hidden is 404 (never 403), refusals carry the services' stable codes, writes honour Idempotency-Key."""

from __future__ import annotations

import json

import pytest

from review.models import Comment, Review, ReviewAssignment
from tests.factories import ReviewAssignmentFactory, SubmissionVersionFactory
from tests.review.conftest import HIDDEN_NAME
from tests.submissions.support import api_client

pytestmark = pytest.mark.django_db

READERS = ("assigned", "submitter", "auditor", "chair")
OUTSIDERS = ("unassigned", "conflicted", "other_member")


def _get(world, actor, url):
    return api_client(world[actor]).get(url)


def _post(world, actor, url, body=None, **headers):
    return api_client(world[actor]).post(url, body or {}, format="json", **headers)


def test_assignments_list_only_mine(review_world):
    rows = _get(review_world, "assigned", "/api/v1/review-assignments/").json()["results"]
    assert [row["id"] for row in rows] == [review_world["assignment"].pk]
    assert rows[0]["system"] == HIDDEN_NAME and rows[0]["overdue"] is False
    for actor in (*OUTSIDERS, "submitter", "auditor"):
        response = _get(review_world, actor, "/api/v1/review-assignments/")
        assert HIDDEN_NAME not in json.dumps(response.json()), actor
    assert api_client(None).get("/api/v1/review-assignments/").status_code in (401, 403)


def test_conflicted_reviewer_cannot_see_or_accept_their_stale_invitation(review_world):
    stale = ReviewAssignment.objects.get(reviewer=review_world["conflicted"])
    response = _post(review_world, "conflicted", f"/api/v1/review-assignments/{stale.pk}/accept/")
    assert response.status_code == 404
    assert HIDDEN_NAME not in response.content.decode()


def test_accept_and_decline_with_codes_and_idempotency(review_world):
    invited = ReviewAssignmentFactory(
        submission=review_world["submission"],
        reviewer=review_world["unassigned"],
        organisation=review_world["unassigned"].memberships.first().organisation,
    )
    url = f"/api/v1/review-assignments/{invited.pk}/decline/"
    refused = _post(review_world, "unassigned", url, {"reason": ""})
    assert refused.status_code == 400 and refused.json()["code"] == "invalid"
    first = _post(review_world, "unassigned", url, {"reason": "On leave"}, HTTP_IDEMPOTENCY_KEY="k1")
    again = _post(review_world, "unassigned", url, {"reason": "On leave"}, HTTP_IDEMPOTENCY_KEY="k1")
    assert first.status_code == again.status_code == 200
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    lost = _post(review_world, "unassigned", f"/api/v1/review-assignments/{invited.pk}/accept/")
    assert lost.status_code == 404  # declined: the submission is no longer theirs to see


def test_accept_twice_is_a_state_conflict(review_world):
    url = f"/api/v1/review-assignments/{review_world['assignment'].pk}/accept/"
    response = _post(review_world, "assigned", url)
    assert response.status_code == 409 and response.json()["code"] == "state-conflict"


def test_review_create_and_the_others_reviews_appear_after_mine(review_world):
    other = ReviewAssignmentFactory(submission=review_world["submission"], accepted=True)
    Review.objects.create(assignment=other, version=review_world["version"], decision="approve")
    url = f"/api/v1/reviews/?submission={review_world['submission'].pk}"
    assert _get(review_world, "assigned", url).json()["results"] == []
    created = _post(
        review_world,
        "assigned",
        "/api/v1/reviews/",
        {"assignment": review_world["assignment"].pk, "decision": "request_changes", "body": "Rerun c64"},
        HTTP_IDEMPOTENCY_KEY="review-1",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["decision"] == "request_changes"
    assert len(_get(review_world, "assigned", url).json()["results"]) == 2
    again = _post(
        review_world,
        "assigned",
        "/api/v1/reviews/",
        {"assignment": review_world["assignment"].pk, "decision": "approve"},
    )
    assert again.status_code in (403, 409) and again.json()["code"] in ("state-conflict", "already-reviewed")


@pytest.mark.parametrize("actor", OUTSIDERS)
def test_outsiders_cannot_review_or_read_reviews(review_world, actor):
    ReviewAssignmentFactory(submission=review_world["submission"], accepted=True)
    response = _post(
        review_world,
        actor,
        "/api/v1/reviews/",
        {"assignment": review_world["assignment"].pk, "decision": "approve"},
    )
    assert response.status_code == 404
    listed = _get(review_world, actor, f"/api/v1/reviews/?submission={review_world['submission'].pk}")
    assert listed.json()["results"] == []


@pytest.mark.parametrize("actor", [*READERS, *OUTSIDERS])
def test_thread_list_per_actor(review_world, actor):
    url = f"/api/v1/comments/?submission={review_world['submission'].pk}"
    bodies = {row["body"] for row in _get(review_world, actor, url).json()["results"]}
    if actor in OUTSIDERS:
        assert bodies == set()
        return
    assert "Comment for all" in bodies and "The c16 warm-up looks too short" in bodies
    assert ("Between reviewers only" in bodies) is (actor != "submitter")
    assert ("Auditors only note" in bodies) is (actor in ("auditor", "chair"))


def test_post_objection_reply_and_close(review_world):
    pk = review_world["submission"].pk
    created = _post(
        review_world,
        "assigned",
        "/api/v1/comments/",
        {
            "submission": pk,
            "body": "Power log missing",
            "kind": "objection",
            "objection_type": "compliance",
            "file": "AX-8000_c16.tar.gz:c16/report.txt",
            "line": 3,
        },
        HTTP_IDEMPOTENCY_KEY="obj-1",
    )
    assert created.status_code == 201, created.json()
    objection = created.json()
    assert objection["objection_status"] == "open" and objection["answer_due_at"]
    # the submitter cannot object
    refused = _post(
        review_world,
        "submitter",
        "/api/v1/comments/",
        {"submission": pk, "body": "x", "kind": "objection", "objection_type": "cosmetic"},
    )
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    answer = _post(
        review_world,
        "submitter",
        "/api/v1/comments/",
        {"submission": pk, "body": "Attached", "parent": objection["id"]},
    )
    assert answer.status_code == 201
    assert Comment.objects.get(pk=objection["id"]).objection_status == "answered"
    # only the objector or the chair closes it
    not_mine = _post(
        review_world, "submitter", f"/api/v1/comments/{objection['id']}/close/", {"outcome": "resolved"}
    )
    assert not_mine.status_code == 403
    closed = _post(
        review_world, "chair", f"/api/v1/comments/{objection['id']}/close/", {"outcome": "overruled"}
    )
    assert closed.status_code == 200 and closed.json()["objection_status"] == "overruled"
    twice = _post(
        review_world, "assigned", f"/api/v1/comments/{objection['id']}/close/", {"outcome": "resolved"}
    )
    assert twice.status_code == 409 and twice.json()["code"] == "state-conflict"


@pytest.mark.parametrize("actor", OUTSIDERS)
def test_outsiders_cannot_post_to_the_thread(review_world, actor):
    pk = review_world["submission"].pk
    response = _post(review_world, actor, "/api/v1/comments/", {"submission": pk, "body": "hello"})
    assert response.status_code == 404 and HIDDEN_NAME not in response.content.decode()
    objection = review_world["comments"]["objection"]
    close = _post(review_world, actor, f"/api/v1/comments/{objection.pk}/close/", {"outcome": "resolved"})
    assert close.status_code == 404


def test_submitter_cannot_reply_to_a_reviewer_only_entry(review_world):
    hidden = review_world["comments"]["reviewers"]
    response = _post(
        review_world,
        "submitter",
        "/api/v1/comments/",
        {"submission": review_world["submission"].pk, "body": "peek", "parent": hidden.pk},
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid"


def test_version_diff(review_world):
    submission = review_world["submission"]
    second = SubmissionVersionFactory(
        submission=submission, files=[("AX-8000_c16.tar.gz", b"new bytes")], check_run="failed"
    )
    response = _get(review_world, "assigned", f"/api/v1/review-versions/{second.pk}/diff/")
    assert response.status_code == 200
    diff = response.json()
    assert diff["old_version"] == 1 and diff["new_version"] == 2
    assert "AX-8000_c16.tar.gz" in diff["files_changed"] and "AX-8000_c1.tar.gz" in diff["files_removed"]
    assert [f["rule"] for f in diff["findings_added"]] == ["raw-log-consistency"]
    assert diff["points"]
    for actor in OUTSIDERS:
        assert _get(review_world, actor, f"/api/v1/review-versions/{second.pk}/diff/").status_code == 404


def test_file_listing_and_paging(review_world):
    version = review_world["version"]
    files = _get(review_world, "assigned", f"/api/v1/review-versions/{version.pk}/files/").json()
    c16 = next(f for f in files if f["original_filename"] == "AX-8000_c16.tar.gz")
    assert "c16/events.jsonl" in [m["name"] for m in c16["members"]]
    base = f"/api/v1/review-versions/{version.pk}/files/{c16['position']}/lines/"
    page = _get(review_world, "assigned", f"{base}?member=c16/events.jsonl&page=3&per_page=50").json()
    assert page["first_line"] == 101 and [line["number"] for line in page["lines"]] == list(range(101, 151))
    assert page["has_next"] is True
    at_line = _get(review_world, "assigned", f"{base}?member=c16/events.jsonl&line=7&per_page=5").json()
    assert at_line["page"] == 2 and at_line["lines"][0]["number"] == 6
    capped = _get(review_world, "assigned", f"{base}?member=c16/events.jsonl&per_page=100000").json()
    assert capped["per_page"] == 1000
    for member in ("../../../etc/passwd", "/etc/passwd"):
        refused = _get(review_world, "assigned", f"{base}?member={member}")
        assert refused.status_code == 400 and refused.json()["code"] == "path-outside-archive"
    missing = _get(review_world, "assigned", f"{base}?member=c16/none")
    assert missing.status_code == 404 and missing.json()["code"] == "member-not-found"
    for actor in OUTSIDERS:
        assert _get(review_world, actor, f"{base}?member=c16/events.jsonl").status_code == 404
        assert _get(review_world, actor, f"/api/v1/review-versions/{version.pk}/files/").status_code == 404


def test_schema_documents_the_review_endpoints(client):
    schema = client.get("/api/schema/?format=json").json()
    for path in (
        "/api/v1/review-assignments/{id}/accept/",
        "/api/v1/review-assignments/{id}/decline/",
        "/api/v1/reviews/",
        "/api/v1/comments/",
        "/api/v1/comments/{id}/close/",
        "/api/v1/review-versions/{id}/diff/",
        "/api/v1/review-versions/{id}/files/",
        "/api/v1/review-versions/{id}/files/{position}/lines/",
    ):
        assert path in schema["paths"], path
