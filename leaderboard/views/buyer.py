"""The buyer's pages: the SLO finder and the procurement report (printable), over the same answers as the public
API (leaderboard.api), which also serves their CSV and JSON."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import render
from django.template.defaultfilters import floatformat
from django.template.loader import get_template
from django.utils.formats import get_format, localize
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from access.visibility import benchmarks_visible_to
from leaderboard import selectors
from leaderboard.api.buyer import SloQuery, slo_answer
from leaderboard.api.results import public_publications
from leaderboard.cache import cached_response, public_generation
from leaderboard.cliffs import CLIFF_RULE
from leaderboard.exports import procurement_query
from leaderboard.goodput import CONVENTIONS
from leaderboard.procurement import (
    MAX_MODELS,
    PHASE_FIELDS,
    PHASE_LABELS,
    PHASES,
    RequirementsError,
    parameter_name,
    requirements_from_query,
)
from leaderboard.slo import NO_INTERPOLATION
from portal.errors import ApplicationError

PAGE_ROWS = 100  # the page shows the top of the ranking; the CSV and JSON have all of it


def _with_measured_power(rows: list[dict]) -> list[dict]:
    """The shown rows, each with its point's tokens/s per measured kW where a power trace was submitted (one
    query for the page; the API's rows carry the provisioned figures)."""
    measured = selectors.measured_power_of_results(list(dict.fromkeys(row["public_id"] for row in rows)))
    out = []
    for row in rows:
        trace = (measured.get(row["public_id"]) or {}).get(row.get("concurrency")) or {}
        value = trace.get("measured_tps_per_kw")
        out.append({**row, "measured_tps_per_kw": value if isinstance(value, int | float) else None})
    return out


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


def _floatformat(value, places: int, decimal_sep: str) -> str:
    """Django's `floatformat:places` (places >= 1) computed directly for a finite number written without an
    exponent, when no thousand separator is set: the filter rounds the decimal digits of the number's shortest
    repr half up (away from zero), which is what is done here on the digits; it also looks up the active
    language's formats on every call, which was most of a page of numbers. Anything else goes to the filter
    (tests/leaderboard/test_goodput.py compares the two)."""
    if type(value) not in (float, int) or settings.USE_THOUSAND_SEPARATOR:
        return floatformat(value, places)
    text = str(value)
    if "e" in text or "n" in text:  # an exponent, inf or nan
        return floatformat(value, places)
    negative = text[0] == "-"
    whole, _, fraction = text.lstrip("-").partition(".")
    if len(fraction) <= places:
        fraction = fraction.ljust(places, "0")
    else:
        rounded_up = fraction[places] >= "5"
        fraction = fraction[:places]
        if rounded_up:
            digits = str(int(whole + fraction) + 1).rjust(len(whole) + places, "0")
            whole, fraction = digits[:-places], digits[-places:]
    if negative and (whole.strip("0") or fraction.strip("0")):
        whole = "-" + whole
    return f"{whole}{decimal_sep}{fraction}"


_ROW_PARTS_MAX = 50_000
_row_parts: dict[tuple, tuple[str, str, str]] = {}
_row_parts_generation: list[int | None] = [None]


def _goodput_rows_html(rows: list[dict], *, priced: bool, generation: int | None) -> list[SafeString]:
    """The per-request SLO table's rows, exactly as templates/leaderboard/_slo_goodput_row.html renders them (its
    definition: tests/leaderboard/test_goodput.py compares the two). Written here because every answer's figures
    are new, and rendering a hundred rows through the template was most of a page. What a row shows of its point
    alone (system, result, cliff, the percentile view) is formatted once per process and public generation."""
    if generation is None or _row_parts_generation[0] != generation or len(_row_parts) > _ROW_PARTS_MAX:
        _row_parts.clear()
        _row_parts_generation[0] = generation
    sep = get_format("DECIMAL_SEPARATOR")
    plain_ints = not settings.USE_THOUSAND_SEPARATOR

    def text(value) -> str:
        if plain_ints and type(value) is int:
            return str(value)
        return conditional_escape(localize(value))

    def figure(value, places: int) -> str:
        return _floatformat(value, places, sep)

    html = []
    for row in rows:
        # a curve may list one concurrency twice: its figures are part of what names a point's parts
        key = (row["public_id"], row["point"], row["system_tps"], row["ttft_p90_ms"], row["tps_per_user"])
        parts = _row_parts.get(key) if generation is not None else None
        if parts is None:
            public_id, point = text(row["public_id"]), text(row["point"])
            label = row.get("accelerator_label")
            accelerators = f"<span data-accelerators>{text(label)}</span> · " if label else ""
            cliff = row.get("cliff")
            side = text(cliff.get("side") or "none") if isinstance(cliff, dict) else "none"
            cliff_note = ""
            if cliff:
                at = text(cliff["cliff"]["after_concurrency"])
                where = (
                    f"before the cliff at r{at}"
                    if cliff.get("side") == "before"
                    else f"past the cliff at r{at}"
                )
                cliff_note = (
                    f'<br><span class="small muted" title="{conditional_escape(CLIFF_RULE)}">{where}</span>'
                )
            parts = (
                f'\n      <tr id="result-{public_id}" data-public-id="{public_id}" data-point="{point}">'
                "\n        <td>",
                f'</td>\n        <td>{text(row["system"])}<br><span class="muted small">{text(row["organisation"])} · '
                f'{accelerators}<a href="{text(row["result_url"])}">{public_id}</a></span></td>'
                '\n        <td class="num" data-metric="goodput_tps">',
                f'\n        <td class="num" data-cliff="{side}">{point}{cliff_note}</td>'
                '\n        <td class="num" data-metric="goodput_rps">',
                f'\n        <td class="num">{figure(row["system_tps"], 1)}</td>'
                f'\n        <td class="num">{figure(row["ttft_p90_ms"], 1)}</td>'
                f'\n        <td class="num">{figure(row["tps_per_user"], 2)}</td>'
                "\n      </tr>\n    ",
            )
            if generation is not None:
                _row_parts[key] = parts
        goodput = f"<strong>{figure(row['goodput_tps'], 1)}</strong>"
        if row.get("goodput_tps_per_accelerator") is not None:
            goodput += f'<br><span class="small muted">{figure(row["goodput_tps_per_accelerator"], 1)} / accel.</span>'
        if row.get("goodput_tps_per_node") is not None:
            goodput += (
                '<br><span class="small muted" data-metric="goodput_tps_per_node">'
                f"{figure(row['goodput_tps_per_node'], 1)} / node</span>"
            )
        if row.get("goodput_tps_per_kw") is not None:
            goodput += (
                '<br><span class="small muted" data-metric="goodput_tps_per_kw">'
                f"{figure(row['goodput_tps_per_kw'], 1)} / kW</span>"
            )
        if row.get("measured_tps_per_kw") is not None:
            goodput += (
                '<br><span class="small muted" data-metric="measured_tps_per_kw" title="System tokens/s per measured '
                f'kW (power trace)">{figure(row["measured_tps_per_kw"], 1)} sys. / measured kW</span>'
            )
        if priced:
            if row.get("cost_per_million_good_tokens") is not None:
                cost = (
                    f"<strong>{figure(row['cost_per_million_good_tokens'], 3)}</strong><br>"
                    f'<span class="small muted">{figure(row.get("cost_per_million_tokens"), 3)} / M tokens</span>'
                )
            else:
                cost = "—"
            cost = f'\n        <td class="num" data-metric="cost_per_million_good_tokens">{cost}</td>'
        else:
            cost = "\n        "
        html.append(
            mark_safe(
                f"{parts[0]}{text(row['rank'])}{parts[1]}{goodput}</td>"
                f'\n        <td class="num" data-metric="attainment">{figure(row["attainment_pct"], 1)} %</td>'
                f"{cost}{parts[2]}{figure(row['goodput_rps'], 2)}</td>"
                f'\n        <td class="num" data-metric="good_requests">{text(row["good_requests"])} / '
                f"{text(row['tracked_requests'])}</td>"
                f'\n        <td class="num" data-metric="ttft_attainment">{figure(row["ttft_attainment_pct"], 1)} %</td>'
                f'\n        <td class="num" data-metric="tpot_attainment">{figure(row["tpot_attainment_pct"], 1)} %</td>'
                f"{parts[3]}"
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
                    shown = [
                        {
                            **row,
                            **{
                                f"{p}attainment_pct": 100 * row[f"{p}attainment"]
                                for p in ("", "ttft_", "tpot_")
                            },
                        }
                        for row in _with_measured_power(answer["rows"][:PAGE_ROWS])
                    ]
                    context.update(
                        answer=answer,
                        goal_pct=100 * answer["targets"].attainment,
                        shown_rows=shown,
                        goodput_rows_html=_goodput_rows_html(
                            shown, priced=answer["priced"], generation=generation
                        ),
                        json_url="/api/v1/public/slo/?" + urlencode(params),
                        csv_url="/api/v1/public/slo/?"
                        + urlencode({**params, "format": "csv", "limit": 1000}),
                    )
                    return render(request, "leaderboard/slo.html", context)
                shown = _with_measured_power(answer["rows"][:PAGE_ROWS])
                context.update(
                    answer=answer,
                    shown_rows=shown,
                    shown_rows_html=_slo_rows_html(shown, answer["interactivity_metric"], generation),
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
    shown = min(MAX_MODELS, max(2, (filled[-1] if filled else 0) + 1))
    rows = [
        {
            "index": i,
            "model": request.GET.get(f"model_{i}", ""),
            "phases": [
                {
                    "name": phase,
                    "label": PHASE_LABELS[phase],
                    "fields": [
                        (
                            parameter_name(phase, name, i),
                            label,
                            request.GET.get(parameter_name(phase, name, i), "")[:32],
                        )
                        for name, label in PHASE_FIELDS
                    ],
                }
                for phase in PHASES
            ],
        }
        for i in range(1, shown + 1)
    ]
    context = {"benchmarks": benchmarks, "rows": rows, "note": NO_INTERPOLATION, "asked": bool(filled)}
    if filled:
        try:
            requirements = requirements_from_query(request.GET)
        except RequirementsError as error:
            context["errors"] = error.labelled
        else:
            params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
            names = {b.model_id: b.display_name for b in benchmarks}
            report = [
                {**section, "display_name": names.get(section["model"], "")}
                for section in procurement_query(public_publications(), requirements)
            ]
            context.update(
                report=report,
                json_url="/api/v1/public/procurement/?" + urlencode(params),
                csv_url="/api/v1/public/procurement/?" + urlencode({**params, "format": "csv"}),
            )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/procurement.html", context, status=status)
