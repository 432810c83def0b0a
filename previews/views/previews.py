"""The organisation's previews (`/previews/`): upload another tool's output as a preview of a system, read its
check beside its own published curves and any published result, re-check or delete it. Every page marks it "not an
MLPerf result"; only the organisation's members see one (access.visibility)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.actors import SUBMITTER_ROLES
from accounts.selectors import user_org_ids
from checker.read import kinds
from checker.recompute.imported import PORTAL_PERCENTILE_DEFINITION
from portal.errors import ApplicationError
from previews import comparison, selectors, services
from previews.forms import PreviewUploadForm
from previews.models import Preview
from previews.workflow import PREVIEW


@login_required
def preview_list(request):
    uploader_orgs = user_org_ids(request.user, roles=SUBMITTER_ROLES)
    form = PreviewUploadForm(org_ids=uploader_orgs) if uploader_orgs else None
    status = 200
    if request.method == "POST":
        if not uploader_orgs:
            raise Http404
        form = PreviewUploadForm(request.POST, request.FILES, org_ids=uploader_orgs)
        if form.is_valid():
            try:
                preview = services.preview_create(
                    actor=request.user,
                    system=form.cleaned_data["system"],
                    benchmark=form.cleaned_data["benchmark"],
                    name=form.cleaned_data["name"],
                    files=form.cleaned_data["files"],
                )
            except ApplicationError as exc:
                form.add_error("files", f"{exc.detail} ({exc.code})")
            else:
                messages.success(request, "Preview uploaded: it is being checked.")
                return redirect("previews:detail", pk=preview.pk)
        status = 400
    previews = selectors.previews_visible_to(request.user)
    return render(request, "previews/list.html", {"previews": previews, "form": form}, status=status)


def _visible(request, pk: int) -> Preview:
    return get_object_or_404(selectors.previews_visible_to(request.user), pk=pk)


@login_required
def preview_detail(request, pk: int):
    preview = _visible(request, pk)
    published = selectors.published_beside(preview.benchmark)
    siblings = selectors.drawable_siblings(preview)
    own_ids = [p.public_id for p in published if p.submission.organisation_id == preview.organisation_id]
    chosen = request.GET.getlist("beside") or own_ids or [p.public_id for p in published[:3]]
    chosen_set = set(chosen)
    curves = [comparison.Curve(f"preview:{preview.pk}", preview.name, preview.curve, preview=True)]
    for sibling in siblings:
        if f"preview:{sibling.pk}" in chosen_set:
            curves.append(
                comparison.Curve(
                    f"preview:{sibling.pk}",
                    sibling.name,
                    sibling.curve,
                    reverse("previews:detail", args=[sibling.pk]),
                    preview=True,
                )
            )
    for publication in published:
        if publication.public_id in chosen_set:
            curves.append(
                comparison.Curve(
                    f"result:{publication.public_id}",
                    f"{publication.record.system_name} · {publication.public_id}",
                    publication.curve,
                    reverse("results:detail", args=[publication.public_id]),
                )
            )
    baselines = [(f"preview:{s.pk}", f"{s.name} (preview)", s.curve) for s in siblings] + [
        (f"result:{p.public_id}", f"{p.record.system_name} · {p.public_id} (published)", p.curve)
        for p in published
    ]
    baseline_key = request.GET.get("baseline") or (
        f"result:{own_ids[0]}" if own_ids else (baselines[0][0] if baselines else "")
    )
    baseline = next((b for b in baselines if b[0] == baseline_key), None)
    rows = comparison.differences(preview.curve, baseline[2]) if baseline else []
    only_mine, only_theirs = comparison.unmatched(preview.curve, baseline[2]) if baseline else ([], [])
    return render(
        request,
        "previews/detail.html",
        {
            "preview": preview,
            "charts": comparison.charts(curves, benchmark=preview.benchmark)
            if preview.in_state("drawable")
            else [],
            "beside_options": [
                {
                    "key": p.public_id,
                    "label": f"{p.record.system_name} · {p.public_id}",
                    "note": "yours" if p.public_id in own_ids else "",
                    "checked": p.public_id in chosen_set,
                }
                for p in published
            ]
            + [
                {
                    "key": f"preview:{s.pk}",
                    "label": s.name,
                    "note": "preview",
                    "checked": f"preview:{s.pk}" in chosen_set,
                }
                for s in siblings
            ],
            "baselines": baselines,
            "baseline": baseline,
            "rows": rows,
            "only_mine": only_mine,
            "only_theirs": only_theirs,
            "points": (preview.result or {}).get("points") or [],
            "percentiles": _percentile_note(preview),
            "can_change": PREVIEW.allowed(request.user, preview, "recheck")
            or PREVIEW.allowed(request.user, preview, "delete"),
            "checking": preview.in_state("checking"),
        },
    )


def _percentile_note(preview) -> dict | None:
    """Why the tool's own TTFT P90 and the portal's differ: each one's definition, and the first point where both
    exist as the example (its two figures and the difference)."""
    try:
        importer = kinds.kind(preview.tool) if preview.tool else None
    except KeyError:
        importer = None
    definition = getattr(importer, "percentile_definition", "")
    if not definition:
        return None
    example = None
    for point in (preview.result or {}).get("points") or []:
        tool = (point.get("reported") or {}).get("ttft_ms_p90")
        portal = (point.get("portal") or {}).get("ttft_p90_ms")
        if isinstance(tool, int | float) and isinstance(portal, int | float) and tool:
            difference = (portal - tool) / tool
            example = {
                "label": point.get("label"),
                "tool": tool,
                "portal": portal,
                "difference_text": f"{difference:+.1%}".replace("-", "−"),
            }
            break
    return {"tool": definition, "portal": PORTAL_PERCENTILE_DEFINITION, "example": example}


@login_required
@require_POST
def preview_recheck(request, pk: int):
    preview = _visible(request, pk)
    try:
        services.preview_recheck(actor=request.user, preview=preview)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
    return redirect("previews:detail", pk=pk)


@login_required
@require_POST
def preview_delete(request, pk: int):
    preview = _visible(request, pk)
    try:
        services.preview_delete(actor=request.user, preview=preview)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect("previews:detail", pk=pk)
    messages.success(request, "Preview deleted.")
    return redirect("previews:list")
