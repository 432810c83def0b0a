"""The spot-check on a submission's audit page (auditors and the chair): start one at a point of the curve and watch
it measure (a polled fragment)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import get_visible_or_404
from portal.errors import ApplicationError
from spotchecks import services
from spotchecks.views.panels import audit_panel_context
from submissions.models import Submission


class StartForm(forms.Form):
    concurrency = forms.IntegerField(min_value=1)


def overseen(request, pk: int) -> Submission:
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    if not can(request.user, "oversee"):
        raise PermissionDenied("Only auditors and the chair spot-check submissions.")
    return submission


def _audit_page(submission: Submission) -> str:
    return reverse("review:attestation", args=[submission.pk]) + "#spotcheck-heading"


@login_required
@require_POST
def spotcheck_start(request, pk: int):
    submission = overseen(request, pk)
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
    submission = overseen(request, pk)
    context = audit_panel_context(request.user, submission)
    if request.headers.get("X-Requested-With") != "poll":  # opened directly: the panel in a styled page
        return render(request, "spotchecks/panel_page.html", {**context, "submission": submission})
    response = render(request, "spotchecks/_audit_panel.html", context)
    if not context["spotcheck_active"]:
        response["X-Poll-Stop"] = "1"
    response["Cache-Control"] = "no-store"
    return response
