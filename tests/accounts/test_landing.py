"""Each role lands on its own work after signing in: the chair on the chair's dashboard, an auditor on the audit
queue, a member who only reviews on the review queue, a submitter on the dashboard; a ?next= still wins."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.views.sign_in import landing_url
from tests.factories import MembershipFactory, ReviewAssignmentFactory, SubmissionFactory, UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "correct-horse-battery"


@pytest.mark.parametrize(
    ("who", "lands_on"),
    [
        ("submitter", "/dashboard/"),
        ("reviewer", "/review/"),
        ("auditor", "/review/audit/"),
        ("chair", "/review/chair/"),
    ],
)
def test_each_role_lands_on_its_own_work(role_users, who, lands_on):
    assert landing_url(role_users[who]) == lands_on
    assert Client().get(lands_on).status_code == 302  # a page that needs signing in, not a public one


def test_a_reviewer_who_also_submits_lands_on_the_dashboard(role_users):
    both = UserFactory(username="both")
    MembershipFactory(user=both, organisation=role_users["organisations"]["nimbus"], role="reviewer")
    MembershipFactory(user=both, organisation=role_users["organisations"]["nimbus"], role="submitter")
    assert landing_url(both) == "/dashboard/"


def test_signing_in_as_a_reviewer_goes_to_the_queue_and_next_still_wins(role_users):
    client = Client()
    response = client.post("/accounts/login/", {"username": "reviewer", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/review/"
    client.post("/accounts/logout/")
    response = Client().post(
        "/accounts/login/?next=/leaderboard/",
        {"username": "reviewer", "password": PASSWORD, "next": "/leaderboard/"},
    )
    assert response["Location"] == "/leaderboard/"


def test_a_reviewer_on_the_dashboard_is_pointed_to_the_queue_not_told_to_create_a_submission(role_users):
    client = Client()
    client.force_login(role_users["reviewer"])
    page = client.get("/dashboard/").content.decode()
    assert "Create one below" not in page and "register one on the Systems page" not in page
    assert 'id="reviewer-pointer"' in page and 'href="/review/"' in page


def test_the_review_queue_holds_open_work_only(role_users):
    reviewer = role_users["reviewer"]
    nimbus = role_users["organisations"]["nimbus"]
    open_one = ReviewAssignmentFactory(
        submission=SubmissionFactory(in_review=True), reviewer=reviewer, organisation=nimbus, accepted=True
    )
    done = ReviewAssignmentFactory(
        submission=SubmissionFactory(published=True), reviewer=reviewer, organisation=nimbus, accepted=True
    )
    client = Client()
    client.force_login(reviewer)
    page = client.get("/review/").content.decode()
    assert f'data-assignment="{open_one.pk}"' in page
    assert f'data-assignment="{done.pk}"' not in page
