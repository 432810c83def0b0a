"""The API of the audit and the chair per actor: queue, attest, evidence, waivers, assignment, conflicts; errors
as {"code", "detail"}; Idempotency-Key replays; nothing of a hidden submission."""

from __future__ import annotations

import pytest

from review.models import Conflict, EvidenceRequest, ReviewAssignment, Waiver
from submissions.models import CheckRun
from tests.factories import (
    CheckRunFactory,
    MembershipFactory,
    OrganisationFactory,
    SubmissionFactory,
    SystemFactory,
    UserFactory,
)
from tests.submissions.support import api_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(role_users):
    acme = role_users["organisations"]["acme"]
    ready = SubmissionFactory(peer_reviewed=True, system=SystemFactory(organisation=acme, name="AX-Ready"))
    failing = SubmissionFactory(
        peer_reviewed=True, system=SystemFactory(organisation=acme, name="AX-Failing")
    )
    run = CheckRunFactory(
        version=failing.submitted_version, status="failed", findings=["accuracy-sample-count"]
    )
    CheckRun.objects.filter(pk=run.pk).update(
        report={"official": {"available": True, "ran": True, "passed": False}}
    )
    draft = SubmissionFactory(draft=True, system=SystemFactory(organisation=acme, name="Unreleased-Z9"))
    submitted = SubmissionFactory(
        submitted=True, system=SystemFactory(organisation=acme, name="AX-Submitted")
    )
    return {
        "ready": ready,
        "failing": failing,
        "finding": run.findings.get(),
        "draft": draft,
        "submitted": submitted,
    }


def test_audit_queue_for_overseers_only(role_users, world):
    rows = api_client(role_users["auditor"]).get("/api/v1/audit/").json()["results"]
    assert {row["id"] for row in rows} == {world["ready"].pk, world["failing"].pk}
    failing = next(row for row in rows if row["id"] == world["failing"].pk)
    assert failing["ready"] is False and failing["missing"]
    refused = api_client(role_users["submitter"]).get("/api/v1/audit/")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    detail = api_client(role_users["chair"]).get(f"/api/v1/audit/{world['failing'].pk}/").json()
    assert detail["official"] == {"available": True, "ran": True, "passed": False}
    assert detail["check"]["status"] == "failed"
    hidden = api_client(role_users["auditor"]).get(f"/api/v1/audit/{world['draft'].pk}/")
    assert hidden.status_code == 404 and "Unreleased-Z9" not in hidden.content.decode()


def test_attest_needs_notes_readiness_and_replays_with_the_same_key(role_users, world):
    client = api_client(role_users["auditor"])
    missing = client.post(f"/api/v1/audit/{world['ready'].pk}/attest/", {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "invalid"
    not_ready = client.post(f"/api/v1/audit/{world['failing'].pk}/attest/", {"notes": "ok"}, format="json")
    assert not_ready.status_code == 409 and not_ready.json()["code"] == "not-ready-for-audit"
    headers = {"HTTP_IDEMPOTENCY_KEY": "attest-1"}
    first = client.post(
        f"/api/v1/audit/{world['ready'].pk}/attest/", {"notes": "ok"}, format="json", **headers
    )
    again = client.post(
        f"/api/v1/audit/{world['ready'].pk}/attest/", {"notes": "ok"}, format="json", **headers
    )
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true" and first.json()["status"] == "audited"
    late = client.post(f"/api/v1/audit/{world['ready'].pk}/attest/", {"notes": "ok"}, format="json")
    assert late.status_code == 409


def test_evidence_request_and_answer(role_users, world):
    asked = api_client(role_users["auditor"]).post(
        f"/api/v1/audit/{world['ready'].pk}/request-evidence/",
        {"question": "Power log?", "due_days": 3},
        format="json",
    )
    assert asked.status_code == 201
    evidence_id = asked.json()["id"]
    outsider = UserFactory()
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    assert (
        api_client(outsider)
        .post(f"/api/v1/evidence-requests/{evidence_id}/answer/", {"answer": "x"}, format="json")
        .status_code
        == 404
    )
    answered = api_client(role_users["submitter"]).post(
        f"/api/v1/evidence-requests/{evidence_id}/answer/",
        {"answer": "Attached in the thread."},
        format="json",
    )
    assert answered.status_code == 200 and answered.json()["status"] == "answered"
    assert EvidenceRequest.objects.get().answered_by == role_users["submitter"]
    submitter_cannot_ask = api_client(role_users["submitter"]).post(
        f"/api/v1/audit/{world['ready'].pk}/request-evidence/", {"question": "?"}, format="json"
    )
    assert submitter_cannot_ask.status_code == 403


def test_waiver_request_then_decide(role_users, world):
    finding, version = world["finding"], world["failing"].submitted_version
    body = {
        "version": version.pk,
        "rule": finding.rule,
        "point": finding.point,
        "file": finding.file,
        "reason": "short run",
    }
    created = api_client(role_users["submitter"]).post("/api/v1/waivers/", body, format="json")
    assert created.status_code == 201, created.json()
    waiver_id = created.json()["id"]
    duplicate = api_client(role_users["submitter"]).post("/api/v1/waivers/", body, format="json")
    assert duplicate.status_code == 409 and duplicate.json()["code"] == "waiver-exists"
    refused = api_client(role_users["submitter"]).post(
        f"/api/v1/waivers/{waiver_id}/decide/", {"grant": True, "reason": "mine"}, format="json"
    )
    assert refused.status_code == 403
    granted = api_client(role_users["auditor"]).post(
        f"/api/v1/waivers/{waiver_id}/decide/", {"grant": True, "reason": "fits"}, format="json"
    )
    assert granted.status_code == 200 and granted.json()["status"] == "granted"
    again = api_client(role_users["chair"]).post(
        f"/api/v1/waivers/{waiver_id}/decide/", {"grant": False, "reason": "no"}, format="json"
    )
    assert again.status_code == 409 and again.json()["code"] == "state-conflict"
    assert (
        api_client(role_users["auditor"]).get(f"/api/v1/audit/{world['failing'].pk}/").json()["ready"] is True
    )


def test_waiver_grant_directly_by_the_chair(role_users, world):
    finding, version = world["finding"], world["failing"].submitted_version
    body = {
        "version": version.pk,
        "rule": finding.rule,
        "point": finding.point,
        "file": finding.file,
        "reason": "ok",
    }
    assert (
        api_client(role_users["submitter"]).post("/api/v1/waivers/grant/", body, format="json").status_code
        == 403
    )
    response = api_client(role_users["chair"]).post("/api/v1/waivers/grant/", body, format="json")
    assert response.status_code == 201 and Waiver.objects.get().status == "granted"
    wrong = api_client(role_users["chair"]).post(
        "/api/v1/waivers/grant/", {**body, "rule": "nope"}, format="json"
    )
    assert wrong.status_code == 400 and wrong.json()["code"] == "finding-not-found"


def test_chair_assigns_draws_and_releases(role_users, world):
    submitted = world["submitted"]
    chair = api_client(role_users["chair"])
    other_reviewer = UserFactory(username="other-reviewer")
    MembershipFactory(user=other_reviewer, organisation=OrganisationFactory(), role="reviewer")
    assigned = chair.post(
        "/api/v1/chair/assignments/", {"submission": submitted.pk, "reviewer": "reviewer"}, format="json"
    )
    assert assigned.status_code == 201 and assigned.json()["reviewer"] == "reviewer"
    twice = chair.post(
        "/api/v1/chair/assignments/", {"submission": submitted.pk, "reviewer": "reviewer"}, format="json"
    )
    assert twice.status_code == 409 and twice.json()["code"] == "already-assigned"
    own = chair.post(
        "/api/v1/chair/assignments/", {"submission": submitted.pk, "reviewer": "submitter"}, format="json"
    )
    assert own.status_code == 400 and own.json()["code"] == "reviewer-not-eligible"
    drawn = chair.post(
        "/api/v1/chair/assignments/draw/", {"submission": submitted.pk, "count": 1}, format="json"
    )
    assert drawn.status_code == 201 and [row["reviewer"] for row in drawn.json()] == ["other-reviewer"]
    auditor = api_client(role_users["auditor"]).post(
        "/api/v1/chair/assignments/draw/", {"submission": submitted.pk}, format="json"
    )
    assert auditor.status_code == 403
    hidden = chair.post("/api/v1/chair/assignments/draw/", {"submission": world["draft"].pk}, format="json")
    assert hidden.status_code == 404
    assignment_id = assigned.json()["id"]
    released = chair.post(
        f"/api/v1/chair/assignments/{assignment_id}/release/", {"reason": "busy"}, format="json"
    )
    assert released.status_code == 200 and released.json()["status"] == "released"
    assert ReviewAssignment.objects.get(pk=assignment_id).reason == "busy"
    board = chair.get("/api/v1/chair/dashboard/").json()
    assert world["ready"].pk in board["awaiting_audit"]
    assert api_client(role_users["auditor"]).get("/api/v1/chair/dashboard/").status_code == 403


def test_conflicts_chair_pinned_org_admin_own(role_users, world):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    third = OrganisationFactory(slug="third")
    admin = UserFactory(username="nimbus-admin")
    MembershipFactory(user=admin, organisation=nimbus, role="org_admin")
    pinned = api_client(role_users["chair"]).post(
        "/api/v1/conflicts/",
        {"organisation": acme.slug, "other": third.slug, "kind": "partner", "reason": "JV"},
        format="json",
    )
    assert pinned.status_code == 201 and pinned.json()["pinned"] is True
    own = api_client(admin).post(
        "/api/v1/conflicts/",
        {"organisation": nimbus.slug, "other": acme.slug, "kind": "competitor", "reason": "rivals"},
        format="json",
    )
    assert own.status_code == 201 and own.json()["pinned"] is False
    for_other = api_client(admin).post(
        "/api/v1/conflicts/",
        {"organisation": acme.slug, "other": nimbus.slug, "kind": "other", "reason": "x"},
        format="json",
    )
    assert for_other.status_code == 403
    assert {row["id"] for row in api_client(admin).get("/api/v1/conflicts/").json()["results"]} == {
        own.json()["id"]
    }
    assert api_client(admin).delete(f"/api/v1/conflicts/{pinned.json()['id']}/").status_code == 404
    admin_acme = UserFactory()
    MembershipFactory(user=admin_acme, organisation=acme, role="org_admin")
    cannot = api_client(admin_acme).delete(f"/api/v1/conflicts/{pinned.json()['id']}/")
    assert cannot.status_code == 403 and Conflict.objects.filter(pk=pinned.json()["id"]).exists()
    assert api_client(admin).delete(f"/api/v1/conflicts/{own.json()['id']}/").status_code == 204
    assert (
        api_client(role_users["chair"]).delete(f"/api/v1/conflicts/{pinned.json()['id']}/").status_code == 204
    )
