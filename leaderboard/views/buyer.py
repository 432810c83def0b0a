"""The buyer's pages: the SLO finder and the procurement report (printable), over the same answers as the public
API (leaderboard.api), which also serves their CSV and JSON."""

from __future__ import annotations

from urllib.parse import urlencode

from django.shortcuts import render
from django.template.loader import get_template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from access.visibility import benchmarks_visible_to
from leaderboard.api.results import SloQuery, public_publications, slo_answer
from leaderboard.cache import cached_response, public_generation
from leaderboard.cliffs import CLIFF_RULE
from leaderboard.exports import procurement_query
from leaderboard.goodput import CONVENTIONS
from leaderboard.procurement import MAX_MODELS, requirements_from_query
from leaderboard.slo import NO_INTERPOLATION
from portal.errors import ApplicationError

PAGE_ROWS = 100  # the page shows the top of the ranking; the CSV and JSON have all of it

# The SLO finder's fields as the form labels them: errors name the label a buyer reads, not the parameter.
SLO_FIELD_LABELS = {
    "benchmark": "Benchmark",
    "ttft_ms": "TTFT per request ≤ (ms)",
    "tpot_ms": "TPOT per request ≤ (ms)",
    "interactivity": "or interactivity ≥ (tokens/s/user)",
    "attainment": "Requests meeting the targets ≥ (%)",
    "ttft_p90_ms_max": "TTFT P90 ≤ (ms)",
    "interactivity_min": "Interactivity P90 ≥ (tokens/s/user)",
    "power_kw_max": "Power cap (kW)",
    "accelerators_max": "Accelerators at most",
    "price_per_accelerator_hour": "Price per accelerator-hour",
    "price_per_node_hour": "Price per node-hour",
    "price_per_system_hour": "Price per system-hour",
    "energy_price_per_kwh": "Energy price per kWh",
    "non_field_errors": "Targets",
}

PROCUREMENT_FIELDS = (
    ("ttft_p90_ms_max", "TTFT P90 ≤ (ms)"),
    ("tpot_ms_max", "TPOT P90 ≤ (ms)"),
    ("interactivity_min", "Interactivity ≥ (tok/s/user)"),
    ("delivery_system_tps_min", "Delivery throughput ≥ (tok/s)"),
    ("expansion_system_tps_min", "Expansion throughput ≥ (tok/s)"),
)


_ROW_CELLS_MAX = 50_000  # a benchmark of 1,000 results has ~15,000 points; ~600 bytes each
_row_cells: dict[tuple, str] = {}
_row_cells_generation: list[int | None] = [None]


def _slo_rows_html(rows: list[dict], metric: str, generation: int | None) -> list[SafeString]:
    """The SLO table's rows. A point's cells (all but its rank) are the same in every answer of one public
    generation, so they are rendered once per process and generation: formatting a hundred rows of numbers was
    most of an answer's time. `generation` is read before the answer is computed, so cells of older data are
    never kept under a newer generation."""
    if generation is None:  # the cache is unreachable: nothing says when the data changes, keep nothing
        _row_cells.clear()
    if _row_cells_generation[0] != generation or len(_row_cells) > _ROW_CELLS_MAX:
        _row_cells.clear()
        _row_cells_generation[0] = generation
    template = get_template("leaderboard/_slo_row_cells.html")
    html = []
    for row in rows:
        key = (row["public_id"], row["concurrency"], metric)
        cells = _row_cells.get(key)
        if cells is None:
            cells = _row_cells[key] = template.render({"row": row, "metric": metric}).split("\n", 1)[1]
        html.append(
            format_html(
                '\n      <tr data-public-id="{}">\n        <td>{}</td>\n{}      </tr>',
                row["public_id"],
                row["rank"] if row.get("rank") is not None else "unranked",
                mark_safe(cells),
            )
        )
    return html


def _public_page(view):
    """Anonymous visitors share one cached copy per URL (the page shows nothing of a signed-in user then)."""

    def wrapped(request, *args, **kwargs):
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        return cached_response(request, lambda: view(request, *args, **kwargs))

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@_public_page
def slo(request):
    """The SLO finder: TTFT P90 at most X ms, interactivity at least Y, optional power and accelerator caps."""
    benchmarks = list(benchmarks_visible_to(None))
    context = {
        "benchmarks": benchmarks,
        "note": NO_INTERPOLATION,
        "conventions": CONVENTIONS,
        "cliff_rule": CLIFF_RULE,
        "values": request.GET,
        "asked": False,
        "labels": SLO_FIELD_LABELS,
    }
    if request.GET.get("benchmark"):
        context["asked"] = True
        generation, _ = public_generation()
        query = SloQuery(data=request.GET)
        if not query.is_valid():
            context["errors"] = {
                SLO_FIELD_LABELS.get(name, name): " ".join(str(e) for e in errs)
                for name, errs in query.errors.items()
            }
        else:
            try:
                answer = slo_answer(query.validated_data)
            except ApplicationError as error:
                context["errors"] = {SLO_FIELD_LABELS["benchmark"]: error.detail}
            else:
                params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
                if answer["mode"] == "per_request":
                    context.update(
                        answer=answer,
                        goal_pct=100 * answer["targets"].attainment,
                        shown_rows=[
                            {
                                **row,
                                **{
                                    f"{p}attainment_pct": 100 * row[f"{p}attainment"]
                                    for p in ("", "ttft_", "tpot_")
                                },
                            }
                            for row in answer["rows"][:PAGE_ROWS]
                        ],
                        json_url="/api/v1/public/slo/?" + urlencode(params),
                        csv_url="/api/v1/public/slo/?"
                        + urlencode({**params, "format": "csv", "limit": 1000}),
                    )
                    return render(request, "leaderboard/slo.html", context)
                context.update(
                    answer=answer,
                    shown_rows=answer["rows"][:PAGE_ROWS],
                    shown_rows_html=_slo_rows_html(
                        answer["rows"][:PAGE_ROWS], answer["interactivity_metric"], generation
                    ),
                    json_url="/api/v1/public/slo/?" + urlencode(params),
                    csv_url="/api/v1/public/slo/?" + urlencode({**params, "format": "csv", "limit": 1000}),
                )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/slo.html", context, status=status)


@_public_page
def procurement(request):
    """The procurement report: per model, the systems whose verified points meet the buyer's requirements."""
    benchmarks = list(benchmarks_visible_to(None))
    filled = [i for i in range(1, MAX_MODELS + 1) if request.GET.get(f"model_{i}")]
    shown = min(MAX_MODELS, max(3, (filled[-1] if filled else 0) + 1))
    rows = [
        {
            "index": i,
            "model": request.GET.get(f"model_{i}", ""),
            "fields": [
                (f"{name}_{i}", label, request.GET.get(f"{name}_{i}", ""))
                for name, label in PROCUREMENT_FIELDS
            ],
        }
        for i in range(1, shown + 1)
    ]
    context = {"benchmarks": benchmarks, "rows": rows, "note": NO_INTERPOLATION, "asked": bool(filled)}
    if filled:
        try:
            requirements = requirements_from_query(request.GET)
        except ValueError as error:
            context["error"] = str(error)
        else:
            params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
            context.update(
                report=procurement_query(public_publications(), requirements),
                json_url="/api/v1/public/procurement/?" + urlencode(params),
                csv_url="/api/v1/public/procurement/?" + urlencode({**params, "format": "csv"}),
            )
    status = 400 if context.get("error") else 200
    return render(request, "leaderboard/procurement.html", context, status=status)
