"""The reviewer's pages per actor: dashboard, review page, its forms and the file browser (paging, refusals).

Actors: assigned reviewer, unassigned reviewer, conflicted reviewer, submitter, other organisation's member,
auditor, chair, anonymous. Whoever may not read the review gets a 404 that never names the hidden system."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from review.models import Comment, Review, ReviewAssignment
from tests.review.conftest import HIDDEN_NAME

pytestmark = pytest.mark.django_db

READERS = {"assigned": True, "submitter": True, "auditor": True, "chair": True}
OUTSIDERS = ("unassigned", "conflicted", "other_member")


def _client(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _page(world, actor, suffix=""):
    return _client(world[actor]).get(f"/review/submissions/{world['submission'].pk}/{suffix}")


@pytest.mark.parametrize("actor", [*READERS, *OUTSIDERS, "anonymous"])
def test_review_page_per_actor(review_world, actor):
    response = _page(review_world, actor)
    body = response.content.decode()
    if actor == "anonymous":
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        return
    if actor in OUTSIDERS:
        assert response.status_code == 404
        assert HIDDEN_NAME not in body
        return
    assert response.status_code == 200
    assert HIDDEN_NAME in body
    assert "Comment for all" in body
    assert "The c16 warm-up looks too short" in body  # the objection, with its status and due date
    assert "answer due" in body
    assert ("Between reviewers only" in body) is (actor != "submitter")
    assert ("Auditors only note" in body) is (actor in ("auditor", "chair"))


def test_review_page_shows_findings_points_curve_files_and_decision_form(review_world):
    body = _page(review_world, "assigned").content.decode()
    for part in ('id="findings"', 'id="points"', 'id="curve"', "AX-8000_c16.tar.gz", 'id="decision"'):
        assert part in body, part
    assert "Record decision" in body  # accepted, in review, not reviewed yet
    assert "Record decision" not in _page(review_world, "submitter").content.decode()


def test_a_draft_has_no_review_page_even_for_its_organisation(review_world):
    from tests.factories import SubmissionFactory

    draft = SubmissionFactory(system=review_world["submission"].system)
    response = _client(review_world["submitter"]).get(f"/review/submissions/{draft.pk}/")
    assert response.status_code == 404


def test_dashboard_lists_open_assignments_with_due_dates_and_my_reviews(review_world):
    response = _client(review_world["assigned"]).get("/review/")
    body = response.content.decode()
    assert response.status_code == 200
    assert HIDDEN_NAME in body and "due " in body
    assert "You have not reviewed anything yet." in body
    ReviewAssignment.objects.filter(pk=review_world["assignment"].pk).update(
        due_at=review_world["assignment"].due_at.replace(year=2020)
    )
    assert "overdue since 2020" in _client(review_world["assigned"]).get("/review/").content.decode()


def test_dashboard_never_shows_a_conflicted_or_unassigned_submission(review_world):
    for actor in ("conflicted", "unassigned"):
        response = _client(review_world[actor]).get("/review/")
        assert response.status_code == 200
        assert HIDDEN_NAME not in response.content.decode()
        assert "No invitations waiting." in response.content.decode()


def test_dashboard_is_for_reviewers(review_world):
    assert _client(review_world["submitter"]).get("/review/").status_code == 403
    assert _client(None).get("/review/").status_code == 302


def test_accept_and_decline_from_the_dashboard(review_world):
    from tests.factories import ReviewAssignmentFactory

    invited = ReviewAssignmentFactory(
        submission=review_world["submission"],
        reviewer=review_world["unassigned"],
        organisation=review_world["unassigned"].memberships.first().organisation,
    )
    client = _client(review_world["unassigned"])
    body = client.get("/review/").content.decode()
    assert "Accept" in body and "Decline" in body and HIDDEN_NAME in body
    assert client.post(f"/review/assignments/{invited.pk}/decline/", {"reason": ""}).status_code == 302
    invited.refresh_from_db()
    assert invited.status == "invited"  # a reason is required
    client.post(f"/review/assignments/{invited.pk}/decline/", {"reason": "On leave"})
    invited.refresh_from_db()
    assert invited.status == "declined" and invited.reason == "On leave"
    assert client.get(f"/review/submissions/{review_world['submission'].pk}/").status_code == 404
    # someone else's assignment is not found
    other = review_world["assignment"]
    assert client.post(f"/review/assignments/{other.pk}/accept/").status_code == 404


def test_decision_form_records_an_objection(review_world):
    client = _client(review_world["assigned"])
    url = f"/review/submissions/{review_world['submission'].pk}/review/"
    response = client.post(
        url, {"decision": "object", "body": "TTFT p90 is off", "objection_type": "validity"}
    )
    assert response.status_code == 302
    review = Review.objects.get(assignment=review_world["assignment"])
    assert review.decision == "object"
    assert Comment.objects.filter(
        kind="objection", objection_type="validity", body="TTFT p90 is off"
    ).exists()
    # the second time is refused with a message, not a 500
    client.post(url, {"decision": "approve"})
    assert Review.objects.filter(assignment=review_world["assignment"]).count() == 1


def test_outsiders_cannot_post_to_the_thread_or_review(review_world):
    pk = review_world["submission"].pk
    before = Comment.objects.count()
    for actor in OUTSIDERS:
        client = _client(review_world[actor])
        assert client.post(f"/review/submissions/{pk}/comments/", {"body": "hi"}).status_code == 404
        assert client.post(f"/review/submissions/{pk}/review/", {"decision": "approve"}).status_code == 404
        objection = review_world["comments"]["objection"]
        close = client.post(
            f"/review/submissions/{pk}/comments/{objection.pk}/close/", {"outcome": "resolved"}
        )
        assert close.status_code == 404
    assert Comment.objects.count() == before


def test_submitter_answers_and_objector_resolves(review_world):
    pk = review_world["submission"].pk
    objection = review_world["comments"]["objection"]
    _client(review_world["submitter"]).post(
        f"/review/submissions/{pk}/comments/",
        {"body": "Warm-up is 60 s, see line 12", "parent": objection.pk},
    )
    objection.refresh_from_db()
    assert objection.objection_status == "answered"
    # the submitter cannot reply to an entry they cannot read
    hidden = review_world["comments"]["reviewers"]
    response = _client(review_world["submitter"]).post(
        f"/review/submissions/{pk}/comments/", {"body": "peek", "parent": hidden.pk}
    )
    assert response.status_code == 404
    _client(review_world["assigned"]).post(
        f"/review/submissions/{pk}/comments/{objection.pk}/close/", {"outcome": "resolved", "note": "Thanks"}
    )
    objection.refresh_from_db()
    assert objection.objection_status == "resolved"


def test_comment_with_a_file_and_line_anchor_links_to_the_file_browser(review_world):
    pk = review_world["submission"].pk
    _client(review_world["assigned"]).post(
        f"/review/submissions/{pk}/comments/",
        {
            "body": "Look here",
            "visibility": "reviewers",
            "file": "AX-8000_c2.tar.gz:c2/report.txt",
            "line": "7",
        },
    )
    comment = Comment.objects.get(body="Look here")
    assert (comment.file, comment.line, comment.visibility) == (
        "AX-8000_c2.tar.gz:c2/report.txt",
        7,
        "reviewers",
    )
    body = _page(review_world, "assigned").content.decode()
    assert "member=c2%2Freport.txt&amp;line=7#L7" in body


def test_a_comment_on_a_folder_links_to_the_archive_listing_not_a_page_that_refuses_it(review_world):
    pk = review_world["submission"].pk
    _client(review_world["assigned"]).post(
        f"/review/submissions/{pk}/comments/",
        {"body": "Where are the docs?", "visibility": "reviewers", "file": "AX-8000_c16.tar.gz:c16/"},
    )
    body = _page(review_world, "assigned").content.decode()
    chip = r'href="([^"]*)" class="anchor-chip"><code>AX-8000_c16.tar.gz:c16/</code>'
    link = re.search(chip, body).group(1).replace("&amp;", "&")
    assert "member=" not in link
    listing = _client(review_world["assigned"]).get(link)
    assert listing.status_code == 200 and "c16/events.jsonl" in listing.content.decode()


# --- The file browser -------------------------------------------------------------------------------


def _position(world, name: str) -> int:
    return world["version"].files.get(original_filename=name).position


def _browser(world, actor, query: str, name="AX-8000_c16.tar.gz"):
    suffix = f"versions/{world['version'].number}/files/{_position(world, name)}/{query}"
    return _page(world, actor, suffix)


def test_file_browser_lists_members_and_pages_a_raw_log_with_line_numbers(review_world):
    listing = _browser(review_world, "assigned", "").content.decode()
    assert "c16/events.jsonl" in listing and "c16/performance/result_summary.json" in listing
    first = _browser(review_world, "assigned", "?member=c16/events.jsonl").content.decode()
    assert 'id="L1"' in first and 'id="L200"' in first and 'id="L201"' not in first
    second = _browser(review_world, "assigned", "?member=c16/events.jsonl&page=2").content.decode()
    assert 'id="L201"' in second and 'id="L400"' in second and 'id="L200"' not in second
    at_line = _browser(review_world, "assigned", "?member=c16/events.jsonl&line=450").content.decode()
    assert 'id="L450" class="highlight"' in at_line and 'id="L401"' in at_line


@pytest.mark.parametrize(
    "member", ["../../etc/passwd", "/etc/passwd", "c16/../../../secret", "c16\\..\\x", "c16/\x00"]
)
def test_file_browser_refuses_a_path_outside_the_archive(review_world, member):
    from urllib.parse import quote

    response = _browser(review_world, "assigned", f"?member={quote(member)}")
    assert response.status_code == 400
    page = response.content.decode()
    # A NUL is refused at the edge (portal.middleware.StorableInputMiddleware), before the browser reads anything.
    assert ("Not shown:" in page or "member contains a NUL character" in page) and "root:" not in page


def test_file_browser_missing_member_is_404(review_world):
    assert _browser(review_world, "assigned", "?member=c16/nothing.txt").status_code == 404


@pytest.mark.parametrize("actor", [*OUTSIDERS, "anonymous"])
def test_file_browser_hidden_from_outsiders(review_world, actor):
    response = _browser(review_world, actor, "?member=c16/events.jsonl")
    assert response.status_code == (302 if actor == "anonymous" else 404)
    assert HIDDEN_NAME not in response.content.decode()


def test_diff_between_versions_on_the_review_page(review_world):
    from tests.factories import SubmissionVersionFactory

    submission = review_world["submission"]
    first = submission.submitted_version
    second = SubmissionVersionFactory(
        submission=submission, files=[("AX-8000_c16.tar.gz", b"new bytes")], check_run="failed"
    )
    submission.submitted_version = second
    submission.save(update_fields=["submitted_version"])
    body = _page(review_world, "assigned").content.decode()
    assert f"Changes from version {first.number} to version {second.number}" in body
    assert "raw-log-consistency" in body  # finding added
    assert "AX-8000_c1.tar.gz" in body  # files removed


def test_a_comment_longer_than_the_cap_is_refused_by_the_page_form_and_nothing_is_stored(
    review_world, settings
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = (
        8 * 1024 * 1024
    )  # the cap, not the request size limit, must refuse it
    pk = review_world["submission"].pk
    before = Comment.objects.count()
    client = _client(review_world["assigned"])
    response = client.post(f"/review/submissions/{pk}/comments/", {"body": "x" * 3_000_000}, follow=True)
    assert Comment.objects.count() == before
    assert "at most 20,000 characters (this one has 3,000,000)" in response.content.decode()
    client.post(f"/review/submissions/{pk}/comments/", {"body": "y" * 20_000})
    assert Comment.objects.filter(body="y" * 20_000).exists()


def test_raising_an_objection_says_so_in_plain_words(review_world):
    pk = review_world["submission"].pk
    response = _client(review_world["assigned"]).post(
        f"/review/submissions/{pk}/comments/",
        {"body": "The c8 run is too short.", "kind": "objection", "objection_type": "methodology"},
        follow=True,
    )
    body = response.content.decode()
    assert "Objection raised." in body and "Objection raised posted" not in body


def test_file_browser_shows_control_and_right_to_left_override_characters_in_member_names(review_world):
    import io
    import tarfile

    from tests.factories import VersionFileFactory

    hostile = "c16/report\u202etxt.exe"  # reads "c16/reportexe.txt" when the override is obeyed
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name in (hostile, "c16/bell\x07.txt"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"hi\n"))
    VersionFileFactory(
        version=review_world["version"], original_filename="odd.tar.gz", content=out.getvalue()
    )
    listing = _browser(review_world, "assigned", "", name="odd.tar.gz").content.decode()
    assert "c16/report⟨U+202E⟩txt.exe" in listing and "c16/bell⟨U+0007⟩.txt" in listing
    assert "\u202e" not in listing.replace("%E2%80%AE", "") and "\x07" not in listing
