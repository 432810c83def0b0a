"""Public HTML pages of the leaderboard (no login: only published results, ever), and the forms around a
publication: the submitter's choice of date, a member's challenge, the chair's resolution."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, time, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from access.visibility import challenges_visible_to, submissions_visible_to
from accounts.models import Membership
from accounts.selectors import user_is_chair, user_org_ids
from catalog.cohorts import COHORT_ZONE, next_cohort
from leaderboard import selectors, services
from leaderboard.charts import (
    axis_label,
    chart_spec,
    colour,
    interactivity_metric,
    result_charts,
    series_of,
)
from leaderboard.models import Challenge, Publication
from portal.errors import ApplicationError
from submissions.models import Submission
from submissions.system_desc import system_desc_facts
from submissions.uploads import version_file_response

POINT_COLUMNS = [
    ("concurrency", "Concurrency"),
    ("system_tps", "System tokens/s"),
    ("tps_per_user", "Tokens/s per user"),
    ("e2e_interactivity", "E2E interactivity"),
    ("ttft_p90_ms", "TTFT P90 (ms)"),
    ("system_tps_per_kw", "Tokens/s/kW (provisioned)"),
    ("region", "Region"),
    ("basis", "Basis"),
]


def _label(publication: Publication) -> str:
    return f"{publication.submission.organisation.name} {publication.submission.system.name}"


def _result_url(publication: Publication) -> str:
    return reverse("results:detail", args=[publication.public_id])


# --- Home and the benchmark list ---------------------------------------------------------------------


def home_context() -> dict:
    """What the home page and the leaderboard index show: benchmarks with their counts, the latest results."""
    return {
        "benchmarks": selectors.benchmarks_with_counts(),
        "latest": selectors.publications_latest(),
    }


@require_GET
def index(request):
    return render(request, "leaderboard/index.html", home_context())


# --- One benchmark -------------------------------------------------------------------------------


@require_GET
def benchmark(request, model_id: str):
    """Every published curve of the benchmark as a step function, the filters, a system picker and the table."""
    bench = selectors.benchmark_public(model_id)
    filters = selectors.LeaderboardFilters.from_query(request.GET)
    board = selectors.leaderboard_for(bench, filters)
    x = interactivity_metric(bench)
    rows = []
    series = []
    for index, publication in enumerate(board.results):
        sid = publication.public_id
        series.append(
            series_of(
                publication.curve,
                x=x,
                y="system_tps",
                label=_label(publication),
                index=index,
                href=_result_url(publication),
                sid=sid,
            )
        )
        rows.append(
            {
                "publication": publication,
                "colour": colour(index),
                "sid": sid,
                "plotted": index < 10,  # the ten best are drawn at first; the picker adds the others
                "accelerators": ", ".join(selectors.publication_accelerators(publication)),
                "power": selectors.publication_power_kind(publication),
            }
        )
    spec = chart_spec(
        "chart-board",
        f"{bench.display_name}: system throughput against {axis_label(x).lower()}",
        x=x,
        y="system_tps",
        series=series,
        note="Official step functions through the Pareto front of measured points only; nothing is "
        "interpolated. Hollow markers are measured points off the front.",
    )
    return render(
        request,
        "leaderboard/benchmark.html",
        {
            "benchmark": bench,
            "board": board,
            "rows": rows,
            "spec": spec,
            "x_label": axis_label(x),
            "plotted": sum(1 for r in rows if r["plotted"]),
            "filter_query": "&".join(f"{k}={v}" for k, v in filters.as_query().items()),
        },
    )


@require_GET
def compare(request, model_id: str):
    """2-4 published results of one benchmark on one chart, with their headline figures side by side."""
    bench = selectors.benchmark_public(model_id)
    ids = [i for value in request.GET.getlist("ids") for i in value.split(",")]
    try:
        results = selectors.publications_compare(bench, ids)
    except ValueError as exc:
        return render(
            request, "leaderboard/compare.html", {"benchmark": bench, "problem": str(exc)}, status=400
        )
    x = interactivity_metric(bench)
    charts = []
    for chart_id, cx, cy, title, log_x in (
        ("chart-compare", x, "system_tps", f"System throughput against {axis_label(x).lower()}", False),
        ("chart-compare-ttft", "concurrency", "ttft_p90_ms", "TTFT P90 against concurrency", True),
    ):
        charts.append(
            chart_spec(
                chart_id,
                title,
                x=cx,
                y=cy,
                log_x=log_x,
                series=[
                    series_of(
                        p.curve,
                        x=cx,
                        y=cy,
                        label=_label(p),
                        index=i,
                        href=_result_url(p),
                        sid=p.public_id,
                    )
                    for i, p in enumerate(results)
                ],
            )
        )
    return render(
        request,
        "leaderboard/compare.html",
        {
            "benchmark": bench,
            "results": [{"publication": p, "colour": colour(i)} for i, p in enumerate(results)],
            "charts": charts,
            "point_columns": POINT_COLUMNS,
        },
    )


# --- One result ------------------------------------------------------------------------------------


def _measured_rows(points: list[dict], measured: dict[int, dict]) -> list[dict]:
    rows = []
    for point in points:
        power = measured.get(point.get("concurrency"))
        if power:
            rows.append({"concurrency": point.get("concurrency"), **power})
    return rows


@require_GET
def result(request, public_id: str):
    """A published result (retracted ones too, marked): the system, charts, points, power, provenance."""
    publication = selectors.publication_public(public_id)
    provenance = selectors.publication_provenance(publication)
    submission = publication.submission
    x = interactivity_metric(submission.benchmark)
    points = sorted((publication.curve or {}).get("points") or [], key=lambda p: p.get("concurrency") or 0)
    user = request.user
    member = bool(user.is_authenticated and user_org_ids(user))
    is_chair = user_is_chair(user)
    challenges = (
        list(challenges_visible_to(user).filter(publication=publication).select_related("organisation"))
        if user.is_authenticated
        else []
    )
    return render(
        request,
        "leaderboard/result.html",
        {
            "publication": publication,
            "submission": submission,
            "facts": system_desc_facts(submission.system.description),
            "charts": result_charts(publication.curve, label=_label(publication), interactivity=x),
            "points": points,
            "point_columns": POINT_COLUMNS,
            "provenance": provenance,
            "measured_rows": _measured_rows(points, provenance.measured_power),
            "headline": publication.headline or {},
            "power_kind": selectors.publication_power_kind(publication),
            "can_challenge": member and not publication.is_retracted,
            "is_chair": is_chair,
            "challenges": challenges,
            "outcomes": [c for c in Challenge.Status.choices if c[0] != Challenge.Status.OPEN],
        },
    )


def _data_rows(publication: Publication) -> list[dict]:
    return sorted((publication.curve or {}).get("points") or [], key=lambda p: p.get("concurrency") or 0)


@require_GET
def result_data(request, public_id: str, fmt: str):
    """The result's points as JSON (with where they come from) or CSV, one row per measured point."""
    publication = selectors.publication_public(public_id)
    rows = _data_rows(publication)
    name = f"{publication.public_id}-points.{fmt}"
    if fmt == "json":
        body = {
            "public_id": publication.public_id,
            "url": request.build_absolute_uri(_result_url(publication)),
            "organisation": publication.submission.organisation.name,
            "system": publication.submission.system.name,
            "benchmark": publication.submission.benchmark.model_id,
            "published_at": publication.published_at.isoformat() if publication.published_at else None,
            "retracted": publication.is_retracted,
            "retraction_reason": publication.retraction_reason or None,
            "bundle_sha256": publication.version.sha256,
            "headline": publication.headline,
            "pareto": (publication.curve or {}).get("pareto") or {},
            "points": rows,
        }
        response = HttpResponse(json.dumps(body, indent=2), content_type="application/json")
    else:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["public_id", "system", "bundle_sha256", *(key for key, _ in POINT_COLUMNS), "point"])
        for row in rows:
            writer.writerow(
                [
                    publication.public_id,
                    publication.submission.system.name,
                    publication.version.sha256,
                    *("" if row.get(key) is None else row.get(key) for key, _ in POINT_COLUMNS),
                    row.get("point", ""),
                ]
            )
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def result_file(request, public_id: str, position: int):
    """One file of the published bundle, exactly as uploaded."""
    publication = selectors.publication_public(public_id)
    version_file = get_object_or_404(publication.version.files, position=position)
    return version_file_response(version_file)


@require_GET
def system_history(request, system_id: int):
    """A system's published curves over time (retracted ones marked), on one chart per benchmark."""
    history = selectors.system_history(system_id)
    system = history[0].submission.system
    groups: dict[int, dict] = {}
    for publication in history:
        bench = publication.submission.benchmark
        group = groups.setdefault(bench.pk, {"benchmark": bench, "publications": []})
        group["publications"].append(publication)
    for group in groups.values():
        x = interactivity_metric(group["benchmark"])
        group["spec"] = chart_spec(
            f"chart-history-{group['benchmark'].pk}",
            f"{group['benchmark'].display_name}: curves over time",
            x=x,
            y="system_tps",
            series=[
                series_of(
                    p.curve,
                    x=x,
                    y="system_tps",
                    label=f"{p.public_id} · {p.published_at:%Y-%m-%d}"
                    + (" (retracted)" if p.is_retracted else ""),
                    index=i,
                    href=_result_url(p),
                    sid=p.public_id,
                )
                for i, p in enumerate(group["publications"])
            ],
        )
        group["rows"] = [{"publication": p, "colour": colour(i)} for i, p in enumerate(group["publications"])]
    return render(
        request,
        "leaderboard/history.html",
        {
            "system": system,
            "organisation": history[0].submission.organisation,
            "groups": list(groups.values()),
            "facts": system_desc_facts(system.description),
        },
    )


# --- Challenges ----------------------------------------------------------------------------------


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
    return redirect(_result_url(publication))


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
    return redirect(_result_url(challenge.publication))


# --- The submitter's choice of publication date (on the submission page) ------------------------------


def publication_panel(user, submission: Submission, *, now: datetime | None = None) -> dict | None:
    """The publication block of the submission page: the choice for an audited result's submitters, the
    scheduled date, or the link to the public page once published."""
    publication = selectors.submission_publication(submission)
    can_choose = (
        submission.status == Submission.Status.AUDITED
        and submission.organisation_id
        in user_org_ids(user, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    )
    if publication is None and not can_choose:
        return None
    now = now or timezone.now()
    cohort = next_cohort(now)
    return {
        "publication": publication,
        "can_choose": can_choose,
        "cohort": cohort,
        "cohort_local": cohort.astimezone(COHORT_ZONE),
        "min_date": (now + timedelta(days=1)).date().isoformat(),
        "max_date": (now + timedelta(days=services.MAX_EMBARGO_DAYS)).date().isoformat(),
        "max_days": services.MAX_EMBARGO_DAYS,
        "public_url": _result_url(publication)
        if publication is not None and publication.status == Publication.Status.PUBLISHED
        else "",
    }


@login_required
@require_POST
def publication_choose(request, pk: int):
    """now / date (embargo, up to 60 days) / cohort, through leaderboard.services.publication_schedule."""
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
    if publication.status == Publication.Status.PUBLISHED:
        messages.success(request, f"Published as {publication.public_id}.")
    else:
        messages.success(
            request,
            f"{publication.public_id} will be published on "
            f"{publication.publish_at.astimezone(COHORT_ZONE):%Y-%m-%d %H:%M %Z}.",
        )
    return redirect("submissions:detail", pk=submission.pk)
