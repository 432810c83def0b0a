"""HTML pages of the audit app: the event log for auditors and the chair, filtered by object (type and id),
actor and action, each event linked to its object's page where there is one the reader may open."""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from access.permissions import can
from access.visibility import audit_events_visible_to, submissions_visible_to
from audit.checkpoints import CheckpointError, checkpoint_latest_cached
from audit.models import AuditEvent
from audit.selectors import audit_chain_head
from portal.parsers import parse_id
from submissions.models import CheckRun, SubmissionVersion

logger = logging.getLogger(__name__)

# Object types whose events name their submission in data["submission"] or are submissions themselves.
ATTESTATION_PAGE_TYPES = {"review.waiver", "review.evidencerequest", "review.attestation"}


def filtered_events(user, params) -> tuple:
    """The events `user` may read, narrowed by the query's object type and id, actor and action.
    `action` is an exact action, or a family such as `review.*`."""
    events = audit_events_visible_to(user)
    filters = {
        key: (params.get(key) or "").strip() for key in ("object_type", "object_id", "actor", "action")
    }
    if filters["object_type"]:
        events = events.filter(object_type=filters["object_type"])
    if filters["object_id"]:
        events = events.filter(object_id=filters["object_id"])
    if filters["actor"]:
        events = (
            events.filter(actor__isnull=True)
            if filters["actor"] == "system"
            else events.filter(actor__username=filters["actor"])
        )
    if filters["action"].endswith(".*"):
        events = events.filter(action__startswith=filters["action"][:-1])
    elif filters["action"]:
        events = events.filter(action=filters["action"])
    return events, filters


def _plain_id(value: str) -> bool:
    return parse_id(value) is not None


def _submission_of(event: AuditEvent, versions: dict, runs: dict) -> int | None:
    if event.object_type == "submissions.submission" and _plain_id(event.object_id):
        return int(event.object_id)
    if event.object_type == "submissions.submissionversion" and _plain_id(event.object_id):
        return versions.get(int(event.object_id))
    if event.object_type == "submissions.checkrun" and _plain_id(event.object_id):
        return runs.get(int(event.object_id))
    value = (event.data or {}).get("submission") if isinstance(event.data, dict) else None
    return value if isinstance(value, int) else None


def event_links(user, events: list[AuditEvent]) -> dict[int, str]:
    """event id -> the page of its object, only where that page exists and the reader may open it."""

    version_ids = [
        int(e.object_id)
        for e in events
        if e.object_type == "submissions.submissionversion" and _plain_id(e.object_id)
    ]
    run_ids = [
        int(e.object_id) for e in events if e.object_type == "submissions.checkrun" and _plain_id(e.object_id)
    ]
    versions = dict(SubmissionVersion.objects.filter(pk__in=version_ids).values_list("pk", "submission_id"))
    runs = dict(CheckRun.objects.filter(pk__in=run_ids).values_list("pk", "version__submission_id"))
    submission_of = {event.pk: _submission_of(event, versions, runs) for event in events}
    visible = set(
        submissions_visible_to(user)
        .filter(pk__in={pk for pk in submission_of.values() if pk is not None})
        .values_list("pk", flat=True)
    )
    chair = can(user, "chair")
    links = {}
    for event in events:
        if event.object_type == "review.conflict":
            links[event.pk] = reverse("review:conflicts")
            continue
        submission_id = submission_of[event.pk]
        if submission_id is None or submission_id not in visible:
            continue
        if event.object_type in ATTESTATION_PAGE_TYPES:
            links[event.pk] = reverse("review:attestation", args=[submission_id])
        elif event.object_type == "review.reviewassignment" and chair:
            links[event.pk] = reverse("review:chair_submission", args=[submission_id])
        else:
            links[event.pk] = reverse("submissions:detail", args=[submission_id])
    return links


@login_required
@require_GET
def event_list(request):
    if not can(request.user, "read_audit_log"):
        raise PermissionDenied("Only auditors and the chair can read the audit log.")
    events, filters = filtered_events(request.user, request.GET)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    links = event_links(request.user, list(page.object_list))
    rows = [{"event": event, "link": links.get(event.pk)} for event in page.object_list]
    actions = list(AuditEvent.objects.order_by("action").values_list("action", flat=True).distinct())
    families = sorted({action.split(".")[0] + ".*" for action in actions if "." in action})
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "audit/event_list.html",
        {
            "page": page,
            "rows": rows,
            "filters": filters,
            # order_by() first: the model's ordering by sequence would make DISTINCT keep one row per event.
            "object_types": [
                t
                for t in AuditEvent.objects.order_by("object_type")
                .values_list("object_type", flat=True)
                .distinct()
                if t
            ],
            "actions": families + actions,
            "query": query.urlencode(),
            "filtered": any(filters.values()),
        },
    )


@never_cache
@require_safe
def head(request):
    """Public: the newest event's SEQUENCE:HASH and the newest signed checkpoint. Anyone may copy the head and
    later ask the portal's operators to run `verify_audit_log --expect-head` against it: a log rewritten or cut
    short since then no longer reaches it. Only a count and a hash: no event's content."""
    sequence, digest = audit_chain_head()
    checkpoint, checkpoint_problem = None, ""
    try:
        checkpoint = checkpoint_latest_cached()
    except CheckpointError:
        checkpoint_problem = "The newest checkpoint is not validly signed; the operators have been told."
        logger.error("audit head page: newest checkpoint is not validly signed", exc_info=True)
    return render(
        request,
        "audit/head.html",
        {
            "sequence": sequence,
            "hash": digest,
            "checkpoint": checkpoint,
            "checkpoint_problem": checkpoint_problem,
        },
    )
