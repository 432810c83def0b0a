"""Pages under /dashboard/ and /submissions/: dashboard, submission page (versions, upload, live check, findings,
points, curve), the polled check fragment, downloads, lifecycle buttons, the declared endpoint.

Every submission is looked up through access.visibility: what a user may not see is a 404 (an
anonymous visitor is sent to the login page instead, which reveals nothing either). Writes call the
services; their refusals become messages on the page.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import get_visible_or_404, submissions_visible_to
from accounts.selectors import (
    membership_labels,
    user_org_ids,
    user_organisations,
    user_roles,
)
from leaderboard.views.panels import extension_panel, publication_panel
from portal import private_cache
from portal.downloads import stored_download
from portal.errors import ApplicationError
from portal.pages import LoginFirst, ReasonForm, with_login_redirect
from portal.parsers import parse_id
from portal.private_cache import private_page_cached
from review import lifecycle
from review.selectors import waived_error_count, waived_error_counts
from review.views.panels import review_panel
from submissions import services, uploads
from submissions.checks.queue import check_run_requeue, recheck_action
from submissions.endpoints import endpoint_declare, endpoint_view, endpoint_visible_to
from submissions.forms import (
    EndpointForm,
    SubmissionCreateForm,
)
from submissions.models import Submission
from submissions.pages import check_run_is_live, check_section_context, compare_versions, report_document
from submissions.selectors import (
    check_run_latest,
    drafts_of,
    submissions_with_latest,
    user_can_submit_for,
    version_latest,
    versions_with_latest_check,
)


def _visible_submission(request, pk: int) -> Submission:
    try:
        return submissions_visible_to(request.user).get(pk=pk)
    except Submission.DoesNotExist:
        if not request.user.is_authenticated:
            raise LoginFirst from None
        raise Http404("No such submission.") from None


def _version_or_404(submission: Submission, number: int):
    return get_object_or_404(submission.versions.select_related("uploader"), number=number)


def _dashboard_rows(submissions):
    rows = []
    for submission in submissions_with_latest(submissions.defer("system__description"), files=False):
        version = version_latest(submission)
        rows.append({"submission": submission, "version": version, "check_run": check_run_latest(version)})
    # a failed run whose every error is waived reads "passed with N waived" (two queries for the whole list)
    waived = waived_error_counts([row["check_run"] for row in rows])
    for row in rows:
        row["waived_errors"] = waived.get(getattr(row["check_run"], "pk", None), 0)
    return rows


@login_required
@private_page_cached
def dashboard(request, form: SubmissionCreateForm | None = None, duplicates=()):
    user = request.user
    visible = submissions_visible_to(user).order_by("-created_at", "-id")
    own_org_ids = user_org_ids(user)
    form = form or SubmissionCreateForm(user=user)
    can_create = form.has_systems()
    others = []
    if can(user, "oversee"):
        others = _dashboard_rows(visible.exclude(organisation_id__in=own_org_ids)[:200])
    return render(
        request,
        "submissions/dashboard.html",
        {
            "organisations": user_organisations(user),
            "roles": user_roles(user),
            "reviews_only": not can_create and can(user, "review"),
            "memberships": membership_labels(user),
            "own_rows": _dashboard_rows(visible.filter(organisation_id__in=own_org_ids)),
            "other_rows": others,
            "can_create": can_create,
            "form": form if can_create else None,
            # Drafts of the same system x benchmark the form would duplicate: shown, created only on request.
            "duplicates": duplicates,
        },
        status=400 if form is not None and form.errors else 200,
    )


@login_required
@require_POST
def submission_create(request):
    form = SubmissionCreateForm(request.POST, user=request.user)
    if not form.is_valid():
        messages.error(request, "The new submission was not created: see the form below.")
        return dashboard(request, form=form)
    data = form.cleaned_data
    duplicates = list(drafts_of(data["system"], data["benchmark"]))
    if duplicates and request.POST.get("create_another") != "1":
        messages.warning(
            request,
            f"{data['system'].name} already has a draft on {data['benchmark'].display_name}: "
            "upload a new version to it, or create another draft on purpose.",
        )
        return dashboard(request, form=form, duplicates=duplicates)
    try:
        submission = services.submission_create(
            actor=request.user,
            system=data["system"],
            benchmark=data["benchmark"],
            division=data["division"],
            availability=data["availability"],
            title=data["title"],
        )
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect("submissions:dashboard")
    messages.success(
        request, f"Draft submission #{submission.pk} created. Upload your bundle or run archives below."
    )
    return redirect(reverse("submissions:detail", args=[submission.pk]) + "#upload")


@with_login_redirect
@require_GET
@private_page_cached
def submission_detail(request, pk: int):
    submission = _visible_submission(request, pk)
    versions = list(
        versions_with_latest_check(
            submission.versions.select_related("uploader").prefetch_related("files")
        ).order_by("-number")
    )
    selected = versions[0] if versions else None
    asked = request.GET.get("version", "").strip()
    if asked:
        # A version that is not a number, or not one of this submission's, is a 404 that says so: never the latest.
        number = parse_id(asked)
        selected = next((v for v in versions if v.number == number), None)
        if selected is None:
            known = ", ".join(str(v.number) for v in reversed(versions)) or "none yet"
            detail = f"This submission has no version “{asked[:20]}” (its versions: {known})."
            context = {"detail": detail, "back": reverse("submissions:detail", args=[submission.pk])}
            return render(request, "404.html", context, status=404)
    for version in versions:
        version.latest_check = check_run_latest(version)
    # What the panels below read again (the latest version and its run, the frozen version): from these rows.
    submission.latest_versions = versions[:1]
    frozen = next((v for v in versions if v.pk == submission.submitted_version_id), None)
    if frozen is not None:
        submission.submitted_version = frozen
    context = {
        "submission": submission,
        "versions": versions,
        "selected": selected,
        # The lifecycle buttons: exactly the table's rows this user may take now (disabled with why).
        "actions": lifecycle.allowed_actions(request.user, submission),
        # A draft, or a new version with the changes the reviewers asked for (the table's `upload` row).
        "can_upload": lifecycle.allowed(request.user, submission, "upload")
        and user_can_submit_for(request.user, submission.organisation),
        # The table's re-check rows (the organisation on its draft, the chair, an auditor once submitted).
        "can_recheck": bool(recheck_action(request.user, submission)),
        # No worker (the demo): the upload's last request runs the whole check, and the page says so meanwhile.
        "inline_check": bool(settings.CELERY_TASK_ALWAYS_EAGER),
        # The review as the submitter lives it (review.views.panels): reviewers, thread, waivers, evidence.
        "review": review_panel(request.user, submission),
        # After the audit: the submitter's choice of publication date, then the link to the public page.
        "publication_panel": publication_panel(request.user, submission),
        "extension_panel": extension_panel(request.user, submission),
        "endpoint_panel": _endpoint_panel(request.user, submission),
    }
    run = None if selected is None else selected.latest_check
    if run is not None and not check_run_is_live(run) and private_cache.enabled():
        # A finished run's section (findings, point table, chart) is the same for everyone who may see this page:
        # rendered once per cache generation and shared (portal.private_cache.shared_fragment).
        context["check"] = {"check_run": run, "live": False}
        context["check_section_html"] = private_cache.shared_fragment(
            f"check-section:{run.pk}",
            lambda: render_to_string(
                "submissions/_check_section.html", {"check": check_section_context(submission, selected)}
            ),
        )
        panel = context["review"] or {}
        # the review panel read this run's error findings already (its waiver rows): counted from them
        same_run = getattr(panel.get("check_run"), "pk", None) == run.pk
        errors = [row.finding for row in panel["error_rows"]] if same_run else None
        context["waived_errors"] = waived_error_count(selected, run, errors=errors)
    elif selected is not None:
        check = context["check"] = check_section_context(submission, selected)
        groups = check.get("finding_groups")  # a finished run's findings: no need to read its errors again
        errors = None if groups is None else [f for g in groups if g.severity == "error" for f in g.findings]
        context["waived_errors"] = waived_error_count(selected, check["check_run"], errors=errors)
    return render(request, "submissions/detail.html", context)


@with_login_redirect
@require_GET
def check_fragment(request, pk: int, number: int):
    """The check section of one version, polled every 2 s while its run is queued or running."""
    submission = _visible_submission(request, pk)
    version = _version_or_404(submission, number)
    context = check_section_context(submission, version)
    response = render(request, "submissions/_check_section.html", {"check": context})
    if not context["live"]:
        response["X-Poll-Stop"] = "1"
    response["Cache-Control"] = "no-store"
    return response


@with_login_redirect
@require_GET
def version_file_download(request, pk: int, number: int, position: int):
    """The stored bytes exactly as uploaded, streamed."""
    submission = _visible_submission(request, pk)
    version = _version_or_404(submission, number)
    version_file = get_object_or_404(version.files, position=position)
    return stored_download(uploads.version_file_chunks(version_file), version_file)


@with_login_redirect
@require_GET
def version_report_json(request, pk: int, number: int):
    """The portal's report of the version's latest finished check, as a JSON download (docs/report-format.md);
    409 `check-not-finished` while it is queued or running (or was never run)."""
    submission = _visible_submission(request, pk)
    version = _version_or_404(submission, number)
    run = check_run_latest(version)
    if run is None or check_run_is_live(run):
        return JsonResponse(
            {
                "code": "check-not-finished",
                "detail": f"Version {version.number} has no finished check yet: download the report once the "
                "check has ended (the submission page shows its progress).",
            },
            status=409,
        )
    url = request.build_absolute_uri(
        reverse("submissions:detail", args=[submission.pk]) + f"?version={version.number}"
    )
    response = JsonResponse(
        report_document(submission, version, run, url=url), json_dumps_params={"indent": 2}
    )
    response["Content-Disposition"] = (
        f'attachment; filename="submission-{submission.pk}-v{version.number}-report.json"'
    )
    return response


@with_login_redirect
@require_GET
def version_summary(request, pk: int, number: int):
    """One printable page: the verdict, the curve, the point table and the findings of one version's check."""
    submission = _visible_submission(request, pk)
    version = _version_or_404(submission, number)
    return render(
        request,
        "submissions/summary.html",
        {"submission": submission, "version": version, "check": check_section_context(submission, version)},
    )


@with_login_redirect
@require_GET
def version_compare(request, pk: int):
    """Two versions of the submission side by side: ?a=&b= (default: the one before the latest, and the latest)."""
    submission = _visible_submission(request, pk)
    versions = list(submission.versions.order_by("number"))
    numbers = [v.number for v in versions]
    asked: dict[str, int] = {}
    for side in ("b", "a"):
        value = request.GET.get(side, "").strip()
        if value:
            if parse_id(value) not in numbers:
                known = ", ".join(map(str, numbers)) or "none yet"
                detail = f"This submission has no version “{value[:20]}” (its versions: {known})."
                back = reverse("submissions:detail", args=[submission.pk])
                return render(request, "404.html", {"detail": detail, "back": back}, status=404)
            asked[side] = int(parse_id(value) or 0)
        elif side == "b" and numbers:
            asked["b"] = numbers[-1]
        elif side == "a" and "b" in asked:
            earlier = [n for n in numbers if n < asked["b"]]
            later = [n for n in numbers if n > asked["b"]]
            if earlier or later:
                asked["a"] = earlier[-1] if earlier else later[0]
    context = {"submission": submission, "versions": versions}
    if "a" in asked and "b" in asked:
        by_number = {v.number: v for v in versions}
        context["comparison"] = compare_versions(by_number[asked["a"]], by_number[asked["b"]])
    return render(request, "submissions/compare.html", context)


def _back(submission: Submission):
    return redirect("submissions:detail", pk=submission.pk)


@login_required
@require_POST
def submission_transition(request, pk: int, action: str):
    """One lifecycle button (a row of review.lifecycle); refusals and lost races become messages."""
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    row = lifecycle.transition_row(action)
    reason = ""
    if row.reason_required:
        form = ReasonForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Not {row.done}: say why the submission is {row.done}.")
            return _back(submission)
        reason = form.cleaned_data["reason"]
    try:
        lifecycle.SUBMISSION.take(request.user, submission, action, reason=reason)
    except ApplicationError as exc:
        messages.error(request, f"Not {row.done}: {exc.detail}")
    else:
        frozen = submission.submitted_version if action == "submit" else None
        note = f": version {frozen.number} is frozen for review" if frozen is not None else ""
        messages.success(request, f"Submission #{submission.pk} {row.done}{note}.")
    return _back(submission)


def _endpoint_panel(user, submission: Submission) -> dict | None:
    endpoint = endpoint_visible_to(user, submission)
    may_declare = lifecycle.allowed(user, submission, "declare_endpoint")
    if endpoint is None and not may_declare:
        return None
    initial = endpoint_view(endpoint) or {}
    return {
        "endpoint": initial or None,
        "form": EndpointForm(initial=initial) if may_declare else None,
    }


@login_required
@require_POST
def endpoint_declare_view(request, pk: int):
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    form = EndpointForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        messages.error(request, f"Endpoint not saved: {problems}")
        return redirect(reverse("submissions:detail", args=[submission.pk]) + "#endpoint")
    data = form.cleaned_data
    try:
        endpoint_declare(
            submission=submission,
            actor=request.user,
            url=data["url"],
            model_name=data["model_name"],
            stays_up=data["stays_up"],
            public=data["public"],
            credential=data["credential"] or None,
            clear_credential=data["clear_credential"],
        )
    except ApplicationError as exc:
        messages.error(request, f"Endpoint not saved: {exc.detail}")
    else:
        messages.success(request, "Endpoint saved.")
    return redirect(reverse("submissions:detail", args=[submission.pk]) + "#endpoint")


@login_required
@require_POST
def version_recheck(request, pk: int, number: int):
    submission = get_visible_or_404(request.user, Submission, pk=pk)
    version = _version_or_404(submission, number)
    try:
        check_run = check_run_requeue(version=version, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, f"Not re-checked: {exc.detail}")
    else:
        messages.success(request, f"Version {version.number} queued for a new check (run #{check_run.pk}).")
    return redirect(reverse("submissions:detail", args=[submission.pk]) + f"?version={version.number}")
