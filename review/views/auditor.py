"""HTML pages of the audit: the auditor's queue of peer-reviewed submissions and the attestation page (readiness,
our verdict beside the official checker's, waivers, evidence requests; attest, request evidence, reject, re-run
the checks on the frozen version). Waiver decisions are shared with the chair's pages.

A submission is looked up through access.visibility first (404 for what the user may not see); the pages are
for auditors and the chair (403 for anyone else who may see the submission). Refusals of the services and lost
races become messages on the page.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import get_visible_or_404, reviews_of
from leaderboard.views.panels import extension_delta
from portal.errors import ApplicationError
from portal.pages import ReasonForm
from review import lifecycle, selectors
from review.models import EvidenceRequest, Waiver
from review.services.attestations import attestation_record, evidence_request
from review.services.waivers import waiver_grant_directly, waivers_decide_group
from spotchecks.views.panels import audit_panel_context
from submissions.checks.queue import check_run_requeue
from submissions.models import Submission
from submissions.selectors import check_run_findings, check_run_latest, check_run_official


class AttestForm(forms.Form):
    notes = forms.CharField(max_length=10000, strip=True)


class EvidenceForm(forms.Form):
    question = forms.CharField(max_length=5000, strip=True)
    due_days = forms.IntegerField(min_value=1, max_value=60, required=False)


class WaiverGrantForm(forms.Form):
    rule = forms.CharField(max_length=100)
    point = forms.CharField(max_length=200, required=False)
    file = forms.CharField(max_length=2000, required=False)
    reason = forms.CharField(max_length=2000, strip=True)


def require_oversight(user) -> None:
    if not can(user, "oversee"):
        raise PermissionDenied("Only auditors and the chair audit submissions.")


def overseen_submission(request, pk: int) -> Submission:
    """The submission if the user may see it (else 404), for auditors and the chair only (else 403)."""
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    require_oversight(request.user)
    return submission


def back_to(request, default: str):
    """Redirect to the form's `next` (a page of this site), else to `default`."""
    target = request.POST.get("next", "")
    # Only a path: a bare word would be looked up as a view name (NoReverseMatch, a 500).
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect(default)


def _findings_with_waivers(version, check_run) -> list[dict]:
    """The run's error findings, each with the waiver of that (rule, point, file) if there is one."""
    if check_run is None:
        return []
    waivers = {(w.rule, w.point, w.file): w for w in selectors.waivers_of(version)}
    return [
        {"finding": finding, "waiver": waivers.get((finding.rule, finding.point or "", finding.file or ""))}
        for finding in check_run_findings(check_run).filter(severity="error")
    ]


def verdicts(check_run) -> dict:
    """Our verdict beside the official checker's (CheckRun.report["official"]), for the same run."""
    if check_run is None:
        return {"ours": None, "official": None, "disagreements": 0}
    counts = {"error": 0, "warning": 0}
    for severity in check_run.findings.filter(severity__in=counts).values_list("severity", flat=True):
        counts[severity] += 1
    words = selectors.check_verdict(check_run.version_id, check_run, official=True)
    official = words.pop("official")
    kept = check_run_official(check_run) or {}
    return {
        "ours": {**words, "errors": counts["error"], "warnings": counts["warning"]},
        "official": {**official, "warnings": kept.get("warnings") if kept.get("ran") else None},
        "disagreements": check_run.findings.filter(rule="official-checker-disagreement").count(),
    }


@login_required
@require_GET
def audit_queue(request):
    require_oversight(request.user)
    rows = []
    for submission in selectors.audit_queue():
        readiness = selectors.attestation_readiness(submission)
        rows.append(
            {
                "submission": submission,
                "check_run": check_run_latest(submission.submitted_version)
                if submission.submitted_version
                else None,
                "readiness": readiness,
            }
        )
    selectors.check_verdicts_prime([row["check_run"] for row in rows])  # the dashboard's words, two queries
    waivers = selectors.waivers_awaiting_decision()
    return render(
        request,
        "review/audit_queue.html",
        {"rows": rows, "waivers": waivers, "waiver_groups": selectors.waiver_groups(waivers)},
    )


@login_required
@require_GET
def attestation(request, pk: int):
    submission = overseen_submission(request, pk)
    version = submission.submitted_version
    check_run = check_run_latest(version) if version is not None else None
    shown = verdicts(check_run)
    context = {
        "submission": submission,
        "version": version,
        "check_run": check_run,
        "verdicts": shown,
        "waived_errors": (shown["ours"] or {}).get("waived", 0),  # the badge's "passed with N waived"
        "readiness": selectors.attestation_readiness(submission),
        "findings": _findings_with_waivers(version, check_run) if version is not None else [],
        "waivers": list(selectors.waivers_of(version)) if version is not None else [],
        "evidence_requests": list(
            EvidenceRequest.objects.filter(submission=submission).select_related("auditor", "answered_by")
        ),
        "open_objections": list(selectors.open_objections(submission).select_related("author")),
        "reviews": list(reviews_of(request.user, submission)),
        "attestations": list(submission.attestations.select_related("auditor")),
        "is_auditor": lifecycle.allowed(request.user, submission, "request_evidence")
        or can(request.user, "audit"),
        "is_chair": can(request.user, "chair"),
        "peer_reviewed": lifecycle.SUBMISSION.state_allows(submission, "attest"),
        "extension": extension_delta(submission),
        "can_reject": any(
            a.action == "reject" and a.enabled for a in lifecycle.allowed_actions(request.user, submission)
        ),
        "evidence_days": settings.PORTAL_EVIDENCE_DAYS,
        "now": timezone.now(),
        **audit_panel_context(request.user, submission),
    }
    return render(request, "review/attestation.html", context)


def _page(submission: Submission) -> str:
    return reverse("review:attestation", args=[submission.pk])


@login_required
@require_POST
def attest(request, pk: int):
    submission = overseen_submission(request, pk)
    form = AttestForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not attested: write what you checked (the notes are required).")
        return redirect(_page(submission))
    try:
        attestation_record(submission=submission, actor=request.user, notes=form.cleaned_data["notes"])
    except ApplicationError as exc:
        messages.error(request, f"Not attested: {exc.detail}")
    else:
        messages.success(request, f"Submission #{submission.pk} is audited.")
    return redirect(_page(submission))


@login_required
@require_POST
def evidence(request, pk: int):
    submission = overseen_submission(request, pk)
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        messages.error(request, "No evidence requested: ask a question (and a deadline of 1 to 60 days).")
        return redirect(_page(submission))
    try:
        request_row = evidence_request(
            submission=submission,
            actor=request.user,
            question=form.cleaned_data["question"],
            due_days=form.cleaned_data.get("due_days"),
        )
    except ApplicationError as exc:
        messages.error(request, f"No evidence requested: {exc.detail}")
    else:
        messages.success(
            request, f"Evidence requested; the submitter answers by {request_row.due_at:%Y-%m-%d}."
        )
    return redirect(_page(submission))


@login_required
@require_POST
def reject(request, pk: int):
    submission = overseen_submission(request, pk)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not rejected: say why the submission is rejected.")
        return back_to(request, _page(submission))
    try:
        lifecycle.SUBMISSION.take(request.user, submission, "reject", reason=form.cleaned_data["reason"])
    except ApplicationError as exc:
        messages.error(request, f"Not rejected: {exc.detail}")
    else:
        messages.success(request, f"Submission #{submission.pk} rejected.")
    return back_to(request, _page(submission))


@login_required
@require_POST
def recheck(request, pk: int):
    """Run the checks again on the frozen version (a new run; the earlier runs stay)."""
    submission = overseen_submission(request, pk)
    if submission.submitted_version is None:
        messages.error(request, "Nothing to re-check: no version was submitted.")
        return redirect(_page(submission))
    try:
        check_run = check_run_requeue(version=submission.submitted_version, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, f"Not re-checked: {exc.detail}")
    else:
        messages.success(
            request,
            f"Version {submission.submitted_version.number} queued for a new check (run #{check_run.pk}).",
        )
    return redirect(_page(submission))


@login_required
@require_POST
def waiver_decide(request, waiver_id: int):
    """Grant or refuse a requested waiver (auditors and the chair), with a reason."""
    waiver = get_visible_or_404(request.user, Waiver, pk=waiver_id)
    submission = waiver.version.submission
    require_oversight(request.user)
    form = ReasonForm(request.POST)
    grant = request.POST.get("decision") == "grant"
    if not form.is_valid():
        messages.error(request, "Waiver not decided: give the reason the submitter will read.")
        return back_to(request, _page(submission))
    # with_group=1: this waiver and every other one still asked for of the same version and rule, at once
    waivers = selectors.waivers_asked_with(waiver) if request.POST.get("with_group") == "1" else [waiver]
    try:
        decided = waivers_decide_group(
            waivers=waivers, actor=request.user, grant=grant, reason=form.cleaned_data["reason"]
        )
    except ApplicationError as exc:
        messages.error(request, f"Waiver not decided: {exc.detail}")
    else:
        what = f"Waiver of {waiver.rule}" if len(decided) == 1 else f"{len(decided)} waivers of {waiver.rule}"
        messages.success(request, f"{what} {'granted' if grant else 'refused'}.")
    return back_to(request, _page(submission))


@login_required
@require_POST
def waiver_grant(request, pk: int):
    """Waive an error finding of the frozen version directly (auditors and the chair), with a reason."""
    submission = overseen_submission(request, pk)
    form = WaiverGrantForm(request.POST)
    if not form.is_valid() or submission.submitted_version is None:
        messages.error(request, "Not waived: pick a finding and give the reason.")
        return back_to(request, _page(submission))
    data = form.cleaned_data
    try:
        waiver_grant_directly(
            version=submission.submitted_version,
            actor=request.user,
            rule=data["rule"],
            point=data["point"],
            file=data["file"],
            reason=data["reason"],
        )
    except ApplicationError as exc:
        messages.error(request, f"Not waived: {exc.detail}")
    else:
        messages.success(request, f"{data['rule']} waived on version {submission.submitted_version.number}.")
    return back_to(request, _page(submission))
