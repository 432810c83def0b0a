"""The auditor's writes: attestations and evidence requests with their answers."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.selectors import (
    chairs,
)
from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError
from review.lifecycle import (
    EVIDENCE_REQUEST,
    SUBMISSION,
)
from review.models import Attestation, EvidenceRequest
from review.services.common import submission_label, submission_locked, submission_submitters, submission_url
from submissions.models import Submission


@transaction.atomic
def attestation_record(*, submission: Submission, actor, notes: str) -> Attestation:
    """An auditor attests the peer-reviewed version (notes required): peer_reviewed -> audited."""
    submission = submission_locked(submission)
    SUBMISSION.take(actor, submission, "attest", reason=notes)
    attestation = Attestation.objects.create(
        submission=submission, version=submission.submitted_version, auditor=actor, notes=notes.strip()
    )
    notify(
        users=submission_submitters(submission) + chairs(),
        kind="audit.attested",
        submission_id=submission.pk,
        subject=f"{submission_label(submission)} is audited",
        body="Choose when to publish it.",
        url=f"/submissions/{submission.pk}/",
    )
    return attestation


@transaction.atomic
def evidence_request(
    *, submission: Submission, actor, question: str, due_days: int | None = None
) -> EvidenceRequest:
    """An auditor asks the submitter for evidence, with a deadline; attestation waits for the answer."""
    submission = submission_locked(submission)
    SUBMISSION.require(actor, submission, "request_evidence")
    if not (question or "").strip():
        raise ApplicationError("Ask a question the submitter can answer.", code="invalid")
    request = EvidenceRequest.objects.create(
        submission=submission,
        version=submission.submitted_version,
        auditor=actor,
        question=question.strip(),
        due_at=timezone.now() + timedelta(days=due_days or settings.PORTAL_EVIDENCE_DAYS),
    )
    audit_event_record(
        actor=actor,
        action="audit.evidence_requested",
        obj=request,
        data={"submission": submission.pk, "due_at": request.due_at.isoformat()},
    )
    notify(
        users=submission_submitters(submission),
        kind="audit.evidence_requested",
        submission_id=submission.pk,
        subject=f"An auditor asks for evidence on {submission_label(submission)}",
        body=f"{question.strip()}\n\nAnswer by {request.due_at:%Y-%m-%d}.",
        url=f"/submissions/{submission.pk}/",
    )
    return request


@transaction.atomic
def evidence_answer(*, request: EvidenceRequest, actor, answer: str) -> EvidenceRequest:
    submission = request.submission
    if not (answer or "").strip():
        EVIDENCE_REQUEST.require(actor, request, "answer")  # who and when first: then what is missing
        raise ApplicationError(
            "An answer needs a text (attach files in the thread, or upload a new version).", code="invalid"
        )
    EVIDENCE_REQUEST.take(
        actor,
        request,
        "answer",
        fields={"answer": answer.strip(), "answered_by": actor, "answered_at": timezone.now()},
        data={"submission": submission.pk},
    )
    notify(
        users=[request.auditor],
        kind="audit.evidence_answered",
        submission_id=submission.pk,
        subject=f"Evidence answered on {submission_label(submission)}",
        body=answer.strip()[:2000],
        url=submission_url(submission),
    )
    return request
