"""The acceptance plan of a published point (docs/tender-desk.md, "Acceptance at 90 %"): what a re-measurement of the
delivered endpoint must reach, and each published re-measurement of the result judged pass or fail with the
arithmetic. Public, like the result page it hangs from; the inputs are in the URL."""

from __future__ import annotations

import math

from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.board.selectors import publication_public
from spotchecks import selectors
from spotchecks.acceptance import AcceptancePlan, acceptance_verdict

SLO_FIELDS = (
    ("ttft_p90_ms_max", "TTFT P90 ≤ (ms)"),
    ("interactivity_min", "Interactivity ≥ (tokens/s/user)"),
)


def _slo(query) -> tuple[dict, list[str]]:
    values, errors = {}, []
    for name, label in SLO_FIELDS:
        raw = (query.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            errors.append(f"{label}: enter a number of at least 0, not '{raw[:20]}'.")
            continue
        values[name] = value
    return values, errors


@require_GET
def acceptance(request, public_id: str):
    """The plan for ?point=r<C> (default: the published point with the highest system_tps) and the SLO given."""
    publication = publication_public(public_id)
    points = [
        p
        for p in (publication.curve or {}).get("points") or []
        if isinstance(p.get("system_tps"), int | float)
    ]
    asked = (request.GET.get("point") or "").strip()
    point = next((p for p in points if f"r{p.get('concurrency')}" == asked), None)
    errors = []
    if asked and point is None:
        errors.append(f"Point: this result has no published point {asked[:20]!r}; choose one of the list.")
    if point is None and points:
        point = max(points, key=lambda p: p["system_tps"])
    slo, slo_errors = _slo(request.GET)
    errors += slo_errors
    context = {
        "publication": publication,
        "record": publication.record,
        "points": points,
        "values": request.GET,
        "fields": [(name, label, request.GET.get(name, "")[:32]) for name, label in SLO_FIELDS],
        "errors": errors,
    }
    if point is not None and not errors:
        plan = AcceptancePlan(
            point=f"r{point['concurrency']}",
            concurrency=int(point["concurrency"]),
            published_system_tps=float(point["system_tps"]),
            ttft_p90_ms_max=slo.get("ttft_p90_ms_max"),
            interactivity_min=slo.get("interactivity_min"),
        )
        context["plan"] = plan.as_dict()
        context["remeasurements"] = [
            {
                "spot_check": spot_check,
                "verdict": acceptance_verdict(
                    plan, concurrency=spot_check.concurrency, measured=spot_check.measured
                ),
            }
            for spot_check in selectors.remeasurements_public(publication)
            if spot_check.concurrency == plan.concurrency and spot_check.measured
        ]
    return render(request, "spotchecks/acceptance.html", context, status=400 if errors else 200)
