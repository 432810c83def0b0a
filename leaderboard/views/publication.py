"""The forms around a publication: the submitter's choice of date (from the submission page), a member's challenge
of a published result, the chair's resolution of one."""

from __future__ import annotations

from datetime import datetime, time

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from access.visibility import challenges_visible_to, submissions_visible_to
from catalog.cohorts import COHORT_ZONE
from leaderboard.board import selectors
from leaderboard.board.exports import result_url
from leaderboard.models import Publication
from leaderboard.publishing import services
from portal.errors import ApplicationError


@login_required
@require_POST
def challenge_raise(request, public_id: str):
    publication = selectors.publication_public(public_id)
    try:
        services.challenge_raise(
            publication=publication, actor=request.user, reason=request.POST.get("reason", "")
        )
    except ApplicationError as exc:
        messages.error(request, f"Not sent: {exc.detail}")
    else:
        messages.success(request, "Your challenge is sent to the chair, who resolves it in public.")
    return redirect(result_url(publication.public_id))


@login_required
@require_POST
def challenge_resolve(request, pk: int):
    challenge = get_object_or_404(challenges_visible_to(request.user).select_related("publication"), pk=pk)
    try:
        services.challenge_resolve(
            challenge=challenge,
            actor=request.user,
            outcome=request.POST.get("outcome", ""),
            text=request.POST.get("text", "") or request.POST.get("reason", ""),
        )
    except ApplicationError as exc:
        messages.error(request, f"Not resolved: {exc.detail}")
    else:
        messages.success(request, f"Challenge #{challenge.pk} resolved.")
    return redirect(result_url(challenge.publication.public_id))


@login_required
@require_POST
def publication_choose(request, pk: int):
    """now / date (embargo, up to 60 days) / cohort, through leaderboard.publishing.services.publication_schedule."""
    submission = get_object_or_404(submissions_visible_to(request.user), pk=pk)
    mode = request.POST.get("mode", "")
    publish_at = None
    if mode == Publication.Mode.DATE:
        try:
            day = datetime.strptime(request.POST.get("date", ""), "%Y-%m-%d").date()
        except ValueError:
            messages.error(request, "Not scheduled: give the embargo date.")
            return redirect("submissions:detail", pk=submission.pk)
        publish_at = datetime.combine(day, time(8, 0), tzinfo=COHORT_ZONE)
    try:
        publication = services.publication_schedule(
            submission=submission, actor=request.user, mode=mode, publish_at=publish_at
        )
    except ApplicationError as exc:
        messages.error(request, f"Not scheduled: {exc.detail}")
        return redirect("submissions:detail", pk=submission.pk)
    if publication.in_state("published"):
        messages.success(request, f"Published as {publication.public_id}.")
    else:
        messages.success(
            request,
            f"{publication.public_id} will be published on "
            f"{publication.publish_at.astimezone(COHORT_ZONE):%Y-%m-%d %H:%M %Z}.",
        )
    return redirect("submissions:detail", pk=submission.pk)
