"""The issue's probes, rerun as an attacker would: a conflicted approval, a waiver asked for after peer review, a
comment on a closed thread. Each write is refused by its service (not by a hidden button) and writes nothing."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import Notification
from accounts.services import organisations as accounts_services
from audit.models import AuditEvent
from portal.errors import ConflictError, NotAllowedError
from review import selectors
from review.lifecycle import SUBMISSION
from review.models import Comment, Review, ReviewAssignment, Waiver
from review.services.assignments import assignment_accept, assignment_create
from review.services.conflicts import conflict_declare
from review.services.reviews import review_submit
from review.services.thread import comment_post
from review.services.waivers import waiver_request
from submissions.models import CheckRun, Submission
from tests.factories import (
    CheckRunFactory,
    MembershipFactory,
    OrganisationFactory,
    SubmissionFactory,
    SubmissionVersionFactory,
    SystemFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _reviewer(name: str):
    organisation = OrganisationFactory(name=f"Org of {name}", slug=f"org-{name}")
    user = UserFactory(username=name, email=f"{name}@example.org")
    MembershipFactory(user=user, organisation=organisation, role="reviewer")
    return user


def _in_review(role_users, reviewers):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status="submitted", system=SystemFactory(organisation=acme))
    for reviewer in reviewers:
        assignment = assignment_create(submission=submission, reviewer=reviewer, actor=role_users["chair"])
        assignment_accept(assignment=assignment, actor=reviewer)
    submission.refresh_from_db()
    assert submission.status == "in_review"
    return submission


def _assignment(submission, user) -> ReviewAssignment:
    return ReviewAssignment.objects.get(submission=submission, reviewer=user)


# --- Conflicts judged at every action -----------------------------------------------------------------------


def test_an_approval_by_a_reviewer_who_joined_the_submitter_since_does_not_count(role_users):
    """The reviewer approves, then joins the submitting organisation by a door that calls no service (the admin,
    a script): the quorum counts only approvals by reviewers without a conflict now, so a second approval does
    not make the submission peer reviewed, and the conflicted reviewer can no longer review, comment or object."""
    insider, honest = _reviewer("insider"), _reviewer("honest")
    submission = _in_review(role_users, [insider, honest])
    review_submit(assignment=_assignment(submission, insider), actor=insider, decision="approve")
    assert selectors.approvals_count(submission) == 1
    MembershipFactory(user=insider, organisation=role_users["organisations"]["acme"], role="submitter")
    assert selectors.approvals_count(submission) == 0  # counted at the time of counting
    review_submit(assignment=_assignment(submission, honest), actor=honest, decision="approve")
    submission.refresh_from_db()
    assert submission.status == "in_review"  # 1 of 2: the insider's approval does not count
    assert not SUBMISSION.allowed(insider, submission, "review")


def test_a_reviewer_conflicted_now_cannot_review_comment_or_object(role_users):
    reviewer = _reviewer("switcher")
    submission = _in_review(role_users, [reviewer, _reviewer("other")])
    rival = OrganisationFactory(name="Rival", slug="rival")
    conflict_declare(
        organisation=rival,
        other=role_users["organisations"]["acme"],
        kind="competitor",
        reason="rivals",
        actor=role_users["chair"],
    )
    MembershipFactory(user=reviewer, organisation=rival, role="reviewer")  # no service: nothing released
    assert _assignment(submission, reviewer).status == "accepted"
    before = (Review.objects.count(), Comment.objects.count(), AuditEvent.objects.count())
    with pytest.raises(NotAllowedError):
        review_submit(assignment=_assignment(submission, reviewer), actor=reviewer, decision="approve")
    with pytest.raises(NotAllowedError):
        comment_post(submission=submission, actor=reviewer, body="Looks fine to me.")
    with pytest.raises(NotAllowedError):
        comment_post(
            submission=submission,
            actor=reviewer,
            body="Suspicious.",
            kind="objection",
            objection_type="suspect",
        )
    assert (Review.objects.count(), Comment.objects.count(), AuditEvent.objects.count()) == before


def test_joining_the_submitting_organisation_releases_the_assignment_and_tells_the_chair(role_users):
    reviewer = _reviewer("joiner")
    submission = _in_review(role_users, [reviewer, _reviewer("stayer")])
    acme = role_users["organisations"]["acme"]
    accounts_services.membership_grant(
        user=reviewer, organisation=acme, role="submitter", actor=role_users["chair"]
    )
    assignment = _assignment(submission, reviewer)
    assert assignment.status == "released" and "conflict of interest" in assignment.reason
    released = AuditEvent.objects.get(action="review.released")
    assert released.actor == role_users["chair"] and released.data["submission"] == submission.pk
    told = Notification.objects.filter(user=role_users["chair"], kind="review.released")
    assert told.count() == 1 and "joiner was released" in told.get().subject
    # the other reviewer's assignment stands
    assert (
        _assignment(submission, UserFactory._meta.model.objects.get(username="stayer")).status == "accepted"
    )


def test_losing_the_reviewer_role_releases_the_assignment(role_users):
    reviewer = _reviewer("demoted")
    submission = _in_review(role_users, [reviewer, _reviewer("kept")])
    organisation = reviewer.memberships.get().organisation
    MembershipFactory(user=reviewer, organisation=organisation, role="org_admin")  # keeps the org an admin
    accounts_services.membership_roles_set(
        user=reviewer, organisation=organisation, roles=["org_admin"], actor=role_users["chair"]
    )
    assert _assignment(submission, reviewer).status == "released"


# --- Rules that were only a hidden button -----------------------------------------------------------------


def _with_failing_finding(role_users, status: str):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status=status, system=SystemFactory(organisation=acme))
    version = SubmissionVersionFactory(submission=submission)
    CheckRunFactory(
        version=version,
        status=CheckRun.Status.FAILED,
        findings=[{"rule": "accuracy-sample-count", "point": "S/m/r1", "file": "a"}],
    )
    Submission.objects.filter(pk=submission.pk).update(submitted_version=version)
    submission.refresh_from_db()
    return submission, version


@pytest.mark.parametrize("status", ["audited", "published", "withdrawn", "rejected"])
def test_a_waiver_request_after_peer_review_is_refused_by_the_service_and_the_route(role_users, status):
    submission, version = _with_failing_finding(role_users, status)
    submitter = role_users["submitter"]
    with pytest.raises(ConflictError) as refused:
        waiver_request(
            version=version,
            actor=submitter,
            rule="accuracy-sample-count",
            point="S/m/r1",
            file="a",
            reason="why",
        )
    assert refused.value.code == "state-conflict"
    client = Client()
    client.force_login(submitter)
    events = AuditEvent.objects.count()
    response = client.post(
        reverse("review:waiver_request", args=[submission.pk]),
        {"rule": "accuracy-sample-count", "point": "S/m/r1", "file": "a", "reason": "The runs are short."},
        follow=True,
    )
    assert response.status_code == 200 and "Waiver not asked for" in response.content.decode()
    assert not Waiver.objects.exists() and AuditEvent.objects.count() == events


def test_a_waiver_request_in_peer_review_still_goes_through(role_users):
    submission, version = _with_failing_finding(role_users, "peer_reviewed")
    waiver = waiver_request(
        version=version,
        actor=role_users["submitter"],
        rule="accuracy-sample-count",
        point="S/m/r1",
        file="a",
        reason="The runs are short.",
    )
    assert waiver.status == "requested"


@pytest.mark.parametrize("status", ["audited", "published", "withdrawn", "rejected"])
def test_a_comment_on_a_closed_thread_is_refused_by_the_service_and_the_routes(role_users, status):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status=status, system=SystemFactory(organisation=acme))
    SubmissionVersionFactory(submission=submission)
    for actor in (role_users["submitter"], role_users["chair"], role_users["auditor"]):
        with pytest.raises(ConflictError) as refused:
            comment_post(submission=submission, actor=actor, body="One more thing.")
        assert refused.value.code == "state-conflict"
    events = AuditEvent.objects.count()
    client = Client()
    client.force_login(role_users["submitter"])
    response = client.post(
        reverse("review:submitter_comment", args=[submission.pk]), {"body": "Hello?"}, follow=True
    )
    assert "Not posted" in response.content.decode()
    client.force_login(role_users["chair"])
    client.post(
        reverse("review:comment_create", args=[submission.pk]), {"body": "Chair here.", "visibility": "all"}
    )
    assert not Comment.objects.exists() and AuditEvent.objects.count() == events


def test_a_comment_on_an_open_thread_goes_through(role_users):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status="peer_reviewed", system=SystemFactory(organisation=acme))
    SubmissionVersionFactory(submission=submission)
    comment = comment_post(submission=submission, actor=role_users["submitter"], body="Answer.")
    assert comment.pk and comment.submission_id == submission.pk
