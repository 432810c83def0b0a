"""The auditor's pages per actor: the queue of peer-reviewed submissions, the attestation page (readiness, our
verdict beside the official one, waivers), attest / request evidence / reject / re-run the checks; waiver
decisions; nothing shown to whoever may not see the submission."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.errors import NotAllowedError
from review.models import Attestation, EvidenceRequest, Waiver
from submissions.checks.queue import check_run_requeue
from submissions.models import CheckRun, Submission
from tests.factories import (
    CheckRunFactory,
    MembershipFactory,
    SubmissionFactory,
    SystemFactory,
    WaiverFactory,
)

pytestmark = pytest.mark.django_db

HIDDEN_NAME = "Unreleased-Z9"


def _client(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def audit_world(role_users):
    acme = role_users["organisations"]["acme"]
    ready = SubmissionFactory(peer_reviewed=True, system=SystemFactory(organisation=acme, name="AX-Ready"))
    failing = SubmissionFactory(
        peer_reviewed=True, system=SystemFactory(organisation=acme, name="AX-Failing")
    )
    run = CheckRunFactory(
        version=failing.submitted_version, status="failed", findings=["accuracy-sample-count"]
    )
    CheckRun.objects.filter(pk=run.pk).update(
        report={
            "official": {
                "available": True,
                "version": "6.0.1",
                "ran": True,
                "passed": False,
                "errors": 2,
                "warnings": 0,
            }
        }
    )
    finding = run.findings.get()
    waiver = WaiverFactory(
        version=failing.submitted_version,
        rule=finding.rule,
        point=finding.point,
        file=finding.file,
        requested_by=role_users["submitter"],
    )
    hidden_draft = SubmissionFactory(draft=True, system=SystemFactory(organisation=acme, name=HIDDEN_NAME))
    in_review = SubmissionFactory(in_review=True, system=SystemFactory(organisation=acme, name="AX-InReview"))
    return {
        "ready": ready,
        "failing": failing,
        "waiver": waiver,
        "draft": hidden_draft,
        "in_review": in_review,
    }


def test_queue_lists_peer_reviewed_submissions_for_auditors_and_the_chair(role_users, audit_world):
    for role in ("auditor", "chair"):
        page = _client(role_users[role]).get("/review/audit/")
        assert page.status_code == 200
        body = page.content.decode()
        assert "AX-Ready" in body and "AX-Failing" in body
        assert "AX-InReview" not in body and HIDDEN_NAME not in body
        assert "granted waiver for each of 1 error finding" in body  # readiness of the failing one
    for role in ("submitter", "reviewer"):
        assert _client(role_users[role]).get("/review/audit/").status_code == 403
    assert _client(None).get("/review/audit/").status_code == 302


def test_attestation_page_shows_readiness_verdicts_and_waiver_forms(role_users, audit_world):
    failing = audit_world["failing"]
    body = _client(role_users["auditor"]).get(f"/review/audit/{failing.pk}/").content.decode()
    assert 'data-readiness="missing"' in body
    assert 'data-verdict="portal"' in body and 'data-verdict="official"' in body
    assert "Official checker <small>6.0.1</small>" in body and "Failed" in body
    assert "2 errors on the same files" in body  # the one vocabulary (submissions.verdicts), with why
    assert f"/review/waivers/{audit_world['waiver'].pk}/decide/" in body
    assert 'data-form="attest"' in body and 'data-form="evidence"' in body and 'data-form="reject"' in body
    ready = _client(role_users["auditor"]).get(f"/review/audit/{audit_world['ready'].pk}/").content.decode()
    assert 'data-readiness="ready"' in ready and "Not run" in ready
    assert (
        "PORTAL_CHECK_OFFICIAL" not in ready and "without the cross-check with the official checker" in ready
    )


def test_attestation_page_of_a_draft_is_404_and_refused_to_the_submitter(role_users, audit_world):
    assert _client(role_users["auditor"]).get(f"/review/audit/{audit_world['draft'].pk}/").status_code == 404
    assert _client(role_users["chair"]).get(f"/review/audit/{audit_world['draft'].pk}/").status_code == 404
    assert _client(role_users["reviewer"]).get(f"/review/audit/{audit_world['ready'].pk}/").status_code == 404
    assert (
        _client(role_users["submitter"]).get(f"/review/audit/{audit_world['ready'].pk}/").status_code == 403
    )


def test_auditor_attests_with_notes_only(role_users, audit_world):
    ready = audit_world["ready"]
    client = _client(role_users["auditor"])
    client.post(f"/review/audit/{ready.pk}/attest/", {"notes": "   "})
    ready.refresh_from_db()
    assert ready.status == "peer_reviewed"
    response = client.post(
        f"/review/audit/{ready.pk}/attest/", {"notes": "Re-ran the checks; official agrees."}, follow=True
    )
    assert "is audited" in response.content.decode()
    ready.refresh_from_db()
    assert ready.status == "audited"
    assert Attestation.objects.get(submission=ready).notes == "Re-ran the checks; official agrees."


def test_attest_is_refused_while_a_waiver_is_missing_and_for_the_chair(role_users, audit_world):
    failing = audit_world["failing"]
    response = _client(role_users["auditor"]).post(
        f"/review/audit/{failing.pk}/attest/", {"notes": "ok"}, follow=True
    )
    assert "Not attested" in response.content.decode()
    response = _client(role_users["chair"]).post(
        f"/review/audit/{audit_world['ready'].pk}/attest/", {"notes": "ok"}, follow=True
    )
    assert "Not attested" in response.content.decode()
    assert Submission.objects.get(pk=audit_world["ready"].pk).status == "peer_reviewed"


def test_granting_the_waiver_makes_it_ready(role_users, audit_world):
    failing, waiver = audit_world["failing"], audit_world["waiver"]
    _client(role_users["auditor"]).post(
        f"/review/waivers/{waiver.pk}/decide/",
        {"decision": "grant", "reason": "Short demo run.", "next": f"/review/audit/{failing.pk}/"},
    )
    waiver.refresh_from_db()
    assert waiver.status == "granted" and waiver.decided_by == role_users["auditor"]
    body = _client(role_users["auditor"]).get(f"/review/audit/{failing.pk}/").content.decode()
    assert 'data-readiness="ready"' in body


def test_waiver_decisions_are_for_auditors_and_the_chair(role_users, audit_world):
    waiver = audit_world["waiver"]
    response = _client(role_users["submitter"]).post(
        f"/review/waivers/{waiver.pk}/decide/", {"decision": "grant", "reason": "mine"}
    )
    assert response.status_code == 403
    assert (
        _client(role_users["reviewer"])
        .post(f"/review/waivers/{waiver.pk}/decide/", {"decision": "grant", "reason": "x"})
        .status_code
        == 404
    )
    assert Waiver.objects.get(pk=waiver.pk).status == "requested"


def test_auditor_waives_a_finding_directly(role_users, audit_world):
    failing = audit_world["failing"]
    audit_world["waiver"].delete()
    finding = CheckRun.objects.filter(version=failing.submitted_version).latest("pk").findings.get()
    _client(role_users["auditor"]).post(
        f"/review/audit/{failing.pk}/waive/",
        {"rule": finding.rule, "point": finding.point, "file": finding.file, "reason": "Seen in the audit."},
    )
    waiver = Waiver.objects.get(version=failing.submitted_version)
    assert waiver.status == "granted" and waiver.requested_by is None


def test_evidence_request_with_question_and_deadline(role_users, audit_world):
    ready = audit_world["ready"]
    client = _client(role_users["auditor"])
    client.post(f"/review/audit/{ready.pk}/evidence/", {"question": ""})
    assert not EvidenceRequest.objects.exists()
    client.post(f"/review/audit/{ready.pk}/evidence/", {"question": "Send the power log.", "due_days": "7"})
    request = EvidenceRequest.objects.get()
    assert request.question == "Send the power log." and (request.due_at - request.created_at).days in (6, 7)
    body = client.get(f"/review/audit/{ready.pk}/").content.decode()
    assert "open evidence request" in body


def test_reject_needs_a_reason(role_users, audit_world):
    ready = audit_world["ready"]
    client = _client(role_users["auditor"])
    client.post(f"/review/audit/{ready.pk}/reject/", {"reason": ""})
    assert Submission.objects.get(pk=ready.pk).status == "peer_reviewed"
    client.post(f"/review/audit/{ready.pk}/reject/", {"reason": "Points do not reproduce."})
    ready.refresh_from_db()
    assert ready.status == "rejected" and ready.status_reason == "Points do not reproduce."


def test_auditor_reruns_the_checks_on_the_frozen_version(role_users, audit_world):
    ready = audit_world["ready"]
    before = CheckRun.objects.filter(version=ready.submitted_version).count()
    response = _client(role_users["auditor"]).post(f"/review/audit/{ready.pk}/recheck/", follow=True)
    assert "queued for a new check" in response.content.decode()
    assert CheckRun.objects.filter(version=ready.submitted_version).count() == before + 1


def test_check_run_requeue_allows_auditors_on_submitted_versions_only(role_users, audit_world):
    run = check_run_requeue(version=audit_world["ready"].submitted_version, actor=role_users["auditor"])
    assert run.version_id == audit_world["ready"].submitted_version_id
    draft_version = CheckRunFactory(version__submission=audit_world["draft"], status="passed").version
    with pytest.raises(NotAllowedError):
        check_run_requeue(version=draft_version, actor=role_users["auditor"])
    with pytest.raises(NotAllowedError):
        check_run_requeue(version=audit_world["ready"].submitted_version, actor=role_users["submitter"])
    org_admin = MembershipFactory(organisation=role_users["organisations"]["acme"], role="org_admin").user
    with pytest.raises(NotAllowedError):
        check_run_requeue(version=audit_world["ready"].submitted_version, actor=org_admin)
    assert check_run_requeue(version=draft_version, actor=role_users["chair"])  # the chair re-checks anything
