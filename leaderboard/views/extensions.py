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
from leaderboard import extensions
from leaderboard.charts import axis_label, chart_spec, interactivity_metric, series_of
from leaderboard.models import Publication, PublicationRevision
from leaderboard.workflow import PUBLICATION
from portal.errors import ApplicationError
from portal.parsers import parse_id
from submissions.models import Submission, SystemDescriptionRevision
from submissions.selectors import check_run_latest, extension_open_of, published_revisions, version_latest


def _union_curve(submission: Submission) -> tuple[dict, object]:
    """The union curve the extension's check judged (its submitted version, else its latest), and that run."""
    version = submission.submitted_version or version_latest(submission)
    run = check_run_latest(version) if version is not None else None
    for curve in (run.curves if run is not None else None) or []:
        if (
            curve.get("system") == submission.system.name
            and curve.get("model") == submission.benchmark.model_id
        ):
            return curve, run
    return {}, run


def extension_delta(submission: Submission) -> dict | None:
    """What changed with this extension, against the published result it extends (whose curve is public)."""
    if submission.extends_id is None:
        return None
    root = submission.extends
    publication = Publication.objects.filter(submission=root).first()
    if publication is None:
        return None
    published_curve = publication.curve or {}
    newest = published_revisions(root)
    newest_number = newest[0][0] if newest else 1
    union, run = _union_curve(submission)
    number = submission.revision or newest_number + 1
    if submission.revision:  # published: against the revision it extended, as the result's history keeps it
        newest_number = submission.revision - 1
        before = PublicationRevision.objects.filter(publication=publication, number=newest_number).first()
        published_curve = (before.curve if before is not None else None) or {}
    labelled = extensions.labelled_curve(union, number=number, stack=submission.stack) if union else {}
    new_points = [p for p in labelled.get("points") or [] if p.get("revision") == number]
    replaced = extensions.replaced_points(published_curve, labelled) if labelled else []
    replaced_concurrencies = {r["concurrency"] for r in replaced}
    x = interactivity_metric(submission.benchmark)
    charts = []
    if labelled:
        for chart_id, x_key, title in (
            ("chart-delta-front", x, f"System throughput against {axis_label(x).lower()}"),
            ("chart-delta-concurrency", "concurrency", "System throughput against concurrency"),
        ):
            charts.append(
                chart_spec(
                    chart_id,
                    title,
                    x=x_key,
                    y="system_tps",
                    log_x=x_key == "concurrency",
                    series=[
                        series_of(
                            published_curve,
                            x=x_key,
                            y="system_tps",
                            label=f"Published (revision {newest_number})",
                            index=0,
                            sid="published",
                        ),
                        series_of(
                            labelled,
                            x=x_key,
                            y="system_tps",
                            label=f"With this extension (revision {number})",
                            index=1,
                            sid="extended",
                        ),
                    ],
                    note="The published curve and the curve this extension would make (its new points with the "
                    "published ones it keeps); both are official step functions through measured points.",
                )
            )
    return {
        "root": root,
        "publication": publication,
        "published_number": newest_number,
        "number": number,
        "stack": submission.stack,
        "changes": submission.changes or {},
        "added": [p for p in new_points if p.get("concurrency") not in replaced_concurrencies],
        "replaced": replaced,
        "points_after": len(labelled.get("points") or []),
        "points_before": len(published_curve.get("points") or []),
        "checked": run is not None and bool(labelled),
        "charts": charts,
    }


def extension_panel(user, submission: Submission) -> dict | None:
    """The submission page's extension block: the delta of an extension, or, on a published result for its
    submitters, the form to open an extension (or the link to the one open)."""
    if submission.extends_id is not None:
        return {"delta": extension_delta(submission)}
    publication = Publication.objects.filter(submission=submission).select_related("submission").first()
    # the result's submitters, on a published result (the table's `extend` row; retracted: no form, below)
    if publication is None or not PUBLICATION.allowed(user, publication, "extend"):
        return None
    return {
        "form": not publication.is_retracted,
        "publication": publication,
        "open": extension_open_of(submission),
        "description_revisions": list(
            SystemDescriptionRevision.objects.filter(system_id=submission.system_id)
            .order_by("-number")
            .values_list("number", flat=True)
        ),
    }


@login_required
@require_POST
def extension_open(request, pk: int):
    """Open an extension of a published result (leaderboard.extensions.extension_open); a hardware change is
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
