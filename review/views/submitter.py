"""The submitter's side of the review, on the submission page (submissions/views/submissions.py includes it): who reviews
(assignments with their status; reviews are signed), the thread at the visibility the submitter reads with a
reply form on each open objection and a comment form, waiver requests on the error findings of the latest
version, the auditors' evidence requests with an answer form, and why changes were requested.

The submitting organisation's submitters write; its other members, the chair and auditors read the panel
(they act on their own pages); an assigned reviewer gets a link to the review page. Everything is looked up
through access.visibility: a submission the user may not see is a 404, an anonymous visitor goes to the login
page. Writes call review.services; refusals become messages on the submission page.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from access.visibility import (
    evidence_requests_visible_to,
    submissions_visible_to,
    thread_of,
    versions_visible_to,
)
from accounts.actors import SUBMITTER_ROLES
from accounts.selectors import user_org_ids
from portal.errors import ApplicationError
from portal.parsers import parse_id
from review.models import Comment
from review.services import attestations as attestations_services
from review.services import thread as thread_services
from review.services import waivers as waivers_services
from review.services.waivers import waivers_request_group
from submissions.models import Submission

Status = Submission.Status


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
