"""The buyer's pages: the SLO finder and the procurement report (printable), over the same answers as the public
API (leaderboard.api), which also serves their CSV and JSON."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import render
from django.template.defaultfilters import floatformat
from django.template.loader import get_template
from django.utils.formats import get_format, localize
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from access.visibility import benchmarks_visible_to
from leaderboard.api.buyer import SloQuery, procurement_answer, public_benchmarks, slo_answer
from leaderboard.board import selectors
from leaderboard.board.cache import cached_response, public_generation
from leaderboard.board.cliffs import CLIFF_RULE
from leaderboard.board.goodput.targets import CONVENTIONS
from leaderboard.board.procurement import (
    COSTING_FIELDS,
    MAX_MODELS,
    PHASE_FIELDS,
    PHASE_LABELS,
    PHASES,
    RequirementsError,
    parameter_name,
)
from leaderboard.board.slo import NO_INTERPOLATION
from portal.errors import ApplicationError, UnavailableError
from portal.pagination import MAX_OFFSET
from portal.parsers import parse_positive

# the page shows the top of the ranking, 25 rows at a time unless asked (a buyer reads the top systems); the CSV
# and the JSON have all of it
PAGE_ROWS = 25


def _absolute(path: str) -> str:
    """A download link that still works pasted into a script or a spreadsheet: on the portal's own address
    (PORTAL_SITE_URL), never on whatever Host a request carried."""
    return settings.PORTAL_SITE_URL.rstrip("/") + path


def _with_measured_power(rows: list[dict], model_id: str) -> list[dict]:
    """The shown rows, each with its point's tokens/s per measured kW where a power trace was submitted (read once
    per public generation for the benchmark; the API's rows carry the provisioned figures)."""
    measured = selectors.measured_power_of_benchmark(model_id)
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


def _slo_rows_html(
    rows: list[dict], metric: str, generation: int | None, *, priced: bool = False
) -> list[SafeString]:
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
        # the price is the buyer's, not the point's: its cell is written per answer, after the point's cells
        cost = row.get("cost_per_million_tokens")
        priced_cell = (
            format_html(
                '        <td class="num" data-metric="cost_per_million_tokens">{}</td>\n',
                "—" if cost is None else floatformat(cost, 3),
            )
            if priced
            else ""
        )
        # The key figures first (system tokens/s, then the buyer's cost): on a phone they are on screen.
        before, _, after = cells.partition("<!--priced-->\n")
        html.append(
            format_html(
                '\n      <tr data-public-id="{}">\n        <td>{}</td>\n{}{}{}      </tr>',
                row["public_id"],
                row["rank"] if row.get("rank") is not None else "unranked",
                mark_safe(before),
                priced_cell,
                mark_safe(after),
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


class _Cells:
    """How the per-request table writes a value: escaped and localized text, and `floatformat` on the digits."""

    def __init__(self) -> None:
        self.decimal_sep = get_format("DECIMAL_SEPARATOR")
        self.plain_ints = not settings.USE_THOUSAND_SEPARATOR

    def text(self, value) -> str:
        if self.plain_ints and type(value) is int:
            return str(value)
        return conditional_escape(localize(value))

    def figure(self, value, places: int) -> str:
        return _floatformat(value, places, self.decimal_sep)


def _system_cell(row: dict, fmt: _Cells) -> str:
    label = row.get("accelerator_label")
    accelerators = f"<span data-accelerators>{fmt.text(label)}</span> · " if label else ""
    return (
        f'<td>{fmt.text(row["system"])}<br><span class="muted small">{fmt.text(row["organisation"])} · {accelerators}'
        f'<a href="{fmt.text(row["result_url"])}">{fmt.text(row["public_id"])}</a></span></td>'
    )


def _goodput_cell(row: dict, fmt: _Cells) -> str:
    html = f'<td class="num" data-metric="goodput_tps"><strong>{fmt.figure(row["goodput_tps"], 1)}</strong>'
    for name, what in (
        ("goodput_tps_per_accelerator", "/ accel."),
        ("goodput_tps_per_node", "/ node"),
        ("goodput_tps_per_kw", "/ kW"),
    ):
        if row.get(name) is not None:
            html += (
                f'<br><span class="small muted" data-metric="{name}">{fmt.figure(row[name], 1)} {what}</span>'
            )
    if row.get("measured_tps_per_kw") is not None:
        html += (
            '<br><span class="small muted" data-metric="measured_tps_per_kw" title="System tokens/s per measured kW '
            f'(power trace)">{fmt.figure(row["measured_tps_per_kw"], 1)} sys. / measured kW</span>'
        )
    return html + "</td>"


def _cost_cell(row: dict, fmt: _Cells) -> str:
    if row.get("cost_per_million_good_tokens") is None:
        cost = "—"
    else:
        cost = (
            f"<strong>{fmt.figure(row['cost_per_million_good_tokens'], 3)}</strong><br>"
            f'<span class="small muted">{fmt.figure(row.get("cost_per_million_tokens"), 3)} / M tokens</span>'
        )
    return f'<td class="num" data-metric="cost_per_million_good_tokens">{cost}</td>'


def _point_cell(row: dict, fmt: _Cells) -> str:
    cliff = row.get("cliff")
    side = fmt.text(cliff.get("side") or "none") if isinstance(cliff, dict) else "none"
    note = ""
    if cliff:
        at = fmt.text(cliff["cliff"]["after_concurrency"])
        where = f"before the cliff at r{at}" if cliff.get("side") == "before" else f"past the cliff at r{at}"
        note = f'<br><span class="small muted" title="{conditional_escape(CLIFF_RULE)}">{where}</span>'
    return f'<td class="num" data-cliff="{side}">{fmt.text(row["point"])}{note}</td>'


def _figure_cell(name: str, places: int, unit: str = ""):
    """A cell of one figure; a share (0..1) is shown as a percentage."""
    if unit == " %":
        return lambda row, fmt: (
            f'<td class="num" data-metric="{name}">{fmt.figure(100 * row[name], places)} %</td>'
        )
    return lambda row, fmt: f'<td class="num" data-metric="{name}">{fmt.figure(row[name], places)}</td>'


@dataclass(frozen=True)
class GoodputColumn:
    """A column of the per-request answer: its header and how a row's cell is written, in one place."""

    header: str  # the <th>'s HTML
    cell: Callable[[dict, _Cells], str]  # a row's <td>
    priced: bool = False  # shown only when the buyer gave a price


GOODPUT_COLUMNS = (
    GoodputColumn('<th scope="col">#</th>', lambda row, fmt: f"<td>{fmt.text(row['rank'])}</td>"),
    GoodputColumn('<th scope="col">System · result</th>', _system_cell),
    GoodputColumn(
        '<th scope="col" class="num">Goodput tok/s <span class="small muted">/ accel. / node / kW</span></th>',
        _goodput_cell,
    ),
    GoodputColumn('<th scope="col" class="num">Cost / M good tokens</th>', _cost_cell, priced=True),
    GoodputColumn('<th scope="col" class="num">Attainment</th>', _figure_cell("attainment", 1, " %")),
    GoodputColumn('<th scope="col" class="num">Point</th>', _point_cell),
    GoodputColumn('<th scope="col" class="num">Goodput req/s</th>', _figure_cell("goodput_rps", 2)),
    GoodputColumn(
        '<th scope="col" class="num">Good / tracked</th>',
        lambda row, fmt: (
            f'<td class="num" data-metric="good_requests">{fmt.text(row["good_requests"])} / '
            f"{fmt.text(row['tracked_requests'])}</td>"
        ),
    ),
    GoodputColumn('<th scope="col" class="num">TTFT alone</th>', _figure_cell("ttft_attainment", 1, " %")),
    GoodputColumn('<th scope="col" class="num">TPOT alone</th>', _figure_cell("tpot_attainment", 1, " %")),
    GoodputColumn('<th scope="col" class="num">System tok/s</th>', _figure_cell("system_tps", 1)),
    GoodputColumn('<th scope="col" class="num">TTFT P90 (ms)</th>', _figure_cell("ttft_p90_ms", 1)),
    GoodputColumn('<th scope="col" class="num">Interactivity P90</th>', _figure_cell("tps_per_user", 2)),
)


def goodput_table_html(rows: list[dict], *, priced: bool) -> tuple[SafeString, list[SafeString]]:
    """The per-request answer's header row and its rows, written here rather than by a template: every answer's
    figures are new, and a template took ~4 ms for 25 rows (docs/performance.md)."""
    columns = [column for column in GOODPUT_COLUMNS if priced or not column.priced]
    fmt = _Cells()
    header = mark_safe("<tr>" + "".join(column.header for column in columns) + "</tr>")
    html = []
    for row in rows:
        public_id = fmt.text(row["public_id"])
        cells = "\n        ".join(column.cell(row, fmt) for column in columns)
        html.append(
            mark_safe(
                f'\n      <tr id="result-{public_id}" data-public-id="{public_id}" data-point="{fmt.text(row["point"])}">'
                f"\n        {cells}\n      </tr>"
            )
        )
    return header, html


def _page_of(request, total: int) -> dict:
    """Which rows of an answer the page shows (`offset` and `limit`, as the API reads them; 25 from the top unless
    asked), and the links to the next rows, the previous ones and all of them, keeping every input in the URL."""
    limit = parse_positive(
        request.GET.get("limit"), default=PAGE_ROWS, maximum=settings.PORTAL_API_MAX_PAGE_SIZE
    )
    offset = min(parse_positive(request.GET.get("offset"), default=0, maximum=MAX_OFFSET), max(total - 1, 0))
    asked = {
        k: v for k, v in request.GET.items() if v not in ("", None) and k not in ("format", "offset", "limit")
    }

    def url(start: int, size: int) -> str:
        shown = {
            **asked,
            **({"offset": start} if start else {}),
            **({"limit": size} if size != PAGE_ROWS else {}),
        }
        return "?" + urlencode(shown) + "#slo-answer"

    end = min(offset + limit, total)
    everything = min(total, settings.PORTAL_API_MAX_PAGE_SIZE)
    return {
        "asked": asked,
        "offset": offset,
        "limit": limit,
        "first": offset + 1,
        "last": end,
        "total": total,
        "next_count": min(limit, total - end),
        "next_url": url(end, limit) if end < total else None,
        "previous_url": url(max(offset - limit, 0), limit) if offset else None,
        "all_url": url(0, everything) if offset or end < total else None,
        "all_count": everything,
    }


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
    # an anonymous visitor's page is cached per public generation: so is the catalog it lists
    benchmarks = list(benchmarks_visible_to(None)) if request.user.is_authenticated else public_benchmarks()
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
            # the fields marked aria-invalid on the page (static/js/access.js)
            context["error_fields"] = list(query.errors)
        else:
            try:
                answer = slo_answer(query.validated_data, benchmarks=benchmarks)
            except UnavailableError as error:
                context["errors"] = {"Per-request ranking": error.detail}
                context["status"] = error.status_code
                context["unavailable"] = True
            except ApplicationError as error:
                context["errors"] = {SLO_FIELD_LABELS["benchmark"]: error.detail}
                context["error_fields"] = ["benchmark"]
            else:
                params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
                page = _page_of(request, len(answer["rows"]))
                shown = _with_measured_power(
                    answer["rows"][page["offset"] : page["offset"] + page["limit"]],
                    answer["benchmark"].model_id,
                )
                context.update(
                    answer=answer,
                    page=page,
                    json_url=_absolute("/api/v1/public/slo/?" + urlencode(params)),
                    # the whole answer, whichever rows the page shows
                    csv_url=_absolute(
                        "/api/v1/public/slo/?"
                        + urlencode(
                            {**page["asked"], "format": "csv", "limit": settings.PORTAL_API_MAX_PAGE_SIZE}
                        )
                    ),
                )
                if answer["mode"] == "per_request":
                    header, rows_html = goodput_table_html(shown, priced=answer["priced"])
                    context.update(
                        goal_pct=100 * answer["targets"].attainment,
                        goodput_header=header,
                        goodput_rows_html=rows_html,
                    )
                else:
                    context["shown_rows_html"] = _slo_rows_html(
                        shown, answer["interactivity_metric"], generation, priced=answer["priced"]
                    )
    status = context.get("status") or (400 if context.get("errors") else 200)
    response = render(request, "leaderboard/slo.html", context, status=status)
    if status == 503:
        response["Retry-After"] = str(UnavailableError.retry_after_s)
    return response


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
    context = {
        "benchmarks": benchmarks,
        "rows": rows,
        "note": NO_INTERPOLATION,
        "asked": bool(filled),
        "costing": [(name, label, request.GET.get(name, "")[:32]) for name, label in COSTING_FIELDS],
    }
    if filled:
        try:
            answer = procurement_answer(request.GET)
        except RequirementsError as error:
            context["errors"] = error.labelled
            context["error_fields"] = [name for name, _, _ in error.problems]
        else:
            params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
            names = {b.model_id: b.display_name for b in benchmarks}
            report = [{**section, "display_name": names.get(section["model"], "")} for section in answer]
            context.update(
                report=report,
                json_url=_absolute("/api/v1/public/procurement/?" + urlencode(params)),
                csv_url=_absolute("/api/v1/public/procurement/?" + urlencode({**params, "format": "csv"})),
            )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/procurement.html", context, status=status)
