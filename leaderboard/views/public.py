"""Public HTML pages of the leaderboard (no login: only published results, ever): home, the boards, compare, a
result's page and a system's history. The forms around a publication are leaderboard.views.publication's, the
downloads leaderboard.views.downloads'."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from access.visibility import challenges_visible_to
from leaderboard.board import selectors
from leaderboard.board.cache import public_cached, public_page
from leaderboard.board.charts import (
    axis_label,
    board_groups,
    chart_spec,
    colour,
    interactivity_metric,
    result_charts,
    series_of,
    series_style,
)
from leaderboard.board.cliffs import CLIFF_RULE, points_past_a_cliff
from leaderboard.board.exports import standing
from leaderboard.board.normalised import (
    PRICE_FIELDS,
    TARGET_FIELDS,
    BuyerInputs,
    buyer_inputs_from_query,
    point_rows,
    points_goodput,
)
from leaderboard.board.slo import node_count
from leaderboard.models import Challenge, Publication
from leaderboard.workflow import PUBLICATION
from portal.parsers import parse_positive
from spotchecks.selectors import (
    acceptance_at_90,
    endpoint_url_shown,
    remeasurements_public,
    spotcheck_basis,
    spotcheck_rows,
    spotcheck_run_longer,
)

POINT_COLUMNS = [
    ("concurrency", "Concurrency"),
    ("system_tps", "System tokens/s"),
    ("tps_per_user", "Tokens/s per user"),
    ("e2e_interactivity", "E2E interactivity"),
    ("ttft_p90_ms", "TTFT P90 (ms)"),
    ("system_tps_per_kw", "Tokens/s/kW (provisioned)"),
    ("region", "Region"),
    ("verification", "Verification"),
]


def _label(publication: Publication) -> str:
    return publication.record.label


def _result_url(publication: Publication) -> str:
    return reverse("results:detail", args=[publication.public_id])


# --- Cached public pages -----------------------------------------------------------------------------
#
# Every public page is the same for everyone but for the site header (and, on a result page, a member's
# challenge form): the body is rendered once per generation of the public data (leaderboard.board.cache: bumped when a
# publication, annotation or retraction commits) and kept as an HTML fragment; the page around it is rendered
# per request. Anonymous visitors share whole cached responses (leaderboard.board.cache.public_page).


def public_fragment(name: str, template: str, build: Callable[[], dict]) -> dict:
    """`template` rendered with `build()`, cached under the public generation as a dict: title, body (HTML),
    status, charts (whether the page draws charts) and `meta` (what the per-request part needs). Pages other
    than 200 (a compare that asks for one result, say) are rendered each time and not kept."""

    def make() -> dict:
        context = build()
        return {
            "title": context.pop("page_title"),
            "status": context.pop("page_status", 200),
            "charts": context.pop("page_charts", True),
            "meta": context.pop("page_meta", {}),
            "body": render_to_string(template, context),
        }

    return public_cached(name, make, keep=lambda fragment: fragment["status"] == 200, memo=False)


def render_fragment(
    request, fragment: dict, *, before: str = "", after: str = "", context: dict | None = None
):
    """The page around a cached fragment: base.html with this visitor's header, and optional per-request
    templates before and after the body."""
    return render(
        request,
        "leaderboard/_public_page.html",
        {
            "fragment": fragment,
            "fragment_body": mark_safe(fragment["body"]),  # rendered (and escaped) by our own template
            "before": before,
            "after": after,
            **(context or {}),
        },
        status=fragment["status"],
    )


# --- Home and the benchmark list ---------------------------------------------------------------------


def home_context() -> dict:
    """What the home page and the leaderboard index show: benchmarks with their counts, the latest results."""
    benchmarks = selectors.benchmarks_with_counts()
    return {
        "benchmarks": benchmarks,
        "latest": selectors.publications_latest(),
        # The SLO form starts on a benchmark with results (most first), never on one that can only answer "none".
        "slo_benchmark": max(benchmarks, key=lambda b: b.published_count).model_id if benchmarks else "",
    }


def home_fragment() -> dict:
    """The home page's body below its greeting (which depends on who is signed in)."""
    return public_fragment(
        "page:home",
        "leaderboard/_home_body.html",
        lambda: {**home_context(), "page_title": "Home", "page_charts": False},
    )


def home(request):
    """Benchmarks with their counts of published results and the latest publications."""
    return public_page(
        request, lambda: render_fragment(request, home_fragment(), before="leaderboard/_home_hero.html")
    )


@require_GET
def index(request):
    def respond():
        fragment = public_fragment(
            "page:index",
            "leaderboard/index.html",
            lambda: {**home_context(), "page_title": "Leaderboard", "page_charts": False},
        )
        return render_fragment(request, fragment)

    return public_page(request, respond)


# --- One benchmark -------------------------------------------------------------------------------


BOARD_DRAWN = 10  # curves drawn (and embedded) at first: the top of the ranking
BOARD_PAGE_ROWS = 50  # rows of the table a page; the picker offers these and the drawn ones


def _page_number(value: str | None) -> int:
    return parse_positive(value, default=1)


def _board_row(rank: int, publication: Publication, *, ranked: bool, measured: dict) -> dict:
    """One row of the board's table (and of its picker): `ranked` when it is among the fully recomputed
    results, which come first and are the ranking; `measured` the traced figures of the page's results."""
    count = publication.record.accelerator_count
    nodes = node_count(publication.record.description)
    peak = (publication.headline or {}).get("max_system_tps")
    traced = [
        m.get("measured_tps_per_kw")
        for m in (measured.get(publication.public_id) or {}).values()
        if isinstance(m.get("measured_tps_per_kw"), int | float)
    ]
    return {
        "publication": publication,
        "rank": rank + 1,
        "ranked": ranked,
        "rank_label": str(rank + 1) if ranked else "unranked",
        **series_style(rank),  # colour, marker, dash: the picker draws a curve it loads as the chart would
        "sid": publication.public_id,
        "label": _label(publication),
        "href": _result_url(publication),
        "plotted": rank < BOARD_DRAWN,
        # the count beside the type: 8 accelerators are not compared raw against 4 unawares
        "accelerators": publication.record.accelerator_label,
        "peak_per_accelerator": peak / count if count and isinstance(peak, int | float) else None,
        "peak_per_node": peak / nodes if nodes and isinstance(peak, int | float) else None,
        "best_measured_per_kw": max(traced) if traced else None,
        "older_results": getattr(publication, "older_results", 0),
        "power": selectors.publication_power_kind(publication),
    }


BOARD_GROUPS = {"": "All systems on one chart", "accelerators": "One chart per accelerator count"}
BOARD_PER = {"": "Per system", "accelerator": "Per accelerator"}


def _board_view(query) -> tuple[str, str]:
    """How the board draws its fronts (?group=accelerators, ?per=accelerator); anything else is the default."""
    group = (query.get("group") or "").strip()
    per = (query.get("per") or "").strip()
    return (group if group in BOARD_GROUPS else "", per if per in BOARD_PER else "")


def _board_context(
    bench, filters: selectors.LeaderboardFilters, page: int, view: tuple[str, str] = ("", "")
) -> dict:
    """The board's top BOARD_DRAWN curves (embedded), one page of the ranked table, and the picker: what the
    page carries does not grow with the number of results; other curves come from the public API on demand."""
    board = selectors.leaderboard_for(bench, filters, with_curves=False)
    results = board.results
    pages = max(1, -(-len(results) // BOARD_PAGE_ROWS))
    page = min(page, pages)
    start = (page - 1) * BOARD_PAGE_ROWS
    drawn = results[:BOARD_DRAWN]
    curves = selectors.publication_curves(drawn)
    x = interactivity_metric(bench)
    series = [
        series_of(
            curves.get(publication.pk) or {},
            x=x,
            y="system_tps",
            label=_label(publication),
            index=index,
            href=_result_url(publication),
            sid=publication.public_id,
        )
        for index, publication in enumerate(drawn)
    ]

    ranked_count = sum(1 for p in results if p.record.verification.ranks_by_default)

    page_results = results[start : start + BOARD_PAGE_ROWS]
    measured = selectors.measured_power_of_results([p.public_id for p in page_results])

    def row(rank: int, publication: Publication) -> dict:
        return _board_row(rank, publication, ranked=rank < ranked_count, measured=measured)

    rows = [row(start + i, p) for i, p in enumerate(page_results)]
    picker = [row(i, p) for i, p in enumerate(drawn)] + [r for r in rows if not r["plotted"]]
    spec = chart_spec(
        "chart-board",
        f"{bench.display_name}: system throughput against {axis_label(x).lower()}",
        x=x,
        y="system_tps",
        series=series,
        note="Official step functions through the Pareto front of measured points only; nothing is "
        "interpolated. Hollow markers are measured points off the front.",
    )
    group, per = view
    groups = []
    if group or per:  # one chart per accelerator count (per accelerator: every count on its own chart too)
        groups = board_groups(
            [(p.record.accelerator_count, s) for p, s in zip(drawn, series, strict=True)],
            x=x,
            title=f"system throughput{' per accelerator' if per else ''} against {axis_label(x).lower()}",
            per=bool(per),
        )
    query = filters.as_query()
    view_query = {k: v for k, v in (("group", group), ("per", per)) if v}
    return {
        "benchmark": bench,
        "board": board,
        "groups": groups,
        "group": group,
        "per": per,
        "group_choices": BOARD_GROUPS.items(),
        "per_choices": BOARD_PER.items(),
        "filter_query": sorted(query.items()),
        "rows": rows,
        "picker": picker,
        "spec": spec,
        "x_label": axis_label(x),
        "plotted": len(series),
        "drawn_max": BOARD_DRAWN,
        "page": page,
        "pages": pages,
        "first_rank": start + 1,
        "last_rank": start + len(rows),
        "previous_url": f"?{urlencode({**query, **view_query, 'page': page - 1})}" if page > 1 else "",
        "next_url": f"?{urlencode({**query, **view_query, 'page': page + 1})}" if page < pages else "",
        # In the board's order (rank first), on the portal's own address: a link that works pasted anywhere.
        "results_json": settings.PORTAL_SITE_URL.rstrip("/")
        + "/api/v1/public/results/?"
        + urlencode({"benchmark": bench.model_id, "retracted": "false", "order": "rank"}),
        "results_csv": settings.PORTAL_SITE_URL.rstrip("/")
        + "/api/v1/public/results/?"
        + urlencode(
            {
                "benchmark": bench.model_id,
                "retracted": "false",
                "order": "rank",
                "format": "csv",
                "limit": 1000,
            }
        ),
        "page_title": f"{bench.display_name} leaderboard",
    }


@require_GET
def benchmark(request, model_id: str):
    """The benchmark's top curves as step functions, the filters, a system picker and the ranked table, a page
    at a time; the body is cached under the public generation."""
    filters = selectors.LeaderboardFilters.from_query(request.GET)
    page = _page_number(request.GET.get("page"))
    view = _board_view(request.GET)

    def respond():
        fragment = public_fragment(
            f"page:board:{model_id}:{sorted(filters.as_query().items())}:{page}:{view}",
            "leaderboard/benchmark.html",
            lambda: _board_context(selectors.benchmark_public(model_id), filters, page, view),
        )
        return render_fragment(request, fragment)

    return public_page(request, respond)


def _compare_context(model_id: str, ids: list[str], inputs: BuyerInputs | None = None) -> dict:
    bench = selectors.benchmark_public(model_id)
    title = f"Compare · {bench.display_name}"
    try:
        results = selectors.publications_compare(bench, ids)
    except ValueError as exc:
        return {"benchmark": bench, "problem": str(exc), "page_title": title, "page_status": 400}
    x = interactivity_metric(bench)
    charts = []
    for chart_id, cx, cy, title_of, log_x in (
        ("chart-compare", x, "system_tps", f"System throughput against {axis_label(x).lower()}", False),
        ("chart-compare-ttft", "concurrency", "ttft_p90_ms", "TTFT P90 against concurrency", True),
    ):
        charts.append(
            chart_spec(
                chart_id,
                title_of,
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
    inputs = inputs or buyer_inputs_from_query({})
    measured = selectors.measured_power_of_results([p.public_id for p in results])
    hidden = [("ids", ",".join(p.public_id for p in results))]
    rows = []
    for i, p in enumerate(results):
        points = sorted((p.curve or {}).get("points") or [], key=lambda point: point.get("concurrency") or 0)
        rows.append(
            {
                "publication": p,
                "standing": standing(p),
                "colour": colour(i),
                "buyer": buyer_context(p, points, measured.get(p.public_id) or {}, inputs, hidden=hidden),
            }
        )
    return {
        "benchmark": bench,
        "results": rows,
        "buyer": rows[0]["buyer"],  # the form (the same inputs for every result)
        "priced": inputs.prices.given,
        "target": inputs.target,
        "share_query": urlencode([*hidden, *inputs.values.items()]),
        "charts": charts,
        "page_status": 400 if inputs.errors else 200,  # the page still shows, with the errors by their labels
        "point_columns": POINT_COLUMNS,
        "page_title": title,
    }


@require_GET
def compare(request, model_id: str):
    """2-4 published results of one benchmark on one chart, with their headline figures side by side, and per point
    the normalised views and the cost at the buyer's price (leaderboard.board.normalised; inputs in the URL)."""
    ids = [i.strip() for value in request.GET.getlist("ids") for i in value.split(",") if i.strip()]
    inputs = buyer_inputs_from_query(request.GET)

    def respond():
        fragment = public_fragment(
            f"page:compare:{model_id}:{','.join(ids)}:{inputs.cache_key}",
            "leaderboard/compare.html",
            lambda: _compare_context(model_id, ids, inputs),
        )
        return render_fragment(request, fragment)

    return public_page(request, respond)


# --- One result ------------------------------------------------------------------------------------


def buyer_context(
    publication: Publication,
    points: list[dict],
    measured: dict,
    inputs: BuyerInputs,
    *,
    hidden=(),
    goodput=True,
) -> dict:
    """The normalised and cost table of one result (leaderboard.board.normalised), at the buyer's prices and, with
    per-request targets, each point's goodput; what templates/leaderboard/_buyer_form.html and
    _normalised_table.html show. `hidden`: the page's own parameters the form keeps (ids, revision)."""
    record = publication.record
    target = inputs.target if goodput else None
    rates = points_goodput(publication.public_id, points, target)
    return {
        "price_fields": [(name, label, inputs.values.get(name, "")) for name, label in PRICE_FIELDS],
        "target_fields": [(name, label, inputs.values.get(name, "")) for name, label in TARGET_FIELDS],
        "hidden": list(hidden),
        "errors": inputs.errors,
        "priced": inputs.prices.given,
        "input_priced": inputs.prices.given and inputs.prices.per_million_input_tokens is not None,
        "target": target,
        "targets_ignored": inputs.target is not None and not goodput,
        "has_goodput": bool(rates),
        "rows": point_rows(
            points,
            accelerators=record.accelerator_count,
            description=record.description,
            measured=measured or {},
            prices=inputs.prices,
            goodput=rates,
            tokens=selectors.point_token_counts(publication)
            if inputs.prices.per_million_input_tokens is not None
            else None,
        ),
        "accelerators": record.accelerator_count,
        "accelerator_label": record.accelerator_label,
        "has_measured_power": bool(measured),
    }


def _measured_rows(points: list[dict], measured: dict[int, dict]) -> list[dict]:
    rows = []
    for point in points:
        power = measured.get(point.get("concurrency"))
        if power:
            rows.append({"concurrency": point.get("concurrency"), **power})
    return rows


def _timeline(publication: Publication, revisions: list, *, shown: int, x: str) -> dict | None:
    """The result's revisions (dates, stacks, what each added or re-measured, its bundle) and a chart of how the
    curve moved: one step function per revision. None while the result has a single revision."""
    if len(revisions) < 2:
        return None
    rows = []
    for revision in revisions:
        points = (revision.curve or {}).get("points") or []
        replaced = sorted(r.get("concurrency") for r in revision.replaced or [])
        measured = sorted(p.get("concurrency") for p in points if p.get("revision") == revision.number)
        rows.append(
            {
                "number": revision.number,
                "published_at": revision.published_at,
                "stack": revision.stack,
                "changes": revision.changes or {},
                "sha256": revision.version.sha256,
                "points": len(points),
                "added": [c for c in measured if c not in replaced] if revision.number > 1 else measured,
                "replaced": revision.replaced or [],
                "peak": (revision.headline or {}).get("max_system_tps"),
                "url": f"{_result_url(publication)}?revision={revision.number}",
                "shown": revision.number == shown,
            }
        )
    chart = chart_spec(
        "chart-revisions",
        "How the curve moved: system throughput against " + axis_label(x).lower(),
        x=x,
        y="system_tps",
        series=[
            series_of(
                revision.curve,
                x=x,
                y="system_tps",
                label=f"Revision {revision.number}" + (f" · {revision.stack}" if revision.stack else ""),
                index=index,
                sid=f"r{revision.number}",
            )
            for index, revision in enumerate(revisions)
        ],
        note="One official step function per revision, through the measured points it published.",
    )
    return {"rows": rows, "chart": chart, "newest": revisions[-1].number}


def _remeasurements(publication: Publication) -> list[dict]:
    """The result's finished re-measurements for the public body (the same for every visitor: the endpoint URL
    only when its organisation made it public)."""
    return [
        {
            "spot_check": spot_check,
            "figures": spotcheck_rows(spot_check),
            "basis": spotcheck_basis(spot_check),
            "run_longer": spotcheck_run_longer(spot_check),
            "endpoint_url": endpoint_url_shown(None, spot_check),
            "acceptance": acceptance_at_90(spot_check),
        }
        for spot_check in remeasurements_public(publication)
    ]


def _sources(record, points: list[dict]) -> list[dict]:
    """The revisions whose points make the curve shown, newest first, each with the concurrencies it measured and
    its archives behind the curve (those holding a point shown; a revision's re-measured points' archives are
    left to its own page)."""
    measured: dict[int, list] = {}
    held: dict[int, set] = {}
    for point in points:
        evidence = point.get("evidence")
        if evidence:
            measured.setdefault(evidence["revision"], []).append(point.get("concurrency"))
            if evidence.get("file"):
                held.setdefault(evidence["revision"], set()).add(evidence["file"]["position"])
    rows = []
    for source in reversed(record.sources):
        positions = held.get(source.get("revision"))
        files = source.get("files") or []
        archives = [f for f in files if f["position"] in positions] if positions else files
        rows.append({**source, "points": measured.get(source.get("revision"), []), "archives": archives})
    return rows


def _result_context(public_id: str, revision: int | None = None, query=None) -> dict:
    newest = selectors.publication_public(public_id)
    publication = selectors.publication_at_revision(newest, revision)
    revisions = selectors.publication_revisions_public(newest)
    provenance = selectors.publication_provenance(publication)
    submission = publication.submission
    x = interactivity_metric(submission.benchmark)
    evidence = publication.record.point_evidence
    points = sorted(
        (
            {**p, "evidence": evidence.get(p.get("point"))}
            for p in (publication.curve or {}).get("points") or []
        ),
        key=lambda p: p.get("concurrency") or 0,
    )
    shown = revision or (revisions[-1].number if revisions else 1)
    buyer = buyer_context(
        publication,
        points,
        provenance.measured_power,
        buyer_inputs_from_query(query or {}),
        hidden=[("revision", revision)] if revision is not None else [],
        # an older revision's points may have been re-measured since: the arrays kept are the newest's
        goodput=revision is None or not revisions or revision == revisions[-1].number,
    )
    return {
        "timeline": _timeline(newest, revisions, shown=shown, x=x),
        "shown_revision": shown,
        "older_revision": revision is not None and bool(revisions) and revision != revisions[-1].number,
        "revision_query": f"?revision={revision}" if revision is not None else "",
        "publication": publication,
        "submission": submission,
        "record": publication.record,
        "facts": publication.record.facts,
        "charts": result_charts(publication.curve, label=_label(publication), interactivity=x),
        "points": points,
        "point_columns": POINT_COLUMNS,
        "cliff_points": points_past_a_cliff(points, metric=x),
        "cliff_rule": CLIFF_RULE,
        "provenance": provenance,
        "sources": _sources(publication.record, points),
        "measured_rows": _measured_rows(points, provenance.measured_power),
        "buyer": buyer,
        "page_status": 400 if buyer["errors"] else 200,
        "headline": publication.headline or {},
        "remeasurements": _remeasurements(newest),
        "power_kind": selectors.publication_power_kind(publication),
        "page_title": f"{publication.public_id} {publication.record.system_name}",
        "page_meta": {
            "pk": publication.pk,
            "public_id": publication.public_id,
            "retracted": publication.is_retracted,
        },
    }


@require_GET
def result(request, public_id: str):
    """A published result (retracted ones too, marked): the system, charts, points, power, provenance; the body
    cached under the public generation, the challenges (a member's and the chair's) per visitor."""

    def respond():
        revision = selectors.parse_revision(request.GET.get("revision"))
        inputs = buyer_inputs_from_query(request.GET)
        fragment = public_fragment(
            f"page:result:{public_id}:{revision or 'newest'}:{inputs.cache_key}",
            "leaderboard/result.html",
            lambda: _result_context(public_id, revision, request.GET),
        )
        meta = fragment["meta"]
        user = request.user
        # Who may challenge is the publication's table (an organisation's member, not the result's own, and the
        # chair); a retracted result is not challenged again.
        can_challenge = (
            user.is_authenticated
            and not meta["retracted"]
            and PUBLICATION.allowed(
                user, Publication.objects.select_related("submission").get(pk=meta["pk"]), "challenge"
            )
        )
        challenges = list(
            challenges_visible_to(user)
            .filter(publication_id=meta["pk"])
            .select_related("organisation")
            .order_by("created_at", "pk")
        )
        return render_fragment(
            request,
            fragment,
            after="leaderboard/_challenges.html",
            context={
                "public_id": meta["public_id"],
                "can_challenge": can_challenge,
                "challenges": challenges,
                "outcomes": [c for c in Challenge.Status.choices if c[0] != Challenge.Status.OPEN],
            },
        )

    return public_page(request, respond)


def _history_context(system_id: int) -> dict:
    history = selectors.system_history(system_id)
    record = history[-1].record  # the system as its newest publication froze it
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
    return {
        "record": record,
        "groups": list(groups.values()),
        "facts": record.facts,
        "page_title": f"{record.system_name} · history",
    }


@require_GET
def system_history(request, system_id: int):
    """A system's published curves over time (retracted ones marked), on one chart per benchmark."""

    def respond():
        fragment = public_fragment(
            f"page:history:{system_id}", "leaderboard/history.html", lambda: _history_context(system_id)
        )
        return render_fragment(request, fragment)

    return public_page(request, respond)


# --- Challenges ----------------------------------------------------------------------------------


# --- The submitter's choice of publication date (on the submission page) ------------------------------
