"""The submitter's side of the review on the submission page (review.views.submitter): the panel per actor
(submitter, other organisation's member, assigned / unassigned / conflicted reviewer, auditor, chair,
anonymous) and the submitter's writes (answer an objection, comment, ask for a waiver, answer evidence)."""

from __future__ import annotations

import pytest
from django.test import Client

from review import lifecycle
from review.models import Comment, EvidenceRequest, Waiver
from submissions.models import Submission
from tests.factories import (
    CheckRunFactory,
    EvidenceRequestFactory,
    ReviewFactory,
    SubmissionVersionFactory,
)
from tests.review.conftest import HIDDEN_NAME
from tests.states import put

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _page(user, submission):
    return _client(user).get(f"/submissions/{submission.pk}/")


@pytest.fixture
def world(review_world):
    """The review world plus a failed check of the frozen version and an open evidence request."""
    version = review_world["version"]
    run = CheckRunFactory(version=version, status="failed", findings=["accuracy-sample-count"])
    review_world["finding"] = run.findings.get(rule="accuracy-sample-count")
    review_world["evidence"] = EvidenceRequestFactory(
        submission=review_world["submission"],
        version=version,
        auditor=review_world["auditor"],
        question="Send the power analyser log.",
    )
    return review_world


def test_submitter_sees_reviewers_thread_waivers_and_evidence_with_forms(world):
    response = _page(world["submitter"], world["submission"])
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="review"' in body
    assert world["assigned"].username in body and "NimbusCloud" in body  # reviews are signed
    assert "Comment for all" in body
    assert "Between reviewers only" not in body and "Auditors only note" not in body
    objection = world["comments"]["objection"]
    assert f'data-answer="{objection.pk}"' in body and "Answer objection" in body
    assert "answer due" in body
    assert 'id="new-comment"' in body
    assert "Ask for a waiver" in body and 'value="accuracy-sample-count"' in body
    assert "Send the power analyser log." in body and "Answer the auditor" in body
    # the conflicted reviewer's assignment is the organisation's to know (it was released by nobody yet)
    assert "Read-only here" not in body


@pytest.mark.parametrize("actor", ["other_member", "unassigned", "conflicted"])
def test_outsiders_get_404_without_the_name(world, actor):
    response = _page(world[actor], world["submission"])
    assert response.status_code == 404
    assert HIDDEN_NAME not in response.content.decode()


def test_anonymous_goes_to_login(world):
    response = _page(None, world["submission"])
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_assigned_reviewer_gets_a_link_to_the_review_page_and_no_forms(world):
    response = _page(world["assigned"], world["submission"])
    body = response.content.decode()
    assert response.status_code == 200
    assert f"/review/submissions/{world['submission'].pk}/" in body
    assert "Answer objection" not in body and "Ask for a waiver" not in body
    assert "Answer the auditor" not in body


@pytest.mark.parametrize("actor", ["auditor", "chair"])
def test_auditor_and_chair_read_the_panel_without_forms(world, actor):
    response = _page(world[actor], world["submission"])
    body = response.content.decode()
    assert response.status_code == 200
    assert "Read-only here" in body
    assert world["assigned"].username in body and "Comment for all" in body
    assert "Send the power analyser log." in body
    for form in ("Answer objection", "Ask for a waiver", "Answer the auditor", 'id="new-comment"'):
        assert form not in body, form


def test_submitter_answers_an_objection_and_comments(world):
    submission, objection = world["submission"], world["comments"]["objection"]
    client = _client(world["submitter"])
    response = client.post(
        f"/review/submissions/{submission.pk}/thread/",
        {"parent": objection.pk, "body": "The warm-up follows the rule set: 30 s."},
    )
    assert response.status_code == 302
    assert response["Location"].startswith(f"/submissions/{submission.pk}/#comment-")
    objection.refresh_from_db()
    assert objection.objection_status == Comment.ObjectionStatus.ANSWERED
    reply = objection.replies.get()
    assert reply.visibility == Comment.Visibility.ALL and reply.author == world["submitter"]
    client.post(f"/review/submissions/{submission.pk}/thread/", {"body": "The full run follows."})
    assert Comment.objects.filter(body="The full run follows.", parent=None).exists()
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "The warm-up follows the rule set" in page and f'data-answer="{objection.pk}"' not in page


def test_a_reply_to_a_hidden_entry_is_404(world):
    hidden = world["comments"]["reviewers"]
    response = _client(world["submitter"]).post(
        f"/review/submissions/{world['submission'].pk}/thread/", {"parent": hidden.pk, "body": "peek"}
    )
    assert response.status_code == 404
    assert not Comment.objects.filter(body="peek").exists()


def test_submitter_asks_for_a_waiver_and_sees_its_status(world):
    submission, finding = world["submission"], world["finding"]
    client = _client(world["submitter"])
    response = client.post(
        f"/review/submissions/{submission.pk}/waivers/",
        {
            "version": world["version"].number,
            "rule": finding.rule,
            "point": finding.point,
            "file": finding.file,
            "reason": "Short demo run on purpose.",
        },
    )
    assert response.status_code == 302 and response["Location"].endswith("#waivers")
    waiver = Waiver.objects.get(version=world["version"], rule=finding.rule)
    assert waiver.status == Waiver.Status.REQUESTED and waiver.requested_by == world["submitter"]
    put(
        Waiver.objects.filter(pk=waiver.pk),
        Waiver.Status.REFUSED,
        decided_by=world["auditor"],
        decision_reason="Run it in full.",
    )
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Refused" in page and "Run it in full." in page and "Short demo run on purpose." in page


def test_submitter_answers_evidence(world):
    evidence = world["evidence"]
    response = _client(world["submitter"]).post(
        f"/review/evidence/{evidence.pk}/answer/", {"answer": "Attached in the thread."}
    )
    assert response.status_code == 302 and response["Location"].endswith(f"#evidence-{evidence.pk}")
    evidence.refresh_from_db()
    assert evidence.status == EvidenceRequest.Status.ANSWERED and evidence.answer == "Attached in the thread."


@pytest.mark.parametrize("actor", ["other_member", "unassigned", "conflicted"])
def test_outsiders_cannot_write(world, actor):
    client = _client(world[actor])
    pk = world["submission"].pk
    assert client.post(f"/review/submissions/{pk}/thread/", {"body": "x"}).status_code == 404
    assert client.post(f"/review/submissions/{pk}/waivers/", {"rule": "x", "reason": "x"}).status_code == 404
    answer = client.post(f"/review/evidence/{world['evidence'].pk}/answer/", {"answer": "x"})
    assert answer.status_code == 404


@pytest.mark.parametrize("actor", ["assigned", "auditor", "chair"])
def test_reviewers_and_overseers_are_refused_the_submitters_writes(world, actor):
    client = _client(world[actor])
    pk = world["submission"].pk
    assert client.post(f"/review/submissions/{pk}/thread/", {"body": "x"}).status_code == 403
    assert client.post(f"/review/submissions/{pk}/waivers/", {"rule": "x", "reason": "x"}).status_code == 403
    if actor != "assigned":  # evidence requests are the organisation's and the overseers' only
        answer = client.post(f"/review/evidence/{world['evidence'].pk}/answer/", {"answer": "x"})
        assert answer.status_code == 403
    assert not Comment.objects.filter(body="x").exists()
    assert EvidenceRequest.objects.get(pk=world["evidence"].pk).status == "open"


def test_anonymous_writes_go_to_login(world):
    client = _client(None)
    response = client.post(f"/review/submissions/{world['submission'].pk}/thread/", {"body": "x"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_draft_panel_offers_waivers_only_and_submit_follows(role_users, draft):
    """A failed draft: ask for a waiver of each error finding, then submit is enabled."""
    version = SubmissionVersionFactory(submission=draft)
    run = CheckRunFactory(version=version, status="failed", findings=["accuracy-sample-count"])
    submitter = role_users["submitter"]
    client = _client(submitter)
    page = client.get(f"/submissions/{draft.pk}/").content.decode()
    assert "Ask for a waiver" in page and "Who reviews" not in page and "Evidence requests" not in page
    submit = next(a for a in lifecycle.allowed_actions(submitter, draft) if a.action == "submit")
    assert not submit.enabled and "waiver" in submit.blocked_detail
    finding = run.findings.get()
    client.post(
        f"/review/submissions/{draft.pk}/waivers/",
        {"rule": finding.rule, "point": finding.point, "file": finding.file, "reason": "Short run."},
    )
    submit = next(a for a in lifecycle.allowed_actions(submitter, draft) if a.action == "submit")
    assert submit.enabled, submit.blocked_detail
    # the draft is nobody else's business
    for actor in ("reviewer", "auditor"):
        assert _page(role_users[actor], draft).status_code == 404
    assert "Read-only" not in page


def test_changes_requested_shows_the_reason_and_why_resubmit_waits(world):
    submission = world["submission"]
    ReviewFactory(
        assignment=world["assignment"],
        version=world["version"],
        decision="request_changes",
        body="Rerun c64 with the full sample count.",
    )
    put(
        Submission.objects.filter(pk=submission.pk),
        Submission.Status.CHANGES_REQUESTED,
        status_reason="Rerun c64 with the full sample count.",
    )
    body = _page(world["submitter"], submission).content.decode()
    assert "Changes requested" in body and "Rerun c64 with the full sample count." in body
    assert "Send the new version to the reviewers" in body
    assert "Upload a new version with the requested changes first" in body  # the blocked reason
    assert "data-upload" in body  # the upload box is open again for the new version


# --- API: who reviews (/api/v1/submission-reviewers/) -------------------------------------------------


def _reviewers_api(user, submission):
    from rest_framework.test import APIClient

    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client.get(f"/api/v1/submission-reviewers/?submission={submission.pk}")


@pytest.mark.parametrize(
    ("actor", "expected"),
    [
        ("submitter", {"reviewer", "conflicted"}),
        ("assigned", {"reviewer"}),
        ("auditor", {"reviewer", "conflicted"}),
        ("chair", {"reviewer", "conflicted"}),
        ("other_member", set()),
        ("unassigned", set()),
        ("conflicted", set()),
    ],
)
def test_who_reviews_through_the_api(world, actor, expected):
    response = _reviewers_api(world[actor], world["submission"])
    assert response.status_code == 200
    rows = response.json()["results"]
    assert {row["reviewer"] for row in rows} == expected
    assert HIDDEN_NAME not in response.content.decode()
    assert all("reason" not in row for row in rows)


def test_who_reviews_refuses_anonymous(world):
    assert _reviewers_api(None, world["submission"]).status_code in (401, 403)


def test_the_status_badge_says_how_many_errors_are_waived(client, role_users):
    """A failed check counts its granted waivers ("N waived") while errors remain; once every error is waived it
    reads "check: passed with N waived" (issue 26: never "failed"; the waivers one click away), never plain
    "passed"."""

    from review.services.waivers import waiver_decide, waiver_request
    from submissions.models import CheckRun
    from tests.factories import CheckRunFactory, SubmissionFactory, SubmissionVersionFactory, SystemFactory

    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(
        status="draft", system=SystemFactory(organisation=acme), created_by=role_users["submitter"]
    )
    version = SubmissionVersionFactory(submission=submission)
    CheckRunFactory(
        version=version,
        status=CheckRun.Status.FAILED,
        findings=[
            {"rule": "accuracy-sample-count", "point": "S/m/r1", "file": "a"},
            {"rule": "accuracy-sample-count", "point": "S/m/r2", "file": "b"},
        ],
    )
    for point, file in (("S/m/r1", "a"), ("S/m/r2", "b")):
        waiver_request(
            version=version,
            actor=role_users["submitter"],
            rule="accuracy-sample-count",
            point=point,
            file=file,
            reason="short demo runs",
        )
    from tests.factories import submission_take

    submission_take(submission, "submit", role_users["submitter"])
    client.force_login(role_users["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "2 errors" in page and " waived</span>" not in page  # asked for, not yet granted
    waivers = list(version.waivers.all())
    waiver_decide(waiver=waivers[0], actor=role_users["chair"], grant=True, reason="fits the rule's intent")
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert ">1 waived</span>" in page
    waiver_decide(waiver=waivers[1], actor=role_users["chair"], grant=True, reason="same")
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "check: passed with 2 waived</a>" in page and "check: failed" not in page
    assert f'href="/submissions/{submission.pk}/#waivers"' in page and 'id="waivers"' in page
    assert "check: passed<" not in page
