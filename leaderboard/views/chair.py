"""The chair's page of re-checks (leaderboard.publishing.rechecks): what is out of date, start a re-check, the campaigns, and
one campaign's report, with a decision per result (no action, annotate, open a challenge) and its reason.

Chair-only: 403 to anyone else. Refusals of the services become messages on the page."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import recheck_campaigns_visible_to, recheck_results_visible_to
from leaderboard.publishing import rechecks
from leaderboard.workflow import RECHECK_RESULT
from portal.errors import ApplicationError
from portal.parsers import parse_id
from review.selectors import check_verdicts_prime


class StartForm(forms.Form):
    reason = forms.CharField(max_length=2000, strip=True, required=False)
    everything = forms.BooleanField(required=False)


class DecideForm(forms.Form):
    decision = forms.ChoiceField(choices=[(key, key) for key in rechecks.DECISIONS])
    reason = forms.CharField(max_length=2000, strip=True)


def _require_chair(user) -> None:
    if not can(user, "chair"):
        raise PermissionDenied("Only the chair has this page.")


def _page(campaign_id: int | None = None) -> str:
    url = reverse("review:chair_rechecks")
    return f"{url}?campaign={campaign_id}#report" if campaign_id else url


@login_required
@require_GET
def recheck_list(request):
    _require_chair(request.user)
    campaigns = list(rechecks.campaigns_recent())
    wanted = parse_id(request.GET.get("campaign", ""))
    campaign = next((c for c in campaigns if c.pk == wanted), None) if wanted is not None else None
    if campaign is None and wanted is not None:
        campaign = recheck_campaigns_visible_to(request.user).filter(pk=wanted).first()
    if campaign is None and wanted is None and campaigns:
        campaign = campaigns[0]
    for item in {*campaigns, *([campaign] if campaign is not None else [])}:
        item.reported = item.in_state("reported")
    results = list(rechecks.campaign_results(campaign)) if campaign is not None else []
    for result in results:
        result.actions = RECHECK_RESULT.allowed_actions(request.user, result)
    check_verdicts_prime([result.check_run for result in results])
    outdated = rechecks.recheck_targets()
    return render(
        request,
        "leaderboard/chair_rechecks.html",
        {
            "campaigns": campaigns,
            "campaign": campaign,
            "missing": wanted is not None and campaign is None,
            "results": results,
            "outdated": outdated,
            "running": any(c.in_state("running") for c in campaigns),
        },
    )


@login_required
@require_POST
def recheck_start(request):
    _require_chair(request.user)
    form = StartForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not started: the reason is at most 2000 characters.")
        return redirect(_page())
    try:
        campaign = rechecks.recheck_campaign_start(
            actor=request.user,
            reason=form.cleaned_data["reason"],
            everything=form.cleaned_data["everything"],
        )
    except ApplicationError as exc:
        messages.error(request, f"Not started: {exc.detail}")
        return redirect(_page())
    count = campaign.results.count()
    messages.success(
        request,
        f"Re-check #{campaign.pk} started: {count} published revision{'s' if count != 1 else ''} queued. "
        "Its report appears here when every run has finished.",
    )
    return redirect(_page(campaign.pk))


@login_required
@require_POST
def recheck_decide(request, pk: int):
    _require_chair(request.user)
    result = get_object_or_404(
        recheck_results_visible_to(request.user).select_related("campaign", "publication"), pk=pk
    )
    form = DecideForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not decided: choose a decision and say why.")
        return redirect(_page(result.campaign_id))
    try:
        rechecks.recheck_result_decide(
            result=result,
            actor=request.user,
            decision=form.cleaned_data["decision"],
            reason=form.cleaned_data["reason"],
        )
    except ApplicationError as exc:
        messages.error(request, f"Not decided: {exc.detail}")
    else:
        result.refresh_from_db()
        messages.success(
            request,
            f"{result.publication.public_id} r{result.revision.number}: {result.get_status_display()}.",
        )
    return redirect(_page(result.campaign_id))
