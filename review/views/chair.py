"""HTML pages of the chair: the dashboard (unassigned, overdue, stuck, awaiting audit, waivers requested), one page
per submission to assign (by hand or N drawn), release, waive and reject, and the conflicts of interest (the chair
declares pinned conflicts; an organisation's admins declare and remove their own organisation's other ones).

Submissions and conflicts are looked up through access.visibility first (404 for what the user may not see);
chair-only pages answer 403 to anyone else. Refusals of the services become messages on the page.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import conflicts_visible_to, get_visible_or_404
from accounts.models import Membership, Organisation
from accounts.selectors import user_org_ids
from leaderboard.board.selectors import challenges_open
from portal.errors import ApplicationError
from portal.pages import ReasonForm
from portal.parsers import parse_id
from review import lifecycle, selectors
from review.models import Conflict, ReviewAssignment
from review.services import conflicts as conflicts_services
from review.services.assignments import assignment_create, assignment_release, assignments_draw
from review.views.auditor import back_to, verdicts
from submissions.models import Submission
from submissions.selectors import check_run_findings, check_run_latest


class DrawForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=10, required=False)


class ConflictForm(forms.Form):
    organisation = forms.ModelChoiceField(queryset=Organisation.objects.none(), empty_label=None)
    other = forms.ModelChoiceField(queryset=Organisation.objects.all(), empty_label=None)
    kind = forms.ChoiceField(choices=Conflict.Kind.choices)
    reason = forms.CharField(max_length=2000, strip=True, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organisation"].queryset = conflict_organisations_for(user)


def conflict_organisations_for(user):
    """The organisations the user declares conflicts for: all of them (chair) or those they administer."""
    if can(user, "chair"):
        return Organisation.objects.all()
    return Organisation.objects.filter(pk__in=user_org_ids(user, roles=(Membership.Role.ORG_ADMIN,)))


def _require_chair(user) -> None:
    if not can(user, "chair"):
        raise PermissionDenied("Only the chair has this page.")


@login_required
@require_GET
def dashboard(request):
    _require_chair(request.user)
    board = selectors.chair_dashboard(now=timezone.now())
    return render(
        request,
        "review/chair_dashboard.html",
        {
            "board": board,
            "open_challenges": challenges_open(),
            "waiver_groups": selectors.waiver_groups(board.waivers_requested),
            "overdue_count": len(board.overdue_assignments) + len(board.overdue_objections),
            "now": timezone.now(),
            "per_submission": _default_count(),
        },
    )


def _default_count() -> int:

    return settings.PORTAL_REVIEWERS_PER_SUBMISSION


def _chair_page(submission: Submission) -> str:
    return reverse("review:chair_submission", args=[submission.pk])


@login_required
@require_GET
def chair_submission(request, pk: int):
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    _require_chair(request.user)
    version = submission.submitted_version
    check_run = check_run_latest(version) if version is not None else None
    organisations = Organisation.objects.in_bulk()
    eligible = [
        {"user": user, "organisation": organisations.get(organisation_id)}
        for user, organisation_id in selectors.eligible_reviewers(submission)
    ]
    waivers = {}
    if version is not None:
        waivers = {(w.rule, w.point, w.file): w for w in selectors.waivers_of(version)}
    findings = []
    if check_run is not None:
        for finding in check_run_findings(check_run).filter(severity="error"):
            findings.append(
                {
                    "finding": finding,
                    "waiver": waivers.get((finding.rule, finding.point or "", finding.file or "")),
                }
            )
    shown = verdicts(check_run)
    context = {
        "submission": submission,
        "version": version,
        "check_run": check_run,
        "verdicts": shown,
        "waived_errors": (shown["ours"] or {}).get("waived", 0),  # the badge's "passed with N waived"
        "assignments": list(
            ReviewAssignment.objects.filter(submission=submission).select_related(
                "reviewer", "organisation", "assigned_by"
            )
        ),
        "eligible": eligible,
        "findings": findings,
        "waivers": list(waivers.values()),
        "open_objections": list(selectors.open_objections(submission).select_related("author")),
        "takes_reviewers": lifecycle.allowed(request.user, submission, "assign"),
        "can_reject": any(
            a.action == "reject" and a.enabled for a in lifecycle.allowed_actions(request.user, submission)
        ),
        "per_submission": _default_count(),
        "now": timezone.now(),
    }
    return render(request, "review/chair_submission.html", context)


@login_required
@require_POST
def assign(request, pk: int):
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    _require_chair(request.user)
    reviewer = get_user_model().objects.filter(pk=parse_id(request.POST.get("reviewer", "")) or 0).first()
    if reviewer is None:
        messages.error(request, "Not assigned: pick a reviewer.")
        return back_to(request, _chair_page(submission))
    try:
        assignment = assignment_create(submission=submission, reviewer=reviewer, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, f"Not assigned: {exc.detail}")
    else:
        messages.success(request, f"{reviewer} asked to review by {assignment.due_at:%Y-%m-%d}.")
    return back_to(request, _chair_page(submission))


@login_required
@require_POST
def draw(request, pk: int):
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    _require_chair(request.user)
    form = DrawForm(request.POST)
    count = form.cleaned_data.get("count") if form.is_valid() else None
    try:
        drawn = assignments_draw(submission=submission, actor=request.user, count=count)
    except ApplicationError as exc:
        messages.error(request, f"No reviewers drawn: {exc.detail}")
    else:
        names = ", ".join(str(a.reviewer) for a in drawn)
        messages.success(request, f"{len(drawn)} reviewer{'s' if len(drawn) != 1 else ''} asked: {names}.")
    return back_to(request, _chair_page(submission))


@login_required
@require_POST
def release(request, assignment_id: int):
    assignment = get_visible_or_404(request.user, ReviewAssignment, pk=assignment_id)
    get_visible_or_404(request.user, Submission, pk=assignment.submission_id)
    _require_chair(request.user)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not released: say why (the reviewer reads it).")
        return back_to(request, _chair_page(assignment.submission))
    try:
        released = assignment_release(
            assignment=assignment, actor=request.user, reason=form.cleaned_data["reason"]
        )
    except ApplicationError as exc:
        messages.error(request, f"Not released: {exc.detail}")
    else:
        if released:
            messages.success(request, f"{assignment.reviewer} released.")
        else:
            messages.warning(request, f"{assignment.reviewer} was no longer assigned.")
    return back_to(request, _chair_page(assignment.submission))


# --- Conflicts of interest ------------------------------------------------------------------------


@login_required
@require_GET
def conflicts(request):
    return _conflicts_page(request)


def _conflicts_page(request, form: ConflictForm | None = None):
    user = request.user
    declarable = conflict_organisations_for(user)
    administered = user_org_ids(user, roles=(Membership.Role.ORG_ADMIN,))
    rows = []
    for conflict in conflicts_visible_to(user).select_related("declared_by"):
        removable = can(user, "chair") or (not conflict.pinned and conflict.organisation_id in administered)
        rows.append({"conflict": conflict, "removable": removable})
    return render(
        request,
        "review/conflicts.html",
        {
            "rows": rows,
            "form": form or (ConflictForm(user=user) if declarable.exists() else None),
            "is_chair": can(user, "chair"),
        },
        status=400 if form is not None and form.errors else 200,
    )


@login_required
@require_POST
def conflict_declare(request):
    form = ConflictForm(request.POST, user=request.user)
    if not form.is_valid():
        if not conflict_organisations_for(request.user).exists():
            raise PermissionDenied("Only the chair and organisation admins declare conflicts.")
        messages.error(request, "No conflict declared: see the form below.")
        return _conflicts_page(request, form=form)
    data = form.cleaned_data
    try:
        conflicts_services.conflict_declare(
            organisation=data["organisation"],
            other=data["other"],
            kind=data["kind"],
            reason=data["reason"],
            actor=request.user,
        )
    except ApplicationError as exc:
        messages.error(request, f"No conflict declared: {exc.detail}")
    else:
        messages.success(request, f"Conflict declared: {data['organisation']} / {data['other']}.")
    return redirect("review:conflicts")


@login_required
@require_POST
def conflict_remove(request, conflict_id: int):
    conflict = get_visible_or_404(request.user, Conflict, pk=conflict_id)
    try:
        conflicts_services.conflict_remove(conflict=conflict, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, f"Not removed: {exc.detail}")
    else:
        messages.success(request, f"Conflict removed: {conflict.organisation} / {conflict.other}.")
    return redirect("review:conflicts")
