"""The tender desk's pages (docs/tender-desk.md): site sizing, the claims check, tender scoring and
throughput at fixed interactivity levels, over the same answer as the public API
(leaderboard.api.tender), which also serves its JSON and CSV. Every input stays in the page's URL."""

from __future__ import annotations

from urllib.parse import urlencode

from django.shortcuts import render

from access.visibility import benchmarks_visible_to
from leaderboard.api.tender import (
    CLAIMS_LABELS,
    CLAIMS_NOTE,
    LEVELS_NOTE,
    SCORING_NOTE,
    SIZING_LABELS,
    SIZING_NOTE,
    ClaimsQuery,
    SizingQuery,
    claims_answer,
    levels_answer,
    scoring_answer,
    sizing_answer,
)
from leaderboard.board.claims import CLAIM_FIGURES
from leaderboard.board.procurement import (
    COSTING_FIELDS,
    PHASE_FIELDS,
    PHASE_LABELS,
    PHASES,
    RequirementsError,
    parameter_name,
)
from leaderboard.board.scoring import CRITERIA, MAX_CRITERIA
from leaderboard.board.tender import DEFAULT_PUE
from leaderboard.views.buyer import _public_page
from portal.errors import ApplicationError


@_public_page
def sizing(request):
    """Site sizing: how many replicas, accelerators, nodes and megawatts serve U users per phase at the SLO."""
    context = {
        "benchmarks": list(benchmarks_visible_to(None)),
        "labels": SIZING_LABELS,
        "values": request.GET,
        "note": SIZING_NOTE,
        "default_pue": DEFAULT_PUE,
        "asked": bool(request.GET.get("benchmark")),
    }
    if context["asked"]:
        query = SizingQuery(data=request.GET)
        if not query.is_valid():
            context["errors"] = [
                f"{SIZING_LABELS.get(name, 'SLO')}: {' '.join(str(e) for e in errors)}"
                for name, errors in query.errors.items()
            ]
        else:
            try:
                answer = sizing_answer(query.validated_data)
            except ApplicationError as error:
                context["errors"] = [f"{SIZING_LABELS['benchmark']}: {error.detail}"]
            else:
                params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
                phases = []
                for phase, users in answer["ask"].phases():
                    rows = [row for row in answer["rows"] if row["phase"] == phase]
                    phases.append(
                        {
                            "name": phase,
                            "users": users,
                            "rows": rows,
                            "meeting": sum(1 for row in rows if row["meets"]),
                        }
                    )
                context.update(
                    answer=answer,
                    phases=phases,
                    json_url="/api/v1/public/sizing/?" + urlencode(params),
                    csv_url="/api/v1/public/sizing/?" + urlencode({**params, "format": "csv"}),
                )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/sizing.html", context, status=status)


@_public_page
def claims(request):
    """The claims check: a bid's claimed figures for a system, each judged against the published recomputed points."""
    context = {
        "benchmarks": list(benchmarks_visible_to(None)),
        "labels": CLAIMS_LABELS,
        "figures": [
            (name, CLAIMS_LABELS[name], request.GET.get(name, "")[:32]) for name, _, _ in CLAIM_FIGURES
        ],
        "values": request.GET,
        "note": CLAIMS_NOTE,
        "asked": bool(request.GET.get("benchmark")),
    }
    if context["asked"]:
        query = ClaimsQuery(data=request.GET)
        if not query.is_valid():
            context["errors"] = [
                f"{CLAIMS_LABELS.get(name, 'Claim')}: {' '.join(str(e) for e in errors)}"
                for name, errors in query.errors.items()
            ]
        else:
            try:
                context["answer"] = claims_answer(query.validated_data)
            except ApplicationError as error:
                context["errors"] = [f"{CLAIMS_LABELS['benchmark']}: {error.detail}"]
            else:
                params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
                context["json_url"] = "/api/v1/public/claims/?" + urlencode(params)
                context["csv_url"] = "/api/v1/public/claims/?" + urlencode({**params, "format": "csv"})
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/claims.html", context, status=status)


@_public_page
def tender_score(request):
    """Tender scoring: the evaluator's criteria and weights over each phase's eligible systems, with the arithmetic
    of every score and links to its point and evidence pack (printable; the CSV is the API's)."""
    shown_criteria = max(
        3,
        min(
            MAX_CRITERIA,
            1 + max([i for i in range(1, MAX_CRITERIA + 1) if request.GET.get(f"criterion_{i}")] or [0]),
        ),
    )
    context = {
        "benchmarks": list(benchmarks_visible_to(None)),
        "model": request.GET.get("model_1", ""),
        "phases": [
            {
                "name": phase,
                "label": PHASE_LABELS[phase],
                "fields": [
                    (
                        parameter_name(phase, name, 1),
                        label,
                        request.GET.get(parameter_name(phase, name, 1), "")[:32],
                    )
                    for name, label in PHASE_FIELDS
                ],
            }
            for phase in PHASES
        ],
        "costing": [(name, label, request.GET.get(name, "")[:32]) for name, label in COSTING_FIELDS],
        "criteria_rows": [
            {
                "index": i,
                "criterion": request.GET.get(f"criterion_{i}", ""),
                "weight": request.GET.get(f"weight_{i}", "")[:32],
                "direction": request.GET.get(f"direction_{i}", ""),
            }
            for i in range(1, shown_criteria + 1)
        ],
        "choices": [(name, label, direction) for name, (label, direction) in CRITERIA.items()],
        "note": SCORING_NOTE,
        "asked": bool(request.GET.get("model_1")),
    }
    if context["asked"]:
        try:
            answer = scoring_answer(request.GET)
        except RequirementsError as error:
            context["errors"] = error.labelled
        except ValueError as error:
            context["errors"] = [str(error)]
        else:
            params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
            context.update(
                answer=answer,
                json_url="/api/v1/public/tender-score/?" + urlencode(params),
                csv_url="/api/v1/public/tender-score/?" + urlencode({**params, "format": "csv"}),
            )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/tender_score.html", context, status=status)


@_public_page
def levels(request):
    """Throughput at fixed interactivity levels per system, grouped by accelerator count, with the area under the
    step function and % against a chosen baseline system."""
    context = {
        "benchmarks": list(benchmarks_visible_to(None)),
        "values": request.GET,
        "note": LEVELS_NOTE,
        "asked": bool(request.GET.get("benchmark")),
    }
    if context["asked"]:
        try:
            answer = levels_answer(request.GET)
        except ApplicationError as error:
            context["errors"] = [f"Benchmark: {error.detail}"]
        except ValueError as error:
            context["errors"] = [str(error)]
        else:
            params = {k: v for k, v in request.GET.items() if v not in ("", None) and k != "format"}
            for group in answer["groups"]:
                for row in group["rows"]:
                    row["cells"] = list(
                        zip(answer["levels"], row["at_levels"], row["vs_baseline_pct"], strict=True)
                    )
            context.update(
                answer=answer,
                systems=[row for group in answer["groups"] for row in group["rows"]],
                json_url="/api/v1/public/levels/?" + urlencode(params),
                csv_url="/api/v1/public/levels/?" + urlencode({**params, "format": "csv"}),
            )
    status = 400 if context.get("errors") else 200
    return render(request, "leaderboard/levels.html", context, status=status)
