"""The reviewer's pages: the dashboard (open assignments with due dates, accept / decline, my reviews), the
review page of a submission (findings with waiver status, claimed vs recomputed metrics, the curve, the
stored files, the thread with its forms, the decision form, the diff between versions) and the file browser.

A review is read by the submitting organisation (without the reviewer-only thread entries), its assigned
reviewers, auditors and the chair (access.visibility.review_submissions_visible_to); anyone else gets a 404,
an anonymous visitor the login page. Writes call review.services; refusals become messages on the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from access.permissions import can
from access.visibility import (
    review_assignments_visible_to,
    review_submissions_visible_to,
    reviews_of,
    thread_of,
)
from accounts.selectors import user_org_ids
from leaderboard.views.panels import extension_delta
from portal.errors import ApplicationError
from portal.pages import LoginFirst, with_login_redirect
from portal.parsers import parse_id
from review import bundle_files, lifecycle, selectors
from review.models import Comment, Review, ReviewAssignment, Waiver
from review.services import assignments as assignments_services
from review.services import thread as thread_services
from review.services.reviews import review_submit
from review.services.thread import comment_post
from submissions.models import Finding, Submission
from submissions.pages import check_section_context

DIFF_METRIC_LABELS = {
    "system_tps": "System tokens/s",
    "tps_per_user": "Tokens/s per user",
    "ttft_p90_ms": "TTFT p90 (ms)",
    "tpot_p90_ms": "TPOT p90 (ms)",
    "qps": "Queries/s",
    "n_samples_completed": "Completed",
}


def _review_submission(request, pk: int) -> Submission:
    """The submission if the user may read its review; anonymous: login first; anyone else: 404."""
    if not request.user.is_authenticated:
        raise LoginFirst
    try:
        return review_submissions_visible_to(request.user).select_related("submitted_version").get(pk=pk)
    except Submission.DoesNotExist:
        raise Http404("No such submission.") from None


# --- The dashboard --------------------------------------------------------------------------------


@login_required
@require_GET
def dashboard(request):
    """Open assignments (of submissions still in review) soonest due first, overdue marked; accept / decline; and
    my past reviews."""
    user = request.user
    assignments = list(
        review_assignments_visible_to(user)
        .filter(ReviewAssignment.states.q("active"), reviewer=user)
        # open work only: the states the policy assigns reviewers in (a result peer reviewed, audited or published
        # needs nothing more from them)
        .filter(lifecycle.SUBMISSION.sources_q("assign", via="submission"))
        .select_related(
            "submission__benchmark", "submission__system", "submission__organisation", "organisation"
        )
        .order_by("due_at", "pk")
    )
    if not assignments and not selectors.user_is_reviewer(user):
        raise PermissionDenied("Only reviewers have a review dashboard.")
    now = timezone.now()
    reviewed = {
        (review.assignment_id, review.version_id): review
        for review in Review.objects.filter(assignment__in=[a.pk for a in assignments])
    }
    for assignment in assignments:
        assignment.overdue = assignment.due_at < now
        assignment.due_soon = not assignment.overdue and (assignment.due_at - now).days < 3
        assignment.my_review = reviewed.get((assignment.pk, assignment.submission.submitted_version_id))
    my_reviews = (
        Review.objects.filter(
            assignment__reviewer=user, assignment__submission__in=review_submissions_visible_to(user)
        )
        .select_related("assignment__submission__benchmark", "assignment__submission__system", "version")
        .order_by("-created_at", "-pk")[:100]
    )
    return render(
        request,
        "review/dashboard.html",
        {
            "invited": [a for a in assignments if a.in_state("invited")],
            "accepted": [a for a in assignments if a.in_state("accepted")],
            "my_reviews": my_reviews,
            "now": now,
        },
    )


def _own_assignment(request, pk: int) -> ReviewAssignment:
    return get_object_or_404(
        review_assignments_visible_to(request.user)
        .filter(reviewer=request.user)
        .select_related("submission"),
        pk=pk,
    )


def _back_to(request, default: str):
    target = request.POST.get("next", "")
    return redirect(target if target.startswith("/review/") else default)


@login_required
@require_POST
def assignment_accept(request, pk: int):
    assignment = _own_assignment(request, pk)
    try:
        assignments_services.assignment_accept(assignment=assignment, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, f"Not accepted: {exc.detail}")
    else:
        messages.success(
            request,
            f"You accepted submission #{assignment.submission_id}; your review is due "
            f"{assignment.due_at:%Y-%m-%d}.",
        )
    return _back_to(request, reverse("review:queue"))


@login_required
@require_POST
def assignment_decline(request, pk: int):
    assignment = _own_assignment(request, pk)
    try:
        assignments_services.assignment_decline(
            assignment=assignment, actor=request.user, reason=request.POST.get("reason", "")
        )
    except ApplicationError as exc:
        messages.error(request, f"Not declined: {exc.detail}")
        return _back_to(request, reverse("review:queue"))
    messages.success(request, f"You declined submission #{assignment.submission_id}; the chair is told why.")
    return redirect("review:queue")  # the review page is no longer yours to see


# --- The review page ------------------------------------------------------------------------------


@dataclass
class ThreadEntry:
    comment: Comment
    depth: int
    can_close: bool
    file_link: str


def _file_link(submission: Submission, version, anchor: str, line: int | None) -> str:
    """The file browser URL of an anchor "<stored file>:<member>" (findings use the same form); a folder
    ("docs/", as the required-dir findings name one) opens the archive's listing, which shows what is in it."""
    if not anchor or version is None:
        return ""
    stored, _, member = anchor.partition(":")
    if member.endswith("/"):
        member, line = "", None
    version_file = next((f for f in version.files.all() if f.original_filename == stored), None)
    if version_file is None:
        return ""
    query = {"member": member} if member else {}
    if line:
        query["line"] = line
    url = reverse("review:file_browser", args=[submission.pk, version.number, version_file.position])
    return f"{url}?{urlencode(query)}" + (f"#L{line}" if line else "")


def _thread(user, submission: Submission) -> list[ThreadEntry]:
    comments = list(thread_of(user, submission).prefetch_related("version__files"))
    children: dict[int | None, list[Comment]] = {}
    ids = {c.pk for c in comments}
    for comment in comments:
        parent = comment.parent_id if comment.parent_id in ids else None
        children.setdefault(parent, []).append(comment)
    entries: list[ThreadEntry] = []

    def walk(parent, depth):
        for comment in children.get(parent, []):
            entries.append(
                ThreadEntry(
                    comment=comment,
                    depth=min(depth, 4),
                    can_close=comment.kind == Comment.Kind.OBJECTION
                    and lifecycle.OBJECTION.allowed(user, comment, "resolve"),
                    file_link=_file_link(submission, comment.version, comment.file, comment.line),
                )
            )
            walk(comment.pk, depth + 1)

    walk(None, 0)
    return entries


WAIVER_LABELS = {
    Waiver.Status.GRANTED: ("waived", "Waived: counts as waived, not passed"),
    Waiver.Status.REQUESTED: ("waiver-requested", "Waiver asked for"),
    Waiver.Status.REFUSED: ("waiver-refused", "Waiver refused"),
}


def _annotate_findings(check: dict, submission: Submission, version) -> list:
    """Waiver status and a file-browser link on every finding of the version's check."""
    waivers = {(w.rule, w.point, w.file): w for w in selectors.waivers_of(version)}
    findings = []
    for group in check.get("finding_groups", []):
        for finding in group.findings:
            waiver = waivers.get((finding.rule, finding.point or "", finding.file or ""))
            finding.waiver = waiver
            finding.waiver_class, finding.waiver_label = (
                WAIVER_LABELS.get(waiver.status, ("", "")) if waiver else ("", "")
            )
            finding.file_link = _file_link(submission, version, finding.file, finding.line)
            findings.append(finding)
    return findings


def _diff_context(submission: Submission, versions: list, new, requested: str):
    older = [v for v in versions if v.number < new.number]
    if not older:
        return None
    old = next((v for v in older if str(v.number) == requested), older[0])
    diff = selectors.version_diff(old, new)
    metrics = list(DIFF_METRIC_LABELS.items())
    points = []
    for row in diff.points:
        cells = []
        for name, _label in metrics:
            before = (row["old"] or {}).get(name)
            after = (row["new"] or {}).get(name)
            cells.append({"old": before, "new": after, "changed": before != after})
        points.append(
            {
                "key": row["key"].rsplit("/", 1)[-1],
                "full_key": row["key"],
                "cells": cells,
                "added": row["old"] is None,
                "removed": row["new"] is None,
            }
        )

    def findings(rows):
        return [
            {
                "rule": rule,
                "severity": severity,
                "point": (point or "").rsplit("/", 1)[-1],
                "message": message,
            }
            for rule, severity, point, _file, message in rows
        ]

    return {
        "old": old,
        "new": new,
        "older": older,
        "findings_added": findings(diff.findings_added),
        "findings_removed": findings(diff.findings_removed),
        "diff": diff,
        "metric_labels": [label for _name, label in metrics],
        "points": points,
        "unchanged": not (
            diff.files_added
            or diff.files_removed
            or diff.files_changed
            or diff.findings_added
            or diff.findings_removed
            or any(c["changed"] for p in points for c in p["cells"])
        ),
    }


@with_login_redirect
@require_GET
def review_page(request, pk: int):
    user = request.user
    submission = _review_submission(request, pk)
    versions = list(submission.versions.prefetch_related("files").order_by("-number"))
    frozen = submission.submitted_version or (versions[0] if versions else None)
    version = frozen
    if request.GET.get("version", ""):
        asked = parse_id(request.GET["version"])
        version = next((v for v in versions if v.number == asked), None)
        if version is None:
            raise Http404("No such version.")
    check = check_section_context(submission, version) if version is not None else {}
    findings = _annotate_findings(check, submission, version) if version is not None else []

    own_org = submission.organisation_id in user_org_ids(user)
    visibilities = selectors.comment_visibilities_for(user, submission)
    assignment = selectors.assignment_active(user, submission)
    my_review = None
    if assignment is not None and frozen is not None:
        my_review = Review.objects.filter(assignment=assignment, version=frozen).first()
    reviews = list(reviews_of(user, submission).order_by("-version__number", "created_at"))
    hidden_reviews = 0
    if assignment is not None and my_review is None and frozen is not None:
        hidden_reviews = (
            Review.objects.filter(version=frozen, assignment__submission=submission)
            .exclude(assignment__reviewer=user)
            .count()
        )
    can_decide = (
        assignment is not None
        and assignment.reviewer_id == user.pk
        and my_review is None
        and lifecycle.allowed(user, submission, "review")
    )
    anchor_line = request.GET.get("anchor_line", "")
    context = {
        "submission": submission,
        "versions": versions,
        "frozen": frozen,
        "version": version,
        "check": check,
        "findings": findings,
        "files": list(version.files.all()) if version is not None else [],
        "thread": _thread(user, submission),
        "visibilities": [(v, label) for v, label in Comment.Visibility.choices if v in visibilities],
        "can_comment": bool(visibilities) and lifecycle.allowed(user, submission, "comment"),
        "can_object": bool(visibilities) and not own_org and lifecycle.allowed(user, submission, "object"),
        "is_submitter": own_org,
        "objection_types": Comment.ObjectionType.choices,
        "decisions": Review.Decision.choices,
        "assignment": assignment,
        "my_review": my_review,
        "can_decide": can_decide,
        "reviews": reviews,
        "hidden_reviews": hidden_reviews,
        "quorum": selectors.quorum_size(),
        "approvals": selectors.approvals_count(submission) if frozen is not None else 0,
        "open_objections": selectors.open_objections(submission)
        .filter(visibility__in=visibilities or ("-",))
        .count(),
        "diff": _diff_context(submission, versions, frozen, request.GET.get("diff", "")) if frozen else None,
        "extension": extension_delta(submission),
        "point_keys": [row.key for row in check.get("point_rows", [])],
        "anchor_file": request.GET.get("anchor_file", "")[:500],
        "anchor_line": anchor_line if parse_id(anchor_line) is not None else "",
        "oversees": can(user, "oversee"),
        "now": timezone.now(),
    }
    return render(request, "review/review_page.html", context)


def _page_url(submission: Submission, fragment: str = "") -> str:
    return reverse("review:review_page", args=[submission.pk]) + fragment


@login_required
@require_POST
def review_create(request, pk: int):
    submission = get_object_or_404(review_submissions_visible_to(request.user), pk=pk)
    assignment = selectors.assignment_active(request.user, submission)
    if assignment is None:
        messages.error(request, "Only a reviewer assigned to this submission can review it.")
        return redirect(_page_url(submission, "#decision"))
    try:
        review = review_submit(
            assignment=assignment,
            actor=request.user,
            decision=request.POST.get("decision", ""),
            body=request.POST.get("body", ""),
            objection_type=request.POST.get("objection_type", ""),
        )
    except ApplicationError as exc:
        messages.error(request, f"Review not recorded: {exc.detail}")
    else:
        messages.success(
            request,
            f"Your review of version {review.version.number} is recorded: {review.get_decision_display()}.",
        )
    return redirect(_page_url(submission, "#decision"))


def _optional_int(value: str) -> int | None:
    return parse_id((value or "").strip())


@login_required
@require_POST
def comment_create(request, pk: int):
    """A comment, an objection or a reply (with `parent`), optionally anchored to a finding, a point or a
    file and line."""
    user = request.user
    submission = get_object_or_404(review_submissions_visible_to(user), pk=pk)
    post = request.POST
    parent = None
    parent_id = _optional_int(post.get("parent", ""))
    if parent_id is not None:
        parent = get_object_or_404(thread_of(user, submission), pk=parent_id)
    finding = None
    finding_id = _optional_int(post.get("finding", ""))
    if finding_id is not None:
        finding = Finding.objects.filter(pk=finding_id, check_run__version__submission=submission).first()
    kind = post.get("kind") or Comment.Kind.COMMENT
    if kind not in Comment.Kind.values:
        messages.error(request, "Not posted: choose a comment or an objection.")
        return redirect(_page_url(submission, "#thread"))
    try:
        comment = comment_post(
            submission=submission,
            actor=user,
            body=post.get("body", ""),
            kind=kind,
            objection_type=post.get("objection_type", "") if kind == Comment.Kind.OBJECTION else "",
            visibility=post.get("visibility") or Comment.Visibility.ALL,
            parent=parent,
            finding=finding,
            point_key=post.get("point_key", "")[:200],
            file=post.get("file", "")[:500],
            line=_optional_int(post.get("line", "")),
        )
    except ApplicationError as exc:
        messages.error(request, f"Not posted: {exc.detail}")
        return redirect(_page_url(submission, "#thread"))
    messages.success(
        request,
        "Objection raised."
        if comment.kind == Comment.Kind.OBJECTION
        else ("Reply posted." if parent else "Comment posted."),
    )
    return redirect(_page_url(submission, f"#comment-{comment.pk}"))


@login_required
@require_POST
def objection_close(request, pk: int, comment_pk: int):
    submission = get_object_or_404(review_submissions_visible_to(request.user), pk=pk)
    objection = get_object_or_404(thread_of(request.user, submission), pk=comment_pk)
    try:
        thread_services.objection_close(
            objection=objection,
            actor=request.user,
            outcome=request.POST.get("outcome", ""),
            note=request.POST.get("note", ""),
        )
    except ApplicationError as exc:
        messages.error(request, f"Objection not closed: {exc.detail}")
    else:
        messages.success(request, f"Objection {request.POST.get('outcome')}.")
    return redirect(_page_url(submission, f"#comment-{objection.pk}"))


# --- The file browser -----------------------------------------------------------------------------


@with_login_redirect
@require_GET
def file_browser(request, pk: int, number: int, position: int):
    """The members of one stored archive, and one member page by page with line numbers."""
    submission = _review_submission(request, pk)
    version = get_object_or_404(submission.versions.prefetch_related("files"), number=number)
    version_file = get_object_or_404(version.files, position=position)
    listing = bundle_files.version_file_members(version_file)
    member = request.GET.get("member", "")
    conversation = request.GET.get("conversation", "")[:200]  # one conversation of an agentic raw log
    page = None
    error = ""
    status = 200
    if member:
        page_number = _optional_int(request.GET.get("page", "")) or 1
        line = _optional_int(request.GET.get("line", ""))
        if line and not conversation:
            page_number = bundle_files.page_of_line(line)
        try:
            page = bundle_files.version_file_page(
                version_file, member, page=page_number, conversation=conversation
            )
        except ApplicationError as exc:
            error, status = exc.detail, exc.status_code
    elif len(listing.members) == 1:
        page = bundle_files.version_file_page(version_file, listing.members[0].name)
    base = reverse("review:file_browser", args=[submission.pk, version.number, version_file.position])
    context = {
        "submission": submission,
        "version": version,
        "version_file": version_file,
        "files": list(version.files.all()),
        "listing": listing,
        "member": page.member if page else member,
        "page": page,
        "error": error,
        "base": base,
        "highlight": _optional_int(request.GET.get("line", "")),
        "can_comment": bool(selectors.comment_visibilities_for(request.user, submission))
        and lifecycle.allowed(request.user, submission, "comment"),
        "anchor_file": f"{version_file.original_filename}:{page.member}" if page else "",
    }
    if page is not None:
        keep = {"member": page.member, **({"conversation": conversation} if conversation else {})}
        context["prev_url"] = f"{base}?{urlencode({**keep, 'page': page.page - 1})}" if page.page > 1 else ""
        context["next_url"] = f"{base}?{urlencode({**keep, 'page': page.page + 1})}" if page.has_next else ""
        if page.member.rsplit("/", 1)[-1].startswith("events.jsonl"):
            context["conversation"] = conversation
            context["turns"] = [line.turn for line in page.lines if line.turn is not None]
            context["conversations"] = [] if conversation else bundle_files.conversations_on(page.lines)
            context["conversation_urls"] = [
                (c, f"{base}?{urlencode({'member': page.member, 'conversation': c})}")
                for c in context["conversations"]
            ]
            context["all_lines_url"] = f"{base}?{urlencode({'member': page.member})}"
    return render(request, "review/file_browser.html", context, status=status)
