"""The review's part of the submission page (submissions.views.submissions): the reviewers, the thread, the waivers and the
evidence as the submitting organisation (or an auditor, the chair, a reviewer's link) sees them. A page part, not
a page: the submission page asks for it; the writes it links to are review.views.submitter's."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils import timezone

from access.permissions import can
from access.visibility import (
    attestations_visible_to,
    evidence_requests_visible_to,
    review_assignments_visible_to,
    reviews_of,
    thread_of,
)
from accounts.actors import SUBMITTER_ROLES
from accounts.selectors import user_org_ids
from review import lifecycle, selectors
from review.models import Comment, Review
from submissions.models import Submission
from submissions.selectors import check_run_latest, version_latest


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
    oversees = can(user, "oversee")
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
