"""The submitter's side of the review, on the submission page (submissions/views.py includes it): who reviews
(assignments with their status; reviews are signed), the thread at the visibility the submitter reads with a
reply form on each open objection and a comment form, waiver requests on the error findings of the latest
version, the auditors' evidence requests with an answer form, and why changes were requested.

The submitting organisation's submitters write; its other members, the chair and auditors read the panel
(they act on their own pages); an assigned reviewer gets a link to the review page. Everything is looked up
through access.visibility: a submission the user may not see is a 404, an anonymous visitor goes to the login
page. Writes call review.services; refusals become messages on the submission page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from access.visibility import (
    attestations_visible_to,
    evidence_requests_visible_to,
    review_assignments_visible_to,
    reviews_of,
    submissions_visible_to,
    thread_of,
    versions_visible_to,
)
from accounts.models import Membership
from accounts.selectors import user_org_ids
from portal.errors import ApplicationError
from portal.parsers import parse_id
from review import lifecycle, selectors
from review.models import Comment, Review
from review.services import attestations as attestations_services
from review.services import thread as thread_services
from review.services import waivers as waivers_services
from review.services.waivers import waivers_request_group
from submissions.models import Submission
from submissions.selectors import check_run_latest, version_latest

Status = Submission.Status
SUBMITTER_ROLES = (Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN)


@dataclass
class PanelEntry:
    comment: Comment
    depth: int
    can_answer: bool  # an open objection the submitter answers with a reply


@dataclass
class FindingRow:
    finding: object
    waiver: object | None


def _thread_entries(user, submission: Submission, *, writes: bool) -> list[PanelEntry]:
    comments = list(thread_of(user, submission))
    ids = {comment.pk for comment in comments}
    children: dict[int | None, list[Comment]] = {}
    for comment in comments:
        children.setdefault(comment.parent_id if comment.parent_id in ids else None, []).append(comment)
    entries: list[PanelEntry] = []

    def walk(parent, depth):
        for comment in children.get(parent, []):
            entries.append(
                PanelEntry(
                    comment=comment,
                    depth=min(depth, 3),
                    can_answer=writes
                    and comment.kind == Comment.Kind.OBJECTION
                    and lifecycle.OBJECTION.allowed(user, comment, "answer"),
                )
            )
            walk(comment.pk, depth + 1)

    walk(None, 0)
    return entries


def _error_rows(version) -> tuple[object | None, list[FindingRow]]:
    """The latest check of the version and its error findings, each with its waiver (or None)."""
    check_run = check_run_latest(version) if version is not None else None
    if check_run is None:
        return None, []
    waivers = {(w.rule, w.point, w.file): w for w in selectors.waivers_of(version)}
    rows = [
        FindingRow(
            finding=finding, waiver=waivers.get((finding.rule, finding.point or "", finding.file or ""))
        )
        for finding in selectors.error_findings(check_run)
    ]
    return check_run, rows


def _waivable_rules(error_rows: list) -> list[dict]:
    """Rules with two or more error findings not waived or asked about yet: asked for at once, one justification."""
    by_rule: dict[str, list] = {}
    for row in error_rows:
        if row.waiver is None:
            by_rule.setdefault(row.finding.rule, []).append(row.finding)
    return [
        {
            "rule": rule,
            "count": len(findings),
            "points": sorted({f.point.rsplit("/", 1)[-1] for f in findings if f.point}),
        }
        for rule, findings in by_rule.items()
        if len(findings) > 1
    ]


def review_panel(user, submission: Submission) -> dict | None:
    """What the submission page shows of the review to this user, or None when it shows nothing."""
    if user is None or not user.is_authenticated:
        return None
    own_org = submission.organisation_id in user_org_ids(user)
    oversees = lifecycle.can(user, "oversee")
    if not (own_org or oversees):
        if selectors.assignment_active(user, submission) is not None:
            return {"reviewer_link": reverse("review:review_page", args=[submission.pk])}
        return None
    writes = submission.organisation_id in user_org_ids(user, roles=SUBMITTER_ROLES)
    latest = version_latest(submission)
    check_run, error_rows = _error_rows(latest)
    is_draft = lifecycle.SUBMISSION.state_allows(submission, "submit")
    panel: dict = {
        "writes": writes,
        "oversees": oversees and not own_org,
        "is_draft": is_draft,
        "latest": latest,
        "check_run": check_run,
        "error_rows": error_rows,
        "can_ask_waiver": lifecycle.allowed(user, submission, "request_waiver"),
        "waivable_rules": _waivable_rules(error_rows),
        "now": timezone.now(),
    }
    if is_draft:
        return panel  # a draft has no reviewers, thread or evidence yet: only its waiver requests
    assignments = list(
        review_assignments_visible_to(user)
        .filter(submission=submission)
        .select_related("reviewer", "organisation")
        .order_by("assigned_at", "pk")
    )
    reviews = list(reviews_of(user, submission).order_by("version__number", "created_at"))
    frozen_id = submission.submitted_version_id
    decision_of = {r.assignment_id: r for r in reviews if r.version_id == frozen_id}
    for assignment in assignments:
        assignment.frozen_review = decision_of.get(assignment.pk)
    changes = None
    if lifecycle.SUBMISSION.state_allows(submission, "resubmit"):
        changes = next((r for r in reversed(reviews) if r.decision == Review.Decision.REQUEST_CHANGES), None)
    comments = writes and lifecycle.allowed(user, submission, "comment")
    thread = _thread_entries(user, submission, writes=comments)
    attestations = list(
        attestations_visible_to(user)
        .filter(submission=submission)
        .select_related("auditor", "version")
        .order_by("-created_at", "-pk")
    )
    evidence = list(
        evidence_requests_visible_to(user)
        .filter(submission=submission)
        .select_related("auditor", "answered_by", "version")
        .order_by("-created_at", "-pk")
    )
    panel.update(
        {
            "assignments": assignments,
            "active_assignments": [a for a in assignments if a.in_state("active")],
            "reviews": reviews,
            "approvals": selectors.approvals_count(submission),
            "quorum": selectors.quorum_size(),
            "thread": thread,
            "open_objections": [e for e in thread if e.comment.in_state("open")],
            "can_comment": comments,
            "evidence": evidence,
            "attestations": attestations,
            "changes_review": changes,
            "new_version_waiting": latest is not None and latest.pk != frozen_id,
            "review_page": reverse("review:review_page", args=[submission.pk]),
        }
    )
    return panel


# --- The submitter's writes -----------------------------------------------------------------------


def _own_submission(request, pk: int) -> Submission:
    """The submission if the user may see it (else 404) and submits for its organisation (else 403)."""
    submission = get_object_or_404(submissions_visible_to(request.user), pk=pk)
    if submission.organisation_id not in user_org_ids(request.user, roles=SUBMITTER_ROLES):
        raise PermissionDenied("Only the submitting organisation's submitters write here.")
    return submission


def _back(submission: Submission, fragment: str = "#review"):
    return redirect(reverse("submissions:detail", args=[submission.pk]) + fragment)


@login_required
@require_POST
def comment_post(request, pk: int):
    """A comment to the reviewers, or a reply (with `parent`): a reply to an open objection answers it."""
    submission = _own_submission(request, pk)
    parent = None
    parent_id = request.POST.get("parent", "").strip()
    if parent_id:
        if parse_id(parent_id) is None:
            messages.error(request, "Not posted: no such entry in the thread.")
            return _back(submission, "#thread")
        parent = get_object_or_404(thread_of(request.user, submission), pk=parse_id(parent_id))
    try:
        comment = thread_services.comment_post(
            submission=submission, actor=request.user, body=request.POST.get("body", ""), parent=parent
        )
    except ApplicationError as exc:
        messages.error(request, f"Not posted: {exc.detail}")
        return _back(submission, "#thread")
    if parent is not None and parent.kind == Comment.Kind.OBJECTION:
        messages.success(request, "Your answer is posted; the objection now waits for the objector.")
    else:
        messages.success(request, "Reply posted." if parent is not None else "Comment posted.")
    return _back(submission, f"#comment-{comment.pk}")


@login_required
@require_POST
def waiver_request(request, pk: int):
    """Ask for a waiver of one error finding of a version (the latest unless `version` says otherwise)."""
    submission = _own_submission(request, pk)
    number = request.POST.get("version", "").strip()
    versions = versions_visible_to(request.user).filter(submission=submission)
    if number and parse_id(number) is None:
        raise Http404("No such version.")
    version = (
        get_object_or_404(versions, number=parse_id(number))
        if number
        else versions.order_by("-number").first()
    )
    if version is None:
        messages.error(request, "Not asked: upload a version first.")
        return _back(submission, "#waivers")
    rule = request.POST.get("rule", "").strip()
    try:
        if request.POST.get("every_finding_of_rule") == "1":
            asked = waivers_request_group(
                version=version, actor=request.user, rule=rule, reason=request.POST.get("reason", "")
            )
        else:
            asked = [
                waivers_services.waiver_request(
                    version=version,
                    actor=request.user,
                    rule=rule,
                    point=request.POST.get("point", "").strip(),
                    file=request.POST.get("file", ""),
                    reason=request.POST.get("reason", ""),
                )
            ]
    except ApplicationError as exc:
        messages.error(request, f"Waiver not asked for: {exc.detail}")
    else:
        what = f"Waiver of {rule}" if len(asked) == 1 else f"{len(asked)} waivers of {rule}"
        messages.success(
            request, f"{what} asked for on version {version.number}; the chair or an auditor decides."
        )
    return _back(submission, "#waivers")


@login_required
@require_POST
def evidence_answer(request, evidence_id: int):
    """The submitting organisation answers an auditor's evidence request."""
    evidence = get_object_or_404(
        evidence_requests_visible_to(request.user).select_related("submission"), pk=evidence_id
    )
    submission = _own_submission(request, evidence.submission_id)
    try:
        attestations_services.evidence_answer(
            request=evidence, actor=request.user, answer=request.POST.get("answer", "")
        )
    except ApplicationError as exc:
        messages.error(request, f"Not answered: {exc.detail}")
    else:
        messages.success(request, "Your answer is sent to the auditor.")
    return _back(submission, f"#evidence-{evidence.pk}")
