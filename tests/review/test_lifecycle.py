"""The lifecycle table: every row allowed for its actors and refused for the others in every state, races,
audit events, the buttons on the page and `allowed_actions` in the API; stuck runs; the chair's re-check."""

from __future__ import annotations

import re
import threading
import uuid
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from portal.policy import DOC_END, DOC_START
from portal.reconcile import jobs_reconcile
from review import lifecycle
from review.lifecycle import allowed_actions
from review.services.submitter import submission_submit, submission_withdraw
from submissions.checks.queue import check_run_requeue
from submissions.models import CheckRun, Submission, SubmissionVersion
from tests.factories import MembershipFactory, UserFactory, submission_take
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db(transaction=True)


def _version_with_run(submission, user, status):
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=submission.versions.count() + 1,
        kind="bundle",
        size_bytes=1,
        sha256="a" * 64,
        uploader=user,
    )
    run = CheckRun.objects.create(version=version)
    put(CheckRun.objects.filter(pk=run.pk), status)
    return version, run


def test_submit_needs_a_passing_check_on_the_latest_version(role_users, draft):
    submitter = role_users["submitter"]
    with pytest.raises(ConflictError) as no_version:
        submission_submit(submission=draft, actor=submitter)
    assert no_version.value.code == "check-not-passed"
    _version_with_run(draft, submitter, CheckRun.Status.PASSED)
    latest, _ = _version_with_run(draft, submitter, CheckRun.Status.FAILED)
    with pytest.raises(ConflictError):
        submission_submit(submission=draft, actor=submitter)
    CheckRun.objects.create(version=latest)  # a re-check that passes makes the latest version submittable
    put(latest.check_runs.latest("id"), CheckRun.Status.PASSED)
    submitted = submission_submit(submission=draft, actor=submitter)
    assert submitted.status == Submission.Status.SUBMITTED and submitted.submitted_version == latest
    assert AuditEvent.objects.filter(action="submission.submitted", object_id=str(draft.pk)).count() == 1


def test_only_the_organisations_submitters_transition(role_users, draft):
    _version_with_run(draft, role_users["submitter"], CheckRun.Status.PASSED)
    for outsider in ("reviewer", "auditor"):
        with pytest.raises(NotAllowedError):
            submission_submit(submission=draft, actor=role_users[outsider])
        with pytest.raises(NotAllowedError):
            submission_withdraw(submission=draft, actor=role_users[outsider], reason="no")


def test_withdraw_from_any_non_terminal_state_once(role_users, draft):
    submitter = role_users["submitter"]
    put(Submission.objects.filter(pk=draft.pk), Submission.Status.IN_REVIEW)
    draft.refresh_from_db()
    withdrawn = submission_withdraw(submission=draft, actor=submitter, reason="hardware recalled")
    assert withdrawn.status == Submission.Status.WITHDRAWN and withdrawn.status_reason == "hardware recalled"
    with pytest.raises(ConflictError) as again:
        submission_withdraw(submission=draft, actor=submitter, reason="again")
    assert again.value.code == "state-conflict"
    event = AuditEvent.objects.get(action="submission.withdrawn", object_id=str(draft.pk))
    assert event.actor == submitter and event.data["from"] == "in_review"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs two real connections")
def test_concurrent_transitions_have_one_winner(role_users, draft):
    """Submit and withdraw race on two connections: exactly one wins, the other gets state-conflict."""
    submitter = role_users["submitter"]
    _version_with_run(draft, submitter, CheckRun.Status.PASSED)
    barrier = threading.Barrier(2)
    outcomes = {}

    def run(name, action):
        from django.db import connections

        try:
            submission = Submission.objects.get(pk=draft.pk)  # both read "draft"
            barrier.wait()
            action(submission)
            outcomes[name] = "ok"
        except ConflictError as exc:
            outcomes[name] = exc.code
        finally:
            connections.close_all()

    threads = [
        threading.Thread(
            target=run, args=("submit", lambda s: submission_submit(submission=s, actor=submitter))
        ),
        threading.Thread(
            target=run,
            args=("withdraw", lambda s: submission_withdraw(submission=s, actor=submitter, reason="race")),
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes.values()) == ["ok", "state-conflict"], outcomes
    final = Submission.objects.get(pk=draft.pk).status
    winner = "submit" if outcomes["submit"] == "ok" else "withdraw"
    assert final == {"submit": "submitted", "withdraw": "withdrawn"}[winner]
    assert (
        AuditEvent.objects.filter(
            object_type="submissions.submission",
            object_id=str(draft.pk),
            action__in=["submission.submitted", "submission.withdrawn"],
        ).count()
        == 1
    )


def test_stuck_runs_are_requeued_then_failed_with_a_reason(role_users, draft, settings):
    settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S = 60
    settings.PORTAL_QUEUE_PREFIX = f"test-void-{uuid.uuid4().hex}."  # nobody consumes the re-queued start
    _, run = _version_with_run(draft, role_users["submitter"], CheckRun.Status.RUNNING)
    stale = timezone.now() - timedelta(minutes=5)
    CheckRun.objects.filter(pk=run.pk).update(heartbeat_at=stale, attempts=2, max_attempts=3)
    fresh_version, fresh = _version_with_run(draft, role_users["submitter"], CheckRun.Status.RUNNING)
    CheckRun.objects.filter(pk=fresh.pk).update(heartbeat_at=timezone.now())
    from portal.celery import app

    app.conf.task_always_eager, was = (
        False,
        app.conf.task_always_eager,
    )  # keep the re-queued start from running
    try:
        assert jobs_reconcile()["check_run"] == [run.pk]
    finally:
        app.conf.task_always_eager = was
    run.refresh_from_db()
    assert run.status == CheckRun.Status.QUEUED and run.attempts == 3
    assert run.error_message == "worker lost; re-queued (attempt 3 of 3)"
    put(CheckRun.objects.filter(pk=run.pk), CheckRun.Status.RUNNING, heartbeat_at=stale)
    assert jobs_reconcile()["check_run"] == [run.pk]
    run.refresh_from_db()
    assert run.status == CheckRun.Status.ERROR and run.error_message == "worker lost; failed after 3 attempts"
    assert run.finished_at is not None
    assert CheckRun.objects.get(pk=fresh.pk).status == CheckRun.Status.RUNNING  # a live run is left alone
    # The submitter reads the reason through the API.
    detail = api_client(role_users["submitter"]).get(f"/api/v1/check-runs/{run.pk}/").json()
    assert detail["error_message"] == "worker lost; failed after 3 attempts"


def test_the_organisation_rechecks_its_draft_then_only_oversight_and_history_is_kept(
    role_users, draft, settings
):
    settings.PORTAL_QUEUE_PREFIX = f"test-void-{uuid.uuid4().hex}."
    version, first = _version_with_run(draft, role_users["submitter"], CheckRun.Status.PASSED)
    with pytest.raises(NotAllowedError):  # a draft is its organisation's own
        check_run_requeue(version=version, actor=role_users["auditor"])
    own = check_run_requeue(version=version, actor=role_users["submitter"])  # the table's `recheck` row
    assert own.requested_by == role_users["submitter"]
    put(Submission.objects.filter(pk=draft.pk), Submission.Status.SUBMITTED)
    from portal.celery import app

    app.conf.task_always_eager, was = False, app.conf.task_always_eager
    try:
        response = api_client(role_users["chair"]).post(f"/api/v1/versions/{version.pk}/recheck/")
    finally:
        app.conf.task_always_eager = was
    assert response.status_code == 201, response.json()
    runs = list(version.check_runs.order_by("id").values_list("status", flat=True))
    assert runs == ["passed", "passed", "queued"]  # the organisation's ran in-process here
    assert AuditEvent.objects.filter(action="check.requeued").count() == 2
    denied = api_client(role_users["submitter"]).post(
        f"/api/v1/versions/{version.pk}/recheck/"
    )  # submitted now
    assert denied.status_code == 403 and denied.json()["code"] == "permission_denied"
    assert "chair or an auditor" in denied.json()["detail"]


# --- The table, role x action x state -----------------------------------------------------------
# Expectations written from DESIGN.md ("Lifecycle of a submission"), not read from review.lifecycle:
# who may take each action, from which states, and where it leads.
EXPECTED = {
    "submit": ({"submitter", "org_admin"}, {"draft"}, "submitted"),
    # Taken by review services (an acceptance, a decision, an attestation); no role below is an assigned reviewer.
    "start_review": ({"assigned_reviewer"}, {"submitted"}, "in_review"),
    "request_changes": ({"assigned_reviewer"}, {"in_review"}, "changes_requested"),
    "resubmit": ({"submitter", "org_admin"}, {"changes_requested"}, "in_review"),
    # The portal completes the review after the approval (or closed objection) that makes the quorum: the person's
    # own row was judged there; here it acts as no user ("anonymous", as the schedule below).
    "complete_review": ({"anonymous"}, {"in_review"}, "peer_reviewed"),
    "attest": ({"auditor"}, {"peer_reviewed"}, "audited"),
    # The schedule publishes what is due acting as no user (None, which this table calls "anonymous"); a web
    # request's anonymous user is AnonymousUser, never None, and is refused (test below).
    "publish": ({"submitter", "org_admin", "anonymous"}, {"audited"}, "published"),
    "withdraw": (
        {"submitter", "org_admin"},
        {"draft", "submitted", "in_review", "changes_requested", "peer_reviewed", "audited"},
        "withdrawn",
    ),
    "reject": (
        {"auditor", "chair"},
        {"submitted", "in_review", "changes_requested", "peer_reviewed"},
        "rejected",
    ),
}
# Rows no button takes: the review services take them as the consequence of another step.
AUTOMATIC = {"start_review", "request_changes", "complete_review", "attest", "publish"}
ROLES = [
    "anonymous",
    "submitter",
    "org_admin",
    "member",
    "other_org_submitter",
    "reviewer",
    "auditor",
    "chair",
]


def test_the_expectations_cover_every_row_of_the_table():
    """A new row (the review issue's assign, accept, attest...) needs its expectations written here."""
    assert set(lifecycle.TRANSITIONS_BY_ACTION) == set(EXPECTED)


@pytest.fixture
def people(role_users):
    """role_users plus an org admin and a reviewer of the submitting organisation, and another
    organisation's submitter."""
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    extra = {}
    for name, organisation, role in [
        ("org_admin", acme, "org_admin"),
        ("member", acme, "reviewer"),
        ("other_org_submitter", nimbus, "submitter"),
    ]:
        extra[name] = UserFactory(username=name)
        MembershipFactory(user=extra[name], organisation=organisation, role=role)
    return {**role_users, **extra}


def _submission(people, status: str, check_status=CheckRun.Status.PASSED) -> Submission:
    benchmark, system = make_catalog(people["organisations"]["acme"])
    submission = Submission.objects.create(
        organisation=system.organisation, system=system, benchmark=benchmark, created_by=people["submitter"]
    )
    version, _ = _version_with_run(submission, people["submitter"], check_status)
    # Past draft a version is frozen for review; after changes were requested the latest version is a new one.
    frozen = None if status in ("draft", "changes_requested") else version
    put(Submission.objects.filter(pk=submission.pk), status, submitted_version=frozen)
    submission.refresh_from_db()
    return submission


def _events(submission):
    return AuditEvent.objects.filter(object_type="submissions.submission", object_id=str(submission.pk))


@pytest.mark.django_db
@pytest.mark.parametrize("status", Submission.Status.values)
@pytest.mark.parametrize("action", [row.action for row in lifecycle.TRANSITIONS])
def test_each_row_is_allowed_for_its_actors_only_and_only_from_its_states(people, action, status):
    """Every role asks for the row's action on a submission in `status`: offered and taken by the row's actors from
    its states only, refused with the right code and nothing written otherwise. One submission per row and state;
    each role asks in a savepoint rolled back after it, so each finds the submission as it was."""
    submission = _submission(people, status)
    for role in ROLES:
        with transaction.atomic():
            submission.refresh_from_db()
            _one_role_asks(people, role, action, status, submission)
            transaction.set_rollback(True)


def _one_role_asks(people, role: str, action: str, status: str, submission: Submission) -> None:
    who, sources, target = EXPECTED[action]
    user = people[role]
    offered = [allowed.action for allowed in allowed_actions(user, submission)]
    assert (action in offered) == (role in who and status in sources and action not in AUTOMATIC), (
        role,
        offered,
    )
    if role not in who:
        with pytest.raises(NotAllowedError) as refused:
            submission_take(submission, action, user, reason="because")
        assert refused.value.code == "permission_denied", role
    elif status not in sources:
        with pytest.raises(ConflictError) as refused:
            submission_take(submission, action, user, reason="because")
        assert refused.value.code == "state-conflict", role
    elif action == "complete_review":  # the portal takes it, but only over a quorum of approvals
        with pytest.raises(ConflictError) as refused:
            submission_take(submission, action, user, reason="because")
        assert refused.value.code == "quorum-not-reached", role
    else:
        done = submission_take(submission, action, user, reason="because")
        assert Submission.objects.get(pk=submission.pk).status == done.status == target, role
        event = _events(submission).get()
        assert event.action == f"submission.{target}" and event.actor == user, role  # the real actor
        assert (event.data["from"], event.data["to"]) == (status, target), role
        return
    assert Submission.objects.get(pk=submission.pk).status == status, role
    assert not _events(submission).exists(), role


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["withdraw", "reject"])
def test_a_reason_is_required_where_the_row_says_so(people, action):
    actor = people["submitter"] if action == "withdraw" else people["chair"]
    submission = _submission(people, "submitted")
    with pytest.raises(ApplicationError) as refused:
        submission_take(submission, action, actor, reason="  ")
    assert refused.value.code == "invalid"
    done = submission_take(submission, action, actor, reason=" out of scope ")
    assert done.status_reason == "out of scope" and _events(submission).get().data["reason"] == "out of scope"


@pytest.mark.django_db
def test_an_unknown_action_is_refused(people):
    with pytest.raises(ApplicationError) as refused:
        submission_take(_submission(people, "draft"), "teleport", people["chair"])
    assert refused.value.code == "unknown-action"


@pytest.mark.django_db
def test_a_stale_submission_loses_the_compare_and_set(people):
    """The caller saw `submitted`; meanwhile the chair rejected it: the withdraw writes nothing."""
    seen = _submission(people, "submitted")
    submission_take(Submission.objects.get(pk=seen.pk), "reject", people["chair"], reason="x")
    with pytest.raises(ConflictError) as lost:
        submission_take(seen, "withdraw", people["submitter"], reason="y")
    assert lost.value.code == "state-conflict" and "changed meanwhile" in lost.value.detail
    assert lost.value.extra["status"] == "rejected"
    assert list(_events(seen).values_list("action", flat=True)) == ["submission.rejected"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs two real connections")
def test_two_rejects_racing_through_the_api_one_wins_one_gets_409(people):
    """Both requests pass the guards having read `submitted`, then race on the write: one 200, one 409, one
    audit event."""
    submission = _submission(people, "submitted")
    barrier = threading.Barrier(2)
    from portal.policy import Policy

    checked = Policy.require
    responses = {}

    def check_then_wait(*args, **kwargs):
        ready = checked(*args, **kwargs)
        barrier.wait(10)  # both have read the same status before either writes
        return ready

    def post(role):
        from django.db import connections

        try:
            responses[role] = api_client(people[role]).post(
                f"/api/v1/submissions/{submission.pk}/reject/", {"reason": f"by {role}"}, format="json"
            )
        finally:
            connections.close_all()

    with mock.patch.object(Policy, "require", check_then_wait):
        threads = [threading.Thread(target=post, args=(role,)) for role in ("auditor", "chair")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    codes = sorted(response.status_code for response in responses.values())
    assert codes == [200, 409], {role: r.content for role, r in responses.items()}
    loser = next(r for r in responses.values() if r.status_code == 409).json()
    assert loser["code"] == "state-conflict" and "changed meanwhile" in loser["detail"]
    winner = next(role for role, r in responses.items() if r.status_code == 200)
    event = _events(submission).get()
    assert event.action == "submission.rejected" and event.actor == people[winner]
    assert Submission.objects.get(pk=submission.pk).status_reason == f"by {winner}"


# --- The docs ------------------------------------------------------------------------------------


def test_docs_show_every_table_the_code_has():
    from portal.policy import registered_policies, tables_markdown

    POLICIES = registered_policies()

    doc = (Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    shown = doc.split(DOC_START, 1)[1].split(DOC_END, 1)[0].strip()
    assert shown == tables_markdown(), "run: python manage.py lifecycle_doc --write"
    submission = shown.split("### submission", 1)[1].split("\n### ", 1)[0]
    for row in lifecycle.TRANSITIONS:  # every row, with its states, in the words a reader sees
        line = next(line for line in submission.splitlines() if line.startswith(f"| `{row.action}`"))
        assert all(f"`{status}`" in line for status in EXPECTED[row.action][1])
    # every object with a status has its table, and each shows all of its model's states
    from leaderboard.models import (
        Challenge,
        Publication,
        PublicationRevision,
        RecheckCampaign,
        RecheckResult,
        SavedTender,
    )
    from previews.models import Preview
    from review.models import Comment, EvidenceRequest, ReviewAssignment, Waiver
    from spotchecks.models import SpotCheck
    from submissions.models import CheckRun, Upload

    expected = {
        "submission": Submission.Status.values,
        "check run": CheckRun.Status.values,
        "upload": Upload.Status.values,
        "assignment": ReviewAssignment.Status.values,
        "objection": Comment.ObjectionStatus.values,
        "waiver": Waiver.Status.values,
        "evidence request": EvidenceRequest.Status.values,
        "publication": Publication.Status.values,
        "revision": PublicationRevision.Status.values,
        "challenge": Challenge.Status.values,
        "preview": Preview.Status.values,
        "re-check": RecheckCampaign.Status.values,
        "re-check result": RecheckResult.Status.values,
        "spot-check": SpotCheck.Status.values,
        "tender": SavedTender.Status.values,
    }
    assert {policy.name for policy in POLICIES} == set(expected)
    for name, states in expected.items():
        section = shown.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        states_line = next(line for line in section.splitlines() if line.startswith("States: "))
        assert all(f"`{state}`" in states_line for state in states), (name, states_line)


# --- Buttons on the page and allowed_actions in the API ----------------------------------------


def _buttons(html: str) -> dict[str, bool]:
    """{action: enabled} of the lifecycle section of a submission page."""
    found = {}
    for action, tag in re.findall(r'data-action="([a-z_]+)"(.*?)(?:</form>|</details>)', html, re.S):
        found[action] = " disabled" not in tag
    return found


@pytest.mark.django_db
@pytest.mark.parametrize(
    "role, status, check_status, expected",
    [
        ("submitter", "draft", CheckRun.Status.PASSED, {"submit": True, "withdraw": True}),
        ("org_admin", "draft", CheckRun.Status.FAILED, {"submit": False, "withdraw": True}),
        ("submitter", "in_review", CheckRun.Status.PASSED, {"withdraw": True}),
        ("submitter", "withdrawn", CheckRun.Status.PASSED, {}),
        ("submitter", "published", CheckRun.Status.PASSED, {}),
        ("member", "draft", CheckRun.Status.PASSED, {}),
        ("auditor", "submitted", CheckRun.Status.PASSED, {"reject": True}),
        ("chair", "peer_reviewed", CheckRun.Status.PASSED, {"reject": True}),
        ("chair", "audited", CheckRun.Status.PASSED, {}),
    ],
)
def test_the_page_shows_exactly_the_allowed_buttons(client, people, role, status, check_status, expected):
    submission = _submission(people, status, check_status)
    client.force_login(people[role])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert _buttons(html) == expected
    assert ("Submit for review" in html) == ("submit" in expected)
    assert ('aria-label="Lifecycle"' in html) == bool(expected)


@pytest.mark.django_db
def test_a_disabled_submit_says_why(client, people):
    submission = _submission(people, "draft", CheckRun.Status.FAILED)
    client.force_login(people["submitter"])
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert re.search(
        r'<button type="submit" disabled aria-describedby="blocked-submit">Submit for review', html
    )
    assert "Submit needs a version whose latest check passed (version 1: failed)." in html


@pytest.mark.django_db
def test_the_chair_rejects_from_the_page_with_a_reason(client, people):
    submission = _submission(people, "in_review")
    client.force_login(people["chair"])
    refused = client.post(f"/submissions/{submission.pk}/reject/", {"reason": ""}, follow=True)
    assert "Not rejected: say why" in " ".join(str(m) for m in refused.context["messages"])
    done = client.post(
        f"/submissions/{submission.pk}/reject/", {"reason": "numbers do not add up"}, follow=True
    )
    assert f"Submission #{submission.pk} rejected." in " ".join(str(m) for m in done.context["messages"])
    submission.refresh_from_db()
    assert (submission.status, submission.status_reason) == ("rejected", "numbers do not add up")
    assert (
        "Reason given: numbers do not add up" in done.content.decode()
        and _buttons(done.content.decode()) == {}
    )


@pytest.mark.django_db
def test_the_api_lists_allowed_actions_on_a_submission(people):
    submission = _submission(people, "draft", CheckRun.Status.FAILED)
    body = api_client(people["submitter"]).get(f"/api/v1/submissions/{submission.pk}/").json()
    assert body["allowed_actions"] == [
        {
            "action": "submit",
            "label": "Submit for review",
            "to_status": "submitted",
            "reason_required": False,
            "enabled": False,
            "blocked": {
                "code": "check-not-passed",
                "detail": "Submit needs a version whose latest check passed (version 1: failed).",
            },
        },
        {
            "action": "withdraw",
            "label": "Withdraw",
            "to_status": "withdrawn",
            "reason_required": True,
            "enabled": True,
            "blocked": None,
        },
    ]
    put(Submission.objects.filter(pk=submission.pk), "submitted")
    auditor = api_client(people["auditor"])
    assert [
        a["action"] for a in auditor.get(f"/api/v1/submissions/{submission.pk}/").json()["allowed_actions"]
    ] == ["reject"]
    # The reply to an action carries the actions left (none, once rejected).
    rejected = auditor.post(
        f"/api/v1/submissions/{submission.pk}/reject/", {"reason": "scope"}, format="json"
    )
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    assert rejected.json()["allowed_actions"] == []


@pytest.mark.django_db
def test_the_api_refuses_actions_with_stable_codes(people):
    submission = _submission(people, "submitted")
    url = f"/api/v1/submissions/{submission.pk}/reject/"
    denied = api_client(people["submitter"]).post(url, {"reason": "x"}, format="json")
    assert denied.status_code == 403 and denied.json()["code"] == "permission_denied"
    no_reason = api_client(people["chair"]).post(url, {}, format="json")
    assert no_reason.status_code == 400
    submit = api_client(people["submitter"]).post(f"/api/v1/submissions/{submission.pk}/submit/")
    assert submit.status_code == 409 and submit.json()["code"] == "state-conflict"
    assert Submission.objects.get(pk=submission.pk).status == "submitted" and not _events(submission).exists()


@pytest.mark.django_db
def test_an_anonymous_web_user_is_not_the_schedule(people):
    from django.contrib.auth.models import AnonymousUser

    submission = _submission(people, "audited")
    with pytest.raises(NotAllowedError):
        submission_take(submission, "publish", AnonymousUser())
    assert Submission.objects.get(pk=submission.pk).status == "audited"


@pytest.mark.django_db
def test_resubmit_through_the_api_needs_a_new_version(people):
    from tests.factories import SubmissionVersionFactory

    submission = _submission(people, "in_review")
    put(Submission.objects.filter(pk=submission.pk), "changes_requested")
    client = api_client(people["submitter"])
    refused = client.post(f"/api/v1/submissions/{submission.pk}/resubmit/")
    assert refused.status_code == 409 and refused.json()["code"] == "no-new-version"
    assert (
        api_client(people["reviewer"]).post(f"/api/v1/submissions/{submission.pk}/resubmit/").status_code
        == 404
    )
    new = SubmissionVersionFactory(submission=submission, check_run="passed")
    done = client.post(f"/api/v1/submissions/{submission.pk}/resubmit/")
    assert done.status_code == 200 and done.json()["status"] == "in_review"
    submission.refresh_from_db()
    assert submission.submitted_version == new
