"""A spot-check's raw output as downloads: on the audit page (auditors and the chair), and the evidence of a dated
re-measurement on a published result's page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404
from django.views.decorators.http import require_GET

from access.visibility import get_visible_or_404
from leaderboard.board.selectors import publication_public
from spotchecks import selectors
from spotchecks.models import SpotCheck
from spotchecks.views.auditor import overseen

CONTENT_TYPES = {".json": "application/json", ".log": "text/plain; charset=utf-8"}


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
    submission = overseen(request, pk)
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
