"""The leaderboard's parts of other apps' pages: the publication block and the extension block of the submission
page (submissions.views.submissions), and the extension delta the review pages show (review.views). Page parts, not pages:
their forms post to leaderboard.views."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.urls import reverse
from django.utils import timezone

from catalog.cohorts import next_cohort
from leaderboard.board import selectors
from leaderboard.board.charts import axis_label, chart_spec, interactivity_metric, series_of
from leaderboard.models import Publication, PublicationRevision
from leaderboard.publishing import extensions, services
from leaderboard.workflow import PUBLICATION
from review import lifecycle
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


def publication_panel(user, submission: Submission, *, now: datetime | None = None) -> dict | None:
    """The publication block of the submission page: the choice for an audited result's submitters, the
    scheduled date, or the link to the public page once published."""
    publication = selectors.submission_publication(submission)
    can_choose = lifecycle.allowed(user, submission, "publish")  # its submitters, on an audited submission
    if publication is None and not can_choose:
        return None
    now = now or timezone.now()
    cohort = next_cohort(now)
    return {
        "publication": publication,
        "can_choose": can_choose,
        "cohort": cohort,
        "min_date": (now + timedelta(days=1)).date().isoformat(),
        "max_date": (now + timedelta(days=services.MAX_EMBARGO_DAYS)).date().isoformat(),
        "max_days": services.MAX_EMBARGO_DAYS,
        "public_url": reverse("results:detail", args=[publication.public_id])
        if publication is not None and publication.in_state("published")
        else "",
    }
