"""Waivers of error findings: requested (one or a group), decided, or granted directly by an auditor."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.selectors import (
    auditors,
    chairs,
)
from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError
from review.lifecycle import (
    SUBMISSION,
    WAIVER,
)
from review.models import Waiver
from review.services.common import submission_label, submission_submitters, submission_url
from submissions.models import Finding, Submission, SubmissionVersion
from submissions.selectors import check_run_latest


@transaction.atomic
def waiver_request(
    *,
    version: SubmissionVersion,
    actor,
    rule: str,
    point: str = "",
    file: str = "",
    reason: str,
    notify_deciders: bool = True,
) -> Waiver:
    """The submitter asks to waive a failing finding of one version, saying why the rule does not fit
    (`notify_deciders=False`: the caller tells the deciders once for a group, waivers_request_group)."""
    submission = Submission.objects.select_for_update().get(pk=version.submission_id)
    # the submitter, while a waiver can still matter (never once peer review is over: audited, published...)
    SUBMISSION.require(actor, submission, "request_waiver")
    if not (reason or "").strip():
        raise ApplicationError("Say why this finding should be waived.", code="invalid")
    check_run = check_run_latest(version)
    if (
        check_run is None
        or not Finding.objects.filter(
            check_run=check_run, severity="error", rule=rule, point=point or "", file=file or ""
        ).exists()
    ):
        raise ApplicationError(
            f"Version {version.number}'s latest check has no error finding {rule} at that point and file.",
            code="finding-not-found",
        )
    waiver, created = Waiver.objects.get_or_create(
        version=version,
        rule=rule,
        point=point or "",
        file=file or "",
        defaults={"request_reason": reason.strip(), "requested_by": actor},
    )
    if not created:
        raise ConflictError(f"A waiver of {rule} here is already {waiver.status}.", code="waiver-exists")
    audit_event_record(
        actor=actor,
        action="waiver.requested",
        obj=waiver,
        data={"submission": submission.pk, "version": version.number, "rule": rule, "point": point},
    )
    if notify_deciders:
        _deciders_told(submission, subject=f"Waiver of {rule} asked for", reason=reason)
    return waiver


def _deciders_told(submission: Submission, *, subject: str, reason: str) -> None:
    """The chair and the auditors hear of a waiver request while someone is there to decide it."""
    if SUBMISSION.state_allows(submission, "waive"):
        notify(
            users=chairs() + auditors(),
            kind="waiver.requested",
            submission_id=submission.pk,
            subject=f"{subject} on {submission_label(submission)}",
            body=reason.strip(),
            url=submission_url(submission),
        )


@transaction.atomic
def waiver_decide(
    *, waiver: Waiver, actor, grant: bool, reason: str, notify_submitters: bool = True
) -> Waiver:
    """The chair or an auditor grants or refuses a waiver, with a reason; a granted finding counts as waived
    (`notify_submitters=False`: the caller tells them once for a group, waivers_decide_group)."""
    if not (reason or "").strip():
        raise ApplicationError("Say why the waiver is granted or refused.", code="invalid")
    waiver = Waiver.objects.select_related("version__submission").get(pk=waiver.pk)
    submission = waiver.version.submission
    WAIVER.take(
        actor,
        waiver,
        "grant" if grant else "refuse",
        reason=reason,
        fields={"decided_by": actor, "decision_reason": reason.strip(), "decided_at": timezone.now()},
        data={"submission": submission.pk, "rule": waiver.rule, "point": waiver.point},
    )
    status = waiver.status
    if notify_submitters:
        notify(
            users=submission_submitters(submission),
            kind=f"waiver.{status}",
            submission_id=submission.pk,
            subject=f"Waiver of {waiver.rule} {status} on {submission_label(submission)}",
            body=reason.strip(),
            url=f"/submissions/{submission.pk}/",
        )
    return waiver


@transaction.atomic
def waivers_request_group(
    *, version: SubmissionVersion, actor, rule: str, reason: str, points: list[str] | None = None
) -> list[Waiver]:
    """One justification for every error finding of `rule` in the version's latest check that has no waiver yet
    (or only those at `points`): one waiver each (each audited, each decided on its own or as a group), and one
    notification to the deciders for the lot. Nothing is written when one of them is refused."""
    check_run = check_run_latest(version)
    findings = (
        Finding.objects.filter(check_run=check_run, severity="error", rule=rule).order_by(
            "point", "file", "pk"
        )
        if check_run is not None
        else Finding.objects.none()
    )
    if points is not None:
        findings = findings.filter(point__in=points)
    taken = set(Waiver.objects.filter(version=version, rule=rule).values_list("point", "file"))
    wanted = list(
        dict.fromkeys(
            (f.point or "", f.file or "") for f in findings if (f.point or "", f.file or "") not in taken
        )
    )
    if not wanted:
        raise ApplicationError(
            f"Version {version.number}'s latest check has no error finding {rule} without a waiver.",
            code="finding-not-found",
        )
    waivers = [
        waiver_request(
            version=version,
            actor=actor,
            rule=rule,
            point=point,
            file=file,
            reason=reason,
            notify_deciders=False,
        )
        for point, file in wanted
    ]
    _deciders_told(version.submission, subject=f"{len(waivers)} waivers of {rule} asked for", reason=reason)
    return waivers


@transaction.atomic
def waivers_decide_group(*, waivers: list[Waiver], actor, grant: bool, reason: str) -> list[Waiver]:
    """The chair or an auditor decides several requested waivers at once with one reason (each audited, all or
    none written); the submitters get one notification per submission and rule."""
    if not waivers:
        raise ApplicationError("Choose the waivers to decide.", code="invalid")
    decided = [
        waiver_decide(waiver=waiver, actor=actor, grant=grant, reason=reason, notify_submitters=False)
        for waiver in waivers
    ]
    groups: dict[tuple[int, str], list[Waiver]] = {}
    for waiver in decided:
        groups.setdefault((waiver.version.submission_id, waiver.rule), []).append(waiver)
    for (_, rule), group in groups.items():
        submission = group[0].version.submission
        status = group[0].status
        notify(
            users=submission_submitters(submission),
            kind=f"waiver.{status}",
            submission_id=submission.pk,
            subject=f"{len(group)} waiver{'s' if len(group) != 1 else ''} of {rule} {status} on "
            f"{submission_label(submission)}",
            body=reason.strip(),
            url=f"/submissions/{submission.pk}/",
        )
    return decided


@transaction.atomic
def waiver_grant_directly(
    *, version: SubmissionVersion, actor, rule: str, point: str = "", file: str = "", reason: str
) -> Waiver:
    """The chair or an auditor waives a failing finding nobody asked about (e.g. seen during the audit)."""
    SUBMISSION.require(actor, version.submission, "waive")
    check_run = check_run_latest(version)
    if (
        check_run is None
        or not Finding.objects.filter(
            check_run=check_run, severity="error", rule=rule, point=point or "", file=file or ""
        ).exists()
    ):
        raise ApplicationError(
            f"Version {version.number} has no error finding {rule} there.", code="finding-not-found"
        )
    waiver, _ = Waiver.objects.get_or_create(version=version, rule=rule, point=point or "", file=file or "")
    return waiver_decide(waiver=waiver, actor=actor, grant=True, reason=reason)
