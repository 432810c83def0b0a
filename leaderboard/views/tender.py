"""The tender desk's pages (docs/tender-desk.md): site sizing, the claims check, tender scoring and
throughput at fixed interactivity levels, over the same answer as the public API
(leaderboard.api.tender), which also serves its JSON and CSV. Every input stays in the page's URL."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from access.visibility import benchmarks_visible_to, get_visible_or_404
from accounts.selectors import user_organisations
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
    score_sheet_rows,
    scoring_answer,
    sizing_answer,
)
from leaderboard.board import exports, saved_tenders, selectors
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
from leaderboard.board.tender_inputs import TENDER_PARAMETERS, tender_parameters
from leaderboard.models import SavedTender
from leaderboard.views.buyer import _public_page
from leaderboard.workflow import TENDER
from portal.errors import ApplicationError
from portal.parsers import parse_id

SIZING_ROWS_SHOWN = 25  # a phase's rows on the page (the JSON pages through all of them, the CSV holds all)


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
                    start, count = answer["rows"].phase(phase)
                    phases.append(
                        {
                            "name": phase,
                            "users": users,
                            # the systems that meet first, fewest accelerators first: the page shows the first 25
                            "rows": answer["rows"][start : start + min(count, SIZING_ROWS_SHOWN)],
                            "systems": count,
                            "meeting": answer["rows"].meeting.get(phase, 0),
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
            params = tender_parameters(request.GET)
            context.update(
                answer=answer,
                json_url="/api/v1/public/tender-score/?" + urlencode(params),
                csv_url="/api/v1/public/tender-score/?" + urlencode({**params, "format": "csv"}),
                save_fields=sorted(params.items()),
            )
    if request.user.is_authenticated:  # the saving part: never in the anonymous (cached) page
        context["organisations"] = _organisations(request)
        context["saved"] = list(selectors.saved_tenders_of(request.user))
        editing = next((t for t in context["saved"] if str(t.uuid) == request.GET.get("tender", "")), None)
        if editing is not None and TENDER.allowed(request.user, editing, "edit"):
            context["editing"] = editing
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


# --- Saved tenders ---------------------------------------------------------------------------------------------


def _saved(request, pk) -> SavedTender:
    """A saved tender the user may see: its organisation's while private, everyone's once shared; else 404."""
    return get_visible_or_404(request.user, SavedTender, uuid=pk)


def _organisations(request) -> list:
    return user_organisations(request.user) if request.user.is_authenticated else []


def _saved_context(request, tender: SavedTender) -> dict:
    context = {
        "tender": tender,
        "shared": tender.in_state("shared"),
        "parameters": [
            (name, tender.definition[name]) for name in TENDER_PARAMETERS if name in tender.definition
        ],
        "note": SCORING_NOTE,
        "actions": TENDER.allowed_actions(request.user, tender),
        "edit_url": "/leaderboard/tender/?" + urlencode({**tender.definition, "tender": str(tender.uuid)}),
        "query_url": "/leaderboard/tender/?" + urlencode(tender.definition),
        "csv_url": reverse("leaderboard:tender_saved_csv", kwargs={"pk": tender.uuid}),
        "print_url": reverse("leaderboard:tender_saved_print", kwargs={"pk": tender.uuid}),
        "page_url": reverse("leaderboard:tender_saved", kwargs={"pk": tender.uuid}),
    }
    try:
        context["answer"] = scoring_answer(tender.definition)
    except RequirementsError as error:  # a benchmark retired since: say so, never a 500
        context["errors"] = error.labelled
    return context


def tender_saved(request, pk):
    """A saved tender at its stable address: its definition and score sheets from the published evidence as it is
    now; its organisation's members edit, share, make private or delete it here."""
    tender = _saved(request, pk)
    return render(request, "leaderboard/tender_saved.html", _saved_context(request, tender))


def tender_saved_print(request, pk):
    """The printable score sheet of a saved tender (no forms, no navigation when printed)."""
    tender = _saved(request, pk)
    context = {**_saved_context(request, tender), "printable": True}
    return render(request, "leaderboard/tender_saved.html", context)


def tender_saved_csv(request, pk):
    """The score sheet of a saved tender as CSV: a row per phase and system (the score-sheet API's columns)."""
    tender = _saved(request, pk)
    context = _saved_context(request, tender)
    if "answer" not in context:
        return HttpResponse(
            "The tender cannot be scored: " + " ".join(context["errors"]) + "\n",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    response = HttpResponse(
        exports.rows_to_csv(score_sheet_rows(context["answer"])), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="tender-{tender.uuid}.csv"'
    return response


def _not_saved(request, error: RequirementsError) -> None:
    """The scoring page names the definition's bad fields itself (it reads the same parameters); the message says
    the tender was not saved, and names only what the page cannot (the name)."""
    named = [
        sentence
        for (parameter, _, _), sentence in zip(error.problems, error.labelled, strict=True)
        if parameter == "name"
    ]
    messages.error(
        request,
        " ".join(["The tender was not saved.", *named])
        if named
        else "The tender was not saved: correct the fields named below.",
    )


def _refused(request, error: ApplicationError) -> None:
    messages.error(request, error.detail)


@login_required
@require_POST
def tender_save(request):
    """Save the tender of the scoring form under a name, private to the author's organisation."""
    organisation = request.POST.get("organisation") or None
    try:
        tender = saved_tenders.tender_save(
            actor=request.user,
            query=request.POST,
            name=request.POST.get("name", ""),
            organisation_id=parse_id(organisation),
        )
    except RequirementsError as error:
        _not_saved(request, error)
        return redirect("/leaderboard/tender/?" + urlencode(tender_parameters(request.POST)))
    except ApplicationError as error:
        _refused(request, error)
        return redirect("/leaderboard/tender/?" + urlencode(tender_parameters(request.POST)))
    messages.success(
        request, f"Tender “{tender.name}” saved: private to {tender.organisation.name} until shared."
    )
    return redirect("leaderboard:tender_saved", pk=tender.uuid)


@login_required
@require_POST
def tender_saved_edit(request, pk):
    """Replace a saved tender's definition (and name) with the scoring form's; its address stays."""
    tender = _saved(request, pk)
    try:
        saved_tenders.tender_edit(
            actor=request.user, tender=tender, query=request.POST, name=request.POST.get("name")
        )
    except RequirementsError as error:
        _not_saved(request, error)
        return redirect(
            "/leaderboard/tender/?"
            + urlencode({**tender_parameters(request.POST), "tender": str(tender.uuid)})
        )
    except ApplicationError as error:
        _refused(request, error)
        return redirect("leaderboard:tender_saved", pk=tender.uuid)
    messages.success(request, "Tender saved.")
    return redirect("leaderboard:tender_saved", pk=tender.uuid)


def _transition(request, pk, action: str, said: str):
    tender = _saved(request, pk)
    try:
        saved_tenders.tender_transition(actor=request.user, tender=tender, action=action)
    except ApplicationError as error:
        _refused(request, error)
    else:
        messages.success(request, said)
    return redirect("leaderboard:tender_saved", pk=tender.uuid)


@login_required
@require_POST
def tender_saved_share(request, pk):
    return _transition(request, pk, "share", "Tender shared: anyone with its address can read it.")


@login_required
@require_POST
def tender_saved_unshare(request, pk):
    return _transition(request, pk, "unshare", "Tender made private to your organisation again.")


@login_required
@require_POST
def tender_saved_delete(request, pk):
    tender = _saved(request, pk)
    try:
        saved_tenders.tender_delete(actor=request.user, tender=tender)
    except ApplicationError as error:
        _refused(request, error)
        return redirect("leaderboard:tender_saved", pk=tender.uuid)
    messages.success(request, f"Tender “{tender.name}” deleted.")
    return redirect("leaderboard:tender_score")
