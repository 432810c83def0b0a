"""The review process through its services: conflicts, assignment, the thread, the quorum, waivers, the audit,
deadlines with a frozen clock, and fifty approvals racing on PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core import mail
from django.db import close_old_connections, connection
from django.utils import timezone

from access.visibility import reviews_of, submissions_visible_to, thread_of
from audit.models import AuditEvent
from audit.selectors import audit_chain_verify
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review import selectors
from review.models import Comment, Conflict, Review, ReviewAssignment, Waiver
from review.services.assignments import (
    assignment_accept,
    assignment_create,
    assignment_decline,
    assignments_draw,
)
from review.services.attestations import attestation_record, evidence_answer, evidence_request
from review.services.common import submission_submitters
from review.services.conflicts import conflict_declare, conflict_remove
from review.services.deadlines import deadlines_run
from review.services.reviews import review_submit
from review.services.thread import comment_post, objection_close
from review.services.waivers import waiver_decide, waiver_request
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
from tests.states import put

pytestmark = pytest.mark.django_db(transaction=True)  # e-mails leave after commit


def _reviewer(name: str, organisation=None):
    organisation = organisation or OrganisationFactory(name=f"Org of {name}", slug=f"org-{name}")
    user = UserFactory(username=name, email=f"{name}@example.org")
    MembershipFactory(user=user, organisation=organisation, role="reviewer")
    return user


@pytest.fixture
def people(role_users):
    acme = role_users["organisations"]["acme"]
    people = dict(role_users)
    people["reviewer2"] = _reviewer("reviewer2")
    people["acme_reviewer"] = _reviewer("acme-reviewer", acme)
    for name in ("submitter", "reviewer", "auditor", "chair"):
        role_users[name].email = f"{name}@example.org"
        role_users[name].save()
    return people


def _submitted(people, **kwargs) -> Submission:
    acme = people["organisations"]["acme"]
    submission = SubmissionFactory(status="submitted", system=SystemFactory(organisation=acme), **kwargs)
    return submission


def _events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action))


def _in_review(people, reviewers=("reviewer", "reviewer2")) -> Submission:
    submission = _submitted(people)
    for name in reviewers:
        assignment = assignment_create(submission=submission, reviewer=people[name], actor=people["chair"])
        assignment_accept(assignment=assignment, actor=people[name])
    submission.refresh_from_db()
    assert submission.status == "in_review"
    return submission


def _assignment(submission, user) -> ReviewAssignment:
    return ReviewAssignment.objects.get(
        submission=submission, reviewer=user, status__in=("invited", "accepted")
    )


# --- Conflicts of interest ----------------------------------------------------------------------


def test_the_submitters_own_organisation_can_never_review(people):
    submission = _submitted(people)
    with pytest.raises(ApplicationError) as refused:
        assignment_create(submission=submission, reviewer=people["acme_reviewer"], actor=people["chair"])
    assert refused.value.code == "reviewer-not-eligible"
    assert people["acme_reviewer"] not in [user for user, _ in selectors.eligible_reviewers(submission)]


def test_a_declared_conflict_blocks_assignment_and_hides_the_submission_at_once(people):
    submission = _submitted(people)
    nimbus = people["organisations"]["nimbus"]
    assignment = assignment_create(submission=submission, reviewer=people["reviewer"], actor=people["chair"])
    assert submissions_visible_to(people["reviewer"]).filter(pk=submission.pk).exists()
    acme_admin = UserFactory(username="acme-admin")
    MembershipFactory(user=acme_admin, organisation=submission.organisation, role="org_admin")
    conflict_declare(
        organisation=submission.organisation,
        other=nimbus,
        kind="competitor",
        reason="direct rival",
        actor=acme_admin,
    )
    assignment.refresh_from_db()
    assert assignment.status == "released" and assignment.reason == "a conflict of interest was declared"
    assert not submissions_visible_to(people["reviewer"]).filter(pk=submission.pk).exists()
    with pytest.raises(ApplicationError):
        assignment_create(submission=submission, reviewer=people["reviewer"], actor=people["chair"])
    # The organisation's own declaration is theirs to remove; a chair's is pinned.
    conflict = Conflict.objects.get()
    assert not conflict.pinned
    conflict_remove(conflict=conflict, actor=acme_admin)
    pinned = conflict_declare(
        organisation=nimbus,
        other=submission.organisation,
        kind="partner",
        reason="joint venture",
        actor=people["chair"],
    )
    assert pinned.pinned
    with pytest.raises(NotAllowedError):
        conflict_remove(conflict=pinned, actor=acme_admin)
    assert [e.data["kind"] for e in _events("conflict.declared")] == ["competitor", "partner"]


# --- Assignment -------------------------------------------------------------------------------------


def test_assign_accept_moves_to_in_review_and_mails_the_people_concerned(people):
    submission = _submitted(people)
    with pytest.raises(NotAllowedError):
        assignment_create(submission=submission, reviewer=people["reviewer"], actor=people["submitter"])
    assignment = assignment_create(submission=submission, reviewer=people["reviewer"], actor=people["chair"])
    assert [m.to for m in mail.outbox] == [["reviewer@example.org"]]
    assert f"Review requested: submission #{submission.pk}" in mail.outbox[0].subject
    assert "/review/" in mail.outbox[0].body
    assert (
        submission.system.name not in mail.outbox[0].subject + mail.outbox[0].body
    )  # names stay on the page
    with pytest.raises(NotAllowedError):
        assignment_accept(assignment=assignment, actor=people["reviewer2"])
    assignment_accept(assignment=assignment, actor=people["reviewer"])
    submission.refresh_from_db()
    assert submission.status == "in_review"
    event = _events("submission.in_review")[0]
    assert event.actor == people["reviewer"] and event.data["from"] == "submitted"
    # A second acceptance does not move it again.
    second = assignment_create(submission=submission, reviewer=people["reviewer2"], actor=people["chair"])
    assignment_accept(assignment=second, actor=people["reviewer2"])
    assert len(_events("submission.in_review")) == 1


def test_assign_n_draws_eligible_reviewers_from_the_least_loaded_organisations(people):
    busy = _submitted(people)
    assignment_create(submission=busy, reviewer=people["reviewer"], actor=people["chair"])
    quiet = _reviewer("reviewer3")
    submission = _submitted(people)
    drawn = assignments_draw(submission=submission, actor=people["chair"], count=2)
    names = sorted(a.reviewer.username for a in drawn)
    assert names == ["reviewer2", "reviewer3"]  # nimbus already carries an open review; acme never eligible
    assert quiet.pk in {a.reviewer_id for a in drawn}
    assert len({a.organisation_id for a in drawn}) == 2


def test_a_declined_assignment_needs_a_reason_and_tells_the_chair(people):
    submission = _submitted(people)
    assignment = assignment_create(submission=submission, reviewer=people["reviewer"], actor=people["chair"])
    mail.outbox.clear()
    with pytest.raises(ApplicationError):
        assignment_decline(assignment=assignment, actor=people["reviewer"], reason=" ")
    assignment_decline(assignment=assignment, actor=people["reviewer"], reason="on leave until May")
    assert [m.to for m in mail.outbox] == [["chair@example.org"]] and "A reviewer declined" in mail.outbox[
        0
    ].subject
    # The reason is for the chair's notifications page, never the e-mail (no comment text leaves by e-mail).
    assert "on leave" not in mail.outbox[0].body
    assert people["chair"].notifications.get(kind="review.declined").body == "on leave until May"
    submission.refresh_from_db()
    assert submission.status == "submitted"


# --- Reviews, objections and the quorum ----------------------------------------------------------


def test_two_approvals_make_it_peer_reviewed_but_an_open_objection_holds_it(people):
    submission = _in_review(people)
    third = _reviewer("reviewer3")
    assignment_accept(
        assignment=assignment_create(submission=submission, reviewer=third, actor=people["chair"]),
        actor=third,
    )
    objection = review_submit(
        assignment=_assignment(submission, third),
        actor=third,
        decision="object",
        body="TTFT at c64 looks impossible for this accelerator",
        objection_type="suspect",
    )
    assert objection.decision == "object"
    review_submit(
        assignment=_assignment(submission, people["reviewer"]), actor=people["reviewer"], decision="approve"
    )
    review_submit(
        assignment=_assignment(submission, people["reviewer2"]), actor=people["reviewer2"], decision="approve"
    )
    submission.refresh_from_db()
    assert submission.status == "in_review"  # two approvals, but one objection open
    opened = Comment.objects.get(kind="objection")
    assert opened.objection_status == "open" and opened.answer_due_at > timezone.now()
    with pytest.raises(NotAllowedError):
        objection_close(objection=opened, actor=people["reviewer"], outcome="resolved")
    comment_post(submission=submission, actor=people["submitter"], body="Trace attached.", parent=opened)
    opened.refresh_from_db()
    assert opened.objection_status == "answered"
    objection_close(objection=opened, actor=third, outcome="resolved", note="The trace convinces me.")
    submission.refresh_from_db()
    assert submission.status == "peer_reviewed"
    assert _events("submission.peer_reviewed")[0].actor == third
    assert [e.action for e in AuditEvent.objects.filter(object_type="review.comment").order_by("sequence")][
        :3
    ] == ["review.objection_raised", "review.commented", "review.objection_answered"]


def test_a_reviewer_sees_the_other_reviews_only_after_their_own(people):
    submission = _in_review(people)
    first = Review.objects.create(
        assignment=_assignment(submission, people["reviewer"]),
        version=submission.submitted_version,
        decision="approve",
    )
    assert list(reviews_of(people["reviewer2"], submission)) == []
    review_submit(
        assignment=_assignment(submission, people["reviewer2"]), actor=people["reviewer2"], decision="approve"
    )
    assert first in reviews_of(people["reviewer2"], submission)


def test_changes_requested_then_a_new_version_goes_back_to_the_same_reviewers(people):
    submission = _in_review(people)
    review_submit(
        assignment=_assignment(submission, people["reviewer"]),
        actor=people["reviewer"],
        decision="request_changes",
        body="Add the c128 point.",
    )
    submission.refresh_from_db()
    assert submission.status == "changes_requested" and submission.status_reason == "Add the c128 point."
    from tests.factories import submission_take

    with pytest.raises(ConflictError) as refused:
        submission_take(submission, "resubmit", submission.created_by)
    assert refused.value.code == "no-new-version"
    old = submission.submitted_version
    new = SubmissionVersionFactory(submission=submission, check_run="passed")
    submission_take(submission, "resubmit", submission.created_by)
    submission.refresh_from_db()
    assert submission.status == "in_review" and submission.submitted_version == new
    assert selectors.user_is_assigned_reviewer(people["reviewer"], submission)
    diff = selectors.version_diff(old, new)
    assert diff.files_changed == ["bundle.tar.gz"] and not diff.files_added  # same name, new bytes
    # The new version needs its own approvals: the quorum counts the frozen version only.
    review_submit(
        assignment=_assignment(submission, people["reviewer"]), actor=people["reviewer"], decision="approve"
    )
    review_submit(
        assignment=_assignment(submission, people["reviewer2"]), actor=people["reviewer2"], decision="approve"
    )
    submission.refresh_from_db()
    assert submission.status == "peer_reviewed"


def test_thread_visibility_levels(people):
    submission = _in_review(people)
    comment_post(
        submission=submission, actor=people["reviewer"], body="between reviewers", visibility="reviewers"
    )
    comment_post(submission=submission, actor=people["auditor"], body="auditors only", visibility="auditors")
    comment_post(submission=submission, actor=people["reviewer"], body="for everyone")
    read = lambda name: [c.body for c in thread_of(people[name], submission)]  # noqa: E731
    assert read("submitter") == ["for everyone"]
    assert read("reviewer2") == ["between reviewers", "for everyone"]
    assert read("auditor") == ["between reviewers", "auditors only", "for everyone"]
    assert read("acme_reviewer") == ["for everyone"]  # a member of the submitting organisation
    with pytest.raises(NotAllowedError):
        comment_post(submission=submission, actor=people["submitter"], body="x", visibility="reviewers")
    with pytest.raises(NotAllowedError):
        comment_post(
            submission=submission,
            actor=people["submitter"],
            body="x",
            kind="objection",
            objection_type="cosmetic",
        )


# --- Waivers and the audit ----------------------------------------------------------------------------


def test_a_failing_check_goes_through_only_with_waivers_and_the_audit_needs_them_granted(people):
    acme = people["organisations"]["acme"]
    submission = SubmissionFactory(
        status="draft", system=SystemFactory(organisation=acme), created_by=people["submitter"]
    )
    version = SubmissionVersionFactory(submission=submission)
    CheckRunFactory(
        version=version,
        status=CheckRun.Status.FAILED,
        findings=[{"rule": "accuracy-sample-count", "point": "S/m/r1", "file": "a"}],
    )
    from tests.factories import submission_take

    with pytest.raises(ConflictError) as refused:
        submission_take(submission, "submit", people["submitter"])
    assert refused.value.code == "check-not-passed" and "accuracy-sample-count" in refused.value.detail
    waiver = waiver_request(
        version=version,
        actor=people["submitter"],
        rule="accuracy-sample-count",
        point="S/m/r1",
        file="a",
        reason="The demo runs are 2 minutes long.",
    )
    with pytest.raises(ConflictError):  # nobody decides a waiver on a draft (the chair cannot see drafts)
        waiver_decide(waiver=waiver, actor=people["chair"], grant=True, reason="ok")
    submission_take(submission, "submit", people["submitter"])
    put(Submission.objects.filter(pk=submission.pk), "peer_reviewed")
    submission.refresh_from_db()
    readiness = selectors.attestation_readiness(submission)
    assert not readiness.ready and "granted waiver" in readiness.missing[0]
    with pytest.raises(ConflictError) as not_ready:
        attestation_record(submission=submission, actor=people["auditor"], notes="checked")
    assert not_ready.value.code == "not-ready-for-audit"
    with pytest.raises(NotAllowedError):
        waiver_decide(waiver=waiver, actor=people["reviewer"], grant=True, reason="fine")
    waiver_decide(waiver=waiver, actor=people["chair"], grant=True, reason="Rule meant for full runs.")
    request = evidence_request(
        submission=submission, actor=people["auditor"], question="Send the power analyser log of c64."
    )
    with pytest.raises(ConflictError):
        attestation_record(submission=submission, actor=people["auditor"], notes="checked")
    evidence_answer(request=request, actor=people["submitter"], answer="Attached as spl.txt.")
    with pytest.raises(ApplicationError):
        attestation_record(submission=submission, actor=people["auditor"], notes=" ")
    attestation = attestation_record(
        submission=submission, actor=people["auditor"], notes="Re-ran the checks; the waiver is justified."
    )
    submission.refresh_from_db()
    assert submission.status == "audited" and attestation.version == version
    assert Waiver.objects.get().status == "granted"
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="waiver.")] == [
        "waiver.requested",
        "waiver.granted",
    ]


# --- Deadlines with a frozen clock ------------------------------------------------------------------


def test_deadlines_release_remind_and_escalate_exactly_once(people, settings):
    submission = _in_review(people)
    objection = comment_post(
        submission=submission,
        actor=people["reviewer"],
        body="Explain c32.",
        kind="objection",
        objection_type="methodology",
    )
    late = assignment_create(submission=_submitted(people), reviewer=_reviewer("late"), actor=people["chair"])
    mail.outbox.clear()
    now = timezone.now()
    quiet = deadlines_run(now=now)
    assert quiet == {"released": 0, "reminded": 0, "escalated": 0} and not mail.outbox
    day_before = objection.answer_due_at - timedelta(hours=12)
    assert deadlines_run(now=day_before)["reminded"] == 1
    assert deadlines_run(now=day_before)["reminded"] == 0  # the second beat run finds nothing to do
    acme_submitters = {
        user.email
        for user in submission_submitters(submission)  # the submitting organisation's submitters and admins
    }
    assert "submitter@example.org" in acme_submitters
    assert sorted(m.to[0] for m in mail.outbox) == sorted(acme_submitters)
    assert all("due tomorrow" in m.subject for m in mail.outbox)
    mail.outbox.clear()
    after_everything = late.due_at + timedelta(days=1)
    first = deadlines_run(now=after_everything)
    second = deadlines_run(now=after_everything)
    assert first["escalated"] == 1 and second == {"released": 0, "reminded": 0, "escalated": 0}
    late.refresh_from_db()
    assert late.status == "released" and late.reason == "the review deadline passed"
    subjects = sorted(m.subject for m in mail.outbox)
    # The chair once, each submitter once.
    assert sum("overdue" in s for s in subjects) == 1 + len(acme_submitters)
    released_to = [m.to[0] for m in mail.outbox if "Reviewer released" in m.subject]
    # The chair once per released reviewer, and each released reviewer once.
    assert released_to.count("chair@example.org") == 3 and len(released_to) == 6
    # The two in-review reviewers had not reviewed either: both released too, once.
    assert first["released"] == 3


def test_business_days_skip_the_weekend():
    friday = timezone.datetime(2026, 12, 4, 10, 0, tzinfo=timezone.get_current_timezone())
    assert selectors.add_business_days(friday, 3).date().isoformat() == "2026-12-09"


# --- Fifty concurrent approvals on PostgreSQL ---------------------------------------------------------


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs real concurrent connections")
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_approvals_make_one_transition_and_a_valid_chain(role_users, settings):
    settings.PORTAL_REVIEW_QUORUM = 2
    chair = role_users["chair"]
    submission = SubmissionFactory(
        status="submitted", system=SystemFactory(organisation=role_users["organisations"]["acme"])
    )
    reviewers = [_reviewer(f"r{index:02d}") for index in range(50)]
    for reviewer in reviewers:
        assignment_accept(
            assignment=assignment_create(submission=submission, reviewer=reviewer, actor=chair),
            actor=reviewer,
        )
    barrier = threading.Barrier(len(reviewers))
    errors = []

    def approve(reviewer):
        close_old_connections()
        try:
            assignment = ReviewAssignment.objects.get(submission=submission, reviewer=reviewer)
            barrier.wait(timeout=30)
            review_submit(assignment=assignment, actor=reviewer, decision="approve")
        except ConflictError as exc:  # approvals after the quorum: the submission is no longer in review
            errors.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(reviewer,)) for reviewer in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    submission.refresh_from_db()
    assert submission.status == "peer_reviewed"
    assert AuditEvent.objects.filter(action="submission.peer_reviewed").count() == 1
    approvals = Review.objects.filter(decision="approve").count()
    assert approvals + len(errors) == 50 and set(errors) <= {"state-conflict"}
    assert audit_chain_verify().ok
