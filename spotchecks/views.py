"""Pages of spot-checks: on the audit page of a submission (auditors and the chair) start one at a point of the
curve, watch it measure (a polled fragment), read claim beside re-measurement per figure and download its raw
output; on a published result's page, download the evidence of a dated re-measurement.

A submission is looked up through access.visibility first (404 for what the user may not see); the audit pages
are for auditors and the chair (403 for anyone else who may see the submission). A refusal of the service
becomes a message on the page, never a 500."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import get_visible_or_404, spotchecks_visible_to
from leaderboard.selectors import publication_public
from portal.errors import ApplicationError
from review import lifecycle
from spotchecks import selectors, services
from spotchecks.models import SpotCheck
from submissions.endpoints import endpoint_visible_to
from submissions.models import Submission

CONTENT_TYPES = {".json": "application/json", ".log": "text/plain; charset=utf-8"}


class StartForm(forms.Form):
    concurrency = forms.IntegerField(min_value=1)


def _overseen(request, pk: int) -> Submission:
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    if not can(request.user, "oversee"):
        raise PermissionDenied("Only auditors and the chair spot-check submissions.")
    return submission


def audit_panel_context(user, submission: Submission) -> dict:
    """What the audit page's spot-check panel shows (also the polled fragment)."""
    spot_checks = selectors.spotchecks_of(spotchecks_visible_to(user), submission)
    claim = selectors.claim_of(submission)
    endpoint = endpoint_visible_to(user, submission)
    return {
        "submission": submission,
        "spotcheck_endpoint": endpoint,
        "spotcheck_claim": claim,
        "spotcheck_points": claim.points,
        "spotcheck_rows": [
            {"spot_check": spot_check, "figures": selectors.spotcheck_rows(spot_check)}
            for spot_check in spot_checks
        ],
        "spotcheck_active": any(s.in_state("active") for s in spot_checks),
        "spotcheck_allowed": lifecycle.allowed(user, submission, "spot_check") and endpoint is not None,
    }


def _audit_page(submission: Submission) -> str:
    return reverse("review:attestation", args=[submission.pk]) + "#spotcheck-heading"


@login_required
@require_POST
def spotcheck_start(request, pk: int):
    submission = _overseen(request, pk)
    form = StartForm(request.POST)
    if not form.is_valid():
        messages.error(request, "No spot-check started: pick one of the curve's points.")
        return redirect(_audit_page(submission))
    try:
        spot_check = services.spotcheck_start(
            submission=submission, actor=request.user, concurrency=form.cleaned_data["concurrency"]
        )
    except ApplicationError as exc:
        messages.error(request, f"No spot-check started: {exc.detail}")
    else:
        messages.success(
            request,
            f"Spot-check #{spot_check.pk} queued: GuideLLM measures concurrency {spot_check.concurrency} for "
            f"{spot_check.duration_s} s through the egress guard.",
        )
    return redirect(_audit_page(submission))


@login_required
@require_GET
def spotcheck_panel(request, pk: int):
    """The spot-check panel of the audit page, polled every 3 s while a spot-check is queued or measuring."""
    submission = _overseen(request, pk)
    context = audit_panel_context(request.user, submission)
    response = render(request, "spotchecks/_audit_panel.html", context)
    if not context["spotcheck_active"]:
        response["X-Poll-Stop"] = "1"
    response["Cache-Control"] = "no-store"
    return response


def _evidence_response(spot_check: SpotCheck, position: int):
    if not 0 <= position < len(spot_check.evidence or []):
        raise Http404("No such evidence file.")
    item = spot_check.evidence[position]
    try:
        stream = default_storage.open(item["storage_key"], "rb")
    except (FileNotFoundError, OSError):
        raise Http404("The evidence file is missing from storage.") from None
    name = f"spotcheck-{spot_check.pk}-{item['name']}"
    suffix = "." + item["name"].rsplit(".", 1)[-1] if "." in item["name"] else ""
    response = FileResponse(
        stream,
        as_attachment=True,
        filename=name,
        content_type=CONTENT_TYPES.get(suffix, "application/octet-stream"),
    )
    response["X-Content-SHA256"] = item["sha256"]
    return response


@login_required
@require_GET
def spotcheck_evidence(request, pk: int, spotcheck_id: int, position: int):
    """A raw output of a spot-check (GuideLLM's benchmarks.json, the guard's record, GuideLLM's log)."""
    submission = _overseen(request, pk)
    spot_check = get_visible_or_404(request.user, SpotCheck, pk=spotcheck_id, submission=submission)
    return _evidence_response(spot_check, position)


@require_GET
def remeasurement_evidence(request, public_id: str, spotcheck_id: int, position: int):
    """A published result's re-measurement evidence, for everyone, when its organisation made the endpoint
    public (the raw output names the model the endpoint serves); a 404 otherwise, and before publication."""
    publication = publication_public(public_id)
    spot_check = next((s for s in selectors.remeasurements_public(publication) if s.pk == spotcheck_id), None)
    if spot_check is None or selectors.endpoint_url_shown(None, spot_check) is None:
        raise Http404("No such re-measurement evidence.")
    return _evidence_response(spot_check, position)
