"""Pages around extensions of a published result (docs/extensions.md): the submitter's form to open one (on the
published submission's page), and the delta block every page of an extension shows to whoever may see it (the
submitter, its reviewers, auditors and the chair): the published curve with the new points overlaid, the new points,
and the replaced points' metrics side by side."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from access.visibility import submissions_visible_to
from leaderboard.models import Publication
from leaderboard.publishing import extensions
from portal.errors import ApplicationError
from portal.parsers import parse_id


@login_required
@require_POST
def extension_open(request, pk: int):
    """Open an extension of a published result (leaderboard.publishing.extensions.extension_open); a hardware change is
    refused with the way to a new submission."""
    submission = get_object_or_404(submissions_visible_to(request.user), pk=pk)
    publication = Publication.objects.filter(submission_id=submission.result_root_id).first()
    if publication is None:
        messages.error(request, "Only a published result can be extended.")
        return redirect("submissions:detail", pk=submission.pk)
    revision = (request.POST.get("system_description_revision") or "").strip()
    try:
        extension = extensions.extension_open(
            publication=publication,
            actor=request.user,
            stack=request.POST.get("stack", "")[:200],
            software=request.POST.get("software", "")[:2000],
            configuration=request.POST.get("configuration", "")[:2000],
            description_revision=parse_id(revision) if revision else None,
            hardware_changed=request.POST.get("hardware_changed") == "on",
            title=request.POST.get("title", "")[:200],
        )
    except ApplicationError as exc:
        messages.error(request, f"Not opened: {exc.detail}")
        return redirect("submissions:detail", pk=submission.pk)
    messages.success(
        request,
        f"Extension of {publication.public_id} opened as submission #{extension.pk}: upload only the new or "
        "re-measured load points; they are checked together with the published curve.",
    )
    return redirect("submissions:detail", pk=extension.pk)
