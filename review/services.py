"""Writes of the review app: conflicts, assignments, the thread and objections, reviews and the quorum,
waivers, attestations and evidence requests, and the deadline jobs. Every write records its audit event in its
own transaction; every status change of a submission goes through review.lifecycle.transition(), and every write asks the workflow
tables (review.lifecycle) first: who may, in which state, judged now."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Membership, Organisation
from accounts.selectors import (
    auditors,
    chairs,
    organisation_submitters,
    user_is_chair,
    user_org_ids,
)
from accounts.services.notifications import notify
from audit.services import audit_event_record
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review import selectors
from review.lifecycle import (
    ASSIGNMENT,
    EVIDENCE_REQUEST,
    OBJECTION,
    SUBMISSION,
    WAIVER,
    quorum_precondition,
    transition,
)
from review.models import Attestation, Comment, Conflict, EvidenceRequest, Review, ReviewAssignment, Waiver
from submissions.models import Finding, Submission, SubmissionVersion
from submissions.selectors import check_run_latest

Status = Submission.Status


def _submitters(submission: Submission):
    return organisation_submitters(submission.organisation_id)


def _reviewers(submission: Submission, *, accepted_only: bool = True):
    states = ReviewAssignment.states.q("accepted" if accepted_only else "active")
    return [
        assignment.reviewer
        for assignment in ReviewAssignment.objects.filter(states, submission=submission).select_related(
            "reviewer"
        )
    ]


def _url(submission: Submission) -> str:
    return f"/review/submissions/{submission.pk}/"


def _label(submission: Submission) -> str:
    """How notifications name a submission: its number and benchmark (the system name stays on the page,
    which checks who may see it)."""
    return f"submission #{submission.pk} ({submission.benchmark.model_id})"


def _locked(submission: Submission) -> Submission:
    """The submission row locked for this transaction: review steps on one submission run one at a time."""
    return Submission.objects.select_for_update().get(pk=submission.pk)


# --- Conflicts of interest ----------------------------------------------------------------------


def _may_declare_for(actor, organisation: Organisation) -> bool:
    return user_is_chair(actor) or organisation.pk in user_org_ids(actor, roles=(Membership.Role.ORG_ADMIN,))


@transaction.atomic
def conflict_declare(
    *, organisation: Organisation, other: Organisation, kind: str, reason: str, actor
) -> Conflict:
    """Declare that `organisation`'s people may not review `other`'s submissions (and the other way round).
    The chair's declarations are pinned; an organisation admin declares for their own organisation. Active
    assignments that the conflict now forbids are released."""
    if not _may_declare_for(actor, organisation):
        raise NotAllowedError(f"Only the chair or an admin of {organisation.name} can declare its conflicts.")
    if organisation.pk == other.pk:
        raise ApplicationError("An organisation is always in conflict with itself.", code="invalid")
    if kind not in Conflict.Kind.values:
        raise ApplicationError(f"Kind must be one of {', '.join(Conflict.Kind.values)}.", code="invalid")
    if not (reason or "").strip():
        raise ApplicationError("Say why the two organisations are in conflict.", code="invalid")
    if Conflict.objects.filter(
        organisation__in=(organisation, other), other__in=(organisation, other)
    ).exists():
        raise ConflictError(
            f"{organisation.name} and {other.name} are already in conflict.", code="conflict-exists"
        )
    conflict = Conflict(
        organisation=organisation,
        other=other,
        kind=kind,
        reason=reason.strip(),
        pinned=user_is_chair(actor),
        declared_by=actor,
    )
    conflict.full_clean()
    conflict.save()
    audit_event_record(
        actor=actor,
        action="conflict.declared",
        obj=conflict,
        data={
            "organisation": organisation.slug,
            "other": other.slug,
            "kind": kind,
            "pinned": conflict.pinned,
        },
    )
    for assignment in ReviewAssignment.objects.filter(ReviewAssignment.states.q("active")).select_related(
        "submission", "reviewer"
    ):
        if selectors.user_is_conflicted(assignment.reviewer, assignment.submission):
            _release(assignment, actor=actor, reason="a conflict of interest was declared")
    return conflict


@transaction.atomic
def conflict_remove(*, conflict: Conflict, actor) -> None:
    """Organisations remove their own declarations; only the chair removes a pinned one."""
    if conflict.pinned and not user_is_chair(actor):
        raise NotAllowedError("This conflict was declared by the chair: only the chair can remove it.")
    if not _may_declare_for(actor, conflict.organisation):
        raise NotAllowedError(f"Only the chair or an admin of {conflict.organisation.name} can remove it.")
    audit_event_record(
        actor=actor,
        action="conflict.removed",
        obj=conflict,
        data={
            "organisation": conflict.organisation.slug,
            "other": conflict.other.slug,
            "kind": conflict.kind,
        },
    )
    conflict.delete()


# --- Assignment ---------------------------------------------------------------------------------


@transaction.atomic
def assignment_create(
    *, submission: Submission, reviewer, actor, due_at: datetime | None = None
) -> ReviewAssignment:
    """The chair asks `reviewer` to review the submission (they accept or decline)."""
    submission = _locked(submission)
    SUBMISSION.require(actor, submission, "assign")
    organisation_id = selectors.reviewer_organisation_for(reviewer, submission)
    if organisation_id is None:
        raise ApplicationError(
            f"{reviewer} cannot review submission #{submission.pk}: they are not a reviewer of an organisation "
            "without a conflict of interest with the submitter.",
            code="reviewer-not-eligible",
        )
    if selectors.assignment_active(reviewer, submission) is not None:
        raise ConflictError(
            f"{reviewer} is already assigned to submission #{submission.pk}.", code="already-assigned"
        )
    now = timezone.now()
    assignment = ReviewAssignment.objects.create(
        submission=submission,
        reviewer=reviewer,
        organisation_id=organisation_id,
        assigned_by=actor,
        due_at=due_at or now + timedelta(days=settings.PORTAL_REVIEW_DEADLINE_DAYS),
    )
    audit_event_record(
        actor=actor,
        action="review.assigned",
        obj=assignment,
        data={
            "submission": submission.pk,
            "reviewer": reviewer.username,
            "due_at": assignment.due_at.isoformat(),
        },
    )
    notify(
        users=[reviewer],
        kind="review.assigned",
        submission_id=submission.pk,
        subject=f"Please review {_label(submission)}",
        body=f"The chair asks you to review {_label(submission)} by {assignment.due_at:%Y-%m-%d}. Accept or decline "
        "on your review dashboard.",
        url="/review/",
    )
    return assignment


@transaction.atomic
def assignments_draw(*, submission: Submission, actor, count: int | None = None) -> list[ReviewAssignment]:
    """The chair asks for N reviewers (PORTAL_REVIEWERS_PER_SUBMISSION): drawn from eligible organisations with the
    least open load, one per organisation while there are enough organisations."""
    SUBMISSION.require(actor, submission, "assign")
    count = count or settings.PORTAL_REVIEWERS_PER_SUBMISSION
    candidates = selectors.eligible_reviewers(submission)
    if not candidates:
        raise ApplicationError(
            f"No reviewer is eligible for submission #{submission.pk}: every reviewer's organisation is the "
            "submitter's or in conflict with it.",
            code="no-eligible-reviewer",
        )
    org_load, reviewer_load = selectors.open_load_by_organisation(), selectors.open_load_by_reviewer()
    already_orgs = set(
        ReviewAssignment.objects.filter(
            ReviewAssignment.states.q("active"), submission=submission
        ).values_list("organisation_id", flat=True)
    )
    ranked = sorted(
        candidates,
        key=lambda pair: (
            pair[1] in already_orgs,
            org_load.get(pair[1], 0),
            reviewer_load.get(pair[0].pk, 0),
            pair[0].username,
        ),
    )
    chosen, used_orgs = [], set(already_orgs)
    for reviewer, organisation_id in ranked:  # one per organisation first
        if len(chosen) < count and organisation_id not in used_orgs:
            chosen.append(reviewer)
            used_orgs.add(organisation_id)
    for reviewer, _ in ranked:  # then fill from the least loaded, if organisations ran out
        if len(chosen) < count and reviewer not in chosen:
            chosen.append(reviewer)
    return [assignment_create(submission=submission, reviewer=reviewer, actor=actor) for reviewer in chosen]


def _own_assignment(assignment: ReviewAssignment, actor, action: str, reason: str = "") -> ReviewAssignment:
    """The assignment locked, once the assignment's table lets `actor` take `action` on it now."""
    assignment = (
        ReviewAssignment.objects.select_for_update().select_related("submission").get(pk=assignment.pk)
    )
    ASSIGNMENT.require(actor, assignment, action, reason=reason)
    return assignment


@transaction.atomic
def assignment_accept(*, assignment: ReviewAssignment, actor) -> ReviewAssignment:
    """The reviewer accepts; the submission moves to `in_review` when its first reviewer accepts."""
    submission = _locked(assignment.submission)
    assignment = _own_assignment(assignment, actor, "accept")  # the assignee, with no conflict now
    ASSIGNMENT.advance(ReviewAssignment.objects, assignment, "accept", responded_at=timezone.now())
    assignment.refresh_from_db()
    audit_event_record(
        actor=actor, action="review.accepted", obj=assignment, data={"submission": submission.pk}
    )
    if SUBMISSION.state_allows(submission, "start_review"):
        transition(submission=submission, action="start_review", actor=actor)
    notify(
        users=_submitters(submission),
        kind="review.accepted",
        submission_id=submission.pk,
        subject=f"A reviewer accepted {_label(submission)}",
        url=f"/submissions/{submission.pk}/",
    )
    return assignment


@transaction.atomic
def assignment_decline(*, assignment: ReviewAssignment, actor, reason: str) -> ReviewAssignment:
    if not (reason or "").strip():
        raise ApplicationError("Say why you decline (the chair reads it).", code="invalid")
    assignment = _own_assignment(assignment, actor, "decline", reason)
    ASSIGNMENT.advance(
        ReviewAssignment.objects, assignment, "decline", responded_at=timezone.now(), reason=reason.strip()
    )
    assignment.refresh_from_db()
    audit_event_record(
        actor=actor,
        action="review.declined",
        obj=assignment,
        data={"submission": assignment.submission_id, "reason": reason.strip()},
    )
    notify(
        users=chairs(),
        kind="review.declined",
        submission_id=assignment.submission_id,
        subject=f"{actor} declined to review {_label(assignment.submission)}",
        body=reason.strip(),
        url="/review/chair/",
    )
    return assignment


@transaction.atomic
def assignment_release(*, assignment: ReviewAssignment, actor, reason: str) -> bool:
    """The chair takes an assignment back (with a reason the reviewer and the log read)."""
    if not (reason or "").strip():
        raise ApplicationError("Say why the reviewer is released.", code="invalid")
    ASSIGNMENT.require(actor, assignment, "release", reason=reason)
    return _release(assignment, actor=actor, reason=reason.strip())


def _release(assignment: ReviewAssignment, *, actor, reason: str) -> bool:
    """Release an active assignment (the chair, a declared conflict, or the missed deadline when actor is None);
    False when it was no longer active (someone else released it first)."""
    released = ASSIGNMENT.advance(
        ReviewAssignment.objects, assignment, "release", reason=reason, responded_at=timezone.now()
    )
    if not released:
        return False
    audit_event_record(
        actor=actor,
        action="review.released",
        obj=assignment,
        data={"submission": assignment.submission_id, "reason": reason},
    )
    notify(
        users=[assignment.reviewer],
        kind="review.released",
        submission_id=assignment.submission_id,
        subject=f"You were released from {_label(assignment.submission)}",
        body=reason,
        url="/review/",
    )
    notify(
        users=chairs(),
        kind="review.released",
        submission_id=assignment.submission_id,
        subject=f"{assignment.reviewer} was released from {_label(assignment.submission)}",
        body=reason,
        url="/review/chair/",
        dedupe_key=f"released:{assignment.pk}",
    )
    return True


def assignments_release_conflicted(*, user, actor=None, reason: str = "") -> int:
    """After `user`'s memberships changed (they joined or left an organisation, a role changed): release each of
    their active assignments that they may no longer hold now (a conflict of interest with the submitter, or no
    longer a reviewer of the organisation they were assigned for), saying so to the reviewer and the chair.
    Called by accounts' membership services in their transaction (accounts.signals.membership_changed)."""
    released = 0
    for assignment in (
        ReviewAssignment.objects.select_for_update()
        .filter(ASSIGNMENT.sources_q("release"), reviewer=user)
        .select_related("submission", "reviewer")
    ):
        reviewing = user_org_ids(user, roles=(Membership.Role.REVIEWER,))
        if selectors.user_is_conflicted(user, assignment.submission):
            why = reason or "a membership change gave the reviewer a conflict of interest with the submitter"
        elif assignment.organisation_id not in reviewing:
            why = reason or "the reviewer is no longer a reviewer of the organisation they were assigned for"
        else:
            continue
        released += _release(assignment, actor=actor, reason=why)
    return released


def membership_changed_release(sender, *, user, actor=None, **kwargs) -> None:
    """accounts.signals.membership_changed's receiver: the rule is assignments_release_conflicted's."""
    assignments_release_conflicted(user=user, actor=actor)


# --- Reviews and the quorum ---------------------------------------------------------------------


def _try_complete_review(submission: Submission, actor) -> bool:
    """Move to peer_reviewed when the quorum holds (called after every approval and objection closed)."""
    if not SUBMISSION.state_allows(submission, "complete_review"):
        return False
    try:
        quorum_precondition(submission)
    except ConflictError:
        return False
    transition(submission=submission, action="complete_review", actor=actor)
    notify(
        users=_submitters(submission) + auditors(),
        kind="review.peer_reviewed",
        submission_id=submission.pk,
        subject=f"{_label(submission)} is peer reviewed",
        body="A quorum of reviewers approved it; it waits for an auditor.",
        url=_url(submission),
    )
    return True


@transaction.atomic
def review_submit(
    *, assignment: ReviewAssignment, actor, decision: str, body: str = "", objection_type: str = ""
) -> Review:
    """The reviewer's decision on the frozen version: approve (the quorum may complete the review), request
    changes (back to the submitter), or object (an objection is opened in the thread)."""
    submission = _locked(assignment.submission)
    assignment = ReviewAssignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.reviewer_id != getattr(actor, "pk", None):
        raise NotAllowedError("Only a reviewer who accepted this assignment can review it.")
    # an accepted assignment, no conflict of interest now, the submission in review
    SUBMISSION.require(actor, submission, "review")
    if decision not in Review.Decision.values:
        raise ApplicationError(
            f"Decision must be one of {', '.join(Review.Decision.values)}.", code="invalid"
        )
    body = _text_within_cap((body or "").strip(), what="A review")
    if decision != Review.Decision.APPROVE and not body:
        raise ApplicationError("Say what must change, or what you object to.", code="invalid")
    version = submission.submitted_version
    if Review.objects.filter(assignment=assignment, version=version).exists():
        raise ConflictError(f"You already reviewed version {version.number}.", code="already-reviewed")
    review = Review.objects.create(assignment=assignment, version=version, decision=decision, body=body)
    audit_event_record(
        actor=actor,
        action=f"review.{decision}",
        obj=review,
        data={"submission": submission.pk, "version": version.number},
    )
    if decision == Review.Decision.OBJECT:
        comment_post(
            submission=submission,
            actor=actor,
            body=body,
            kind=Comment.Kind.OBJECTION,
            objection_type=objection_type or Comment.ObjectionType.VALIDITY,
        )
    elif decision == Review.Decision.REQUEST_CHANGES:
        transition(submission=submission, action="request_changes", actor=actor, reason=body)
        notify(
            users=_submitters(submission),
            kind="review.changes_requested",
            submission_id=submission.pk,
            subject=f"Changes requested on {_label(submission)}",
            body=body,
            url=f"/submissions/{submission.pk}/",
        )
    else:
        _try_complete_review(submission, actor)
    return review


# --- The thread and objections --------------------------------------------------------------------


def _may_post(actor, submission: Submission, visibility: str) -> bool:
    allowed = selectors.comment_visibilities_for(actor, submission)
    return visibility in allowed


# The longest comment, review or answer any door takes (the API's serializers say the same): readers of a review
# page load every comment of the thread.
TEXT_MAX_CHARS = 20_000


def _text_within_cap(text: str, *, what: str) -> str:
    if len(text) > TEXT_MAX_CHARS:
        raise ApplicationError(
            f"{what} can be at most {TEXT_MAX_CHARS:,} characters (this one has {len(text):,}): shorten it, or "
            "attach the long part as a file to a new version.",
            code="text-too-long",
            extra={"max_chars": TEXT_MAX_CHARS},
        )
    return text


@transaction.atomic
def comment_post(
    *,
    submission: Submission,
    actor,
    body: str,
    kind: str = Comment.Kind.COMMENT,
    objection_type: str = "",
    visibility: str = Comment.Visibility.ALL,
    parent: Comment | None = None,
    finding: Finding | None = None,
    point_key: str = "",
    file: str = "",
    line: int | None = None,
    version: SubmissionVersion | None = None,
) -> Comment:
    """A comment, an objection (reviewers, auditors, the chair) or a reply. A submitter's reply to an open
    objection answers it; an objection's answer is due in PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS business days."""
    body = _text_within_cap((body or "").strip(), what="A comment")
    if not body:
        raise ApplicationError("A comment needs a text.", code="invalid")
    # the thread is open, and the actor may write in it now (a reviewer with a conflict of interest may not)
    SUBMISSION.require(actor, submission, "object" if kind == Comment.Kind.OBJECTION else "comment")
    if visibility not in Comment.Visibility.values:
        raise ApplicationError(
            f"Visibility must be one of {', '.join(Comment.Visibility.values)}.", code="invalid"
        )
    if parent is not None:
        if parent.submission_id != submission.pk:
            raise ApplicationError("The reply belongs to another submission's thread.", code="invalid")
        visibility = parent.visibility  # a reply is read by whoever read what it answers
    if not _may_post(actor, submission, visibility):
        raise NotAllowedError("You cannot write in this thread at that visibility.")
    is_submitter = submission.organisation_id in user_org_ids(actor)
    if kind == Comment.Kind.OBJECTION:
        if is_submitter:
            raise NotAllowedError("Objections are raised by reviewers, auditors and the chair.")
        if objection_type not in Comment.ObjectionType.values:
            raise ApplicationError(
                f"An objection's type is one of {', '.join(Comment.ObjectionType.values)}.", code="invalid"
            )
        if parent is not None:
            raise ApplicationError("An objection starts its own thread.", code="invalid")
    if finding is not None and finding.check_run.version.submission_id != submission.pk:
        raise ApplicationError("The finding belongs to another submission.", code="invalid")
    now = timezone.now()
    comment = Comment(
        submission=submission,
        version=version or submission.submitted_version or submission.versions.order_by("-number").first(),
        parent=parent,
        author=actor,
        kind=kind,
        objection_type=objection_type if kind == Comment.Kind.OBJECTION else "",
        objection_status=Comment.ObjectionStatus.OPEN if kind == Comment.Kind.OBJECTION else "",
        visibility=visibility,
        body=body,
        finding=finding,
        point_key=point_key or "",
        file=file or "",
        line=line,
        answer_due_at=(
            selectors.add_business_days(now, settings.PORTAL_OBJECTION_ANSWER_BUSINESS_DAYS)
            if kind == Comment.Kind.OBJECTION
            else None
        ),
    )
    comment.full_clean()
    comment.save()
    audit_event_record(
        actor=actor,
        action="review.objection_raised" if kind == Comment.Kind.OBJECTION else "review.commented",
        obj=comment,
        data={
            "submission": submission.pk,
            "visibility": visibility,
            **({"type": objection_type} if kind == Comment.Kind.OBJECTION else {}),
            **({"parent": parent.pk} if parent is not None else {}),
        },
    )
    if parent is not None and parent.kind == Comment.Kind.OBJECTION and is_submitter:
        if OBJECTION.advance(Comment.objects, parent, "answer"):
            audit_event_record(
                actor=actor,
                action="review.objection_answered",
                obj=parent,
                data={"submission": submission.pk, "answer": comment.pk},
            )
    readers = _thread_readers(submission, visibility)
    notify(
        users=[user for user in readers if user.pk != actor.pk],
        kind="review.objection" if kind == Comment.Kind.OBJECTION else "review.comment",
        submission_id=submission.pk,
        subject=(
            f"Objection ({comment.get_objection_type_display().lower()}) on {_label(submission)}"
            if kind == Comment.Kind.OBJECTION
            else f"New comment on {_label(submission)}"
        ),
        body=body[:2000],
        url=_url(submission),
    )
    return comment


def _thread_readers(submission: Submission, visibility: str) -> list:
    readers = auditors() + chairs()
    if visibility in (Comment.Visibility.ALL, Comment.Visibility.REVIEWERS):
        readers += _reviewers(submission)
    if visibility == Comment.Visibility.ALL:
        readers += _submitters(submission)
    return readers


@transaction.atomic
def objection_close(*, objection: Comment, actor, outcome: str, note: str = "") -> Comment:
    """The objector or the chair resolves or overrules an objection; the quorum may then complete the review."""
    submission = _locked(objection.submission)
    objection = Comment.objects.select_for_update().get(pk=objection.pk)
    if objection.kind != Comment.Kind.OBJECTION:
        raise ApplicationError("Only an objection is resolved or overruled.", code="invalid")
    actions = {Comment.ObjectionStatus.RESOLVED: "resolve", Comment.ObjectionStatus.OVERRULED: "overrule"}
    if outcome not in actions:
        raise ApplicationError("Outcome is resolved or overruled.", code="invalid")
    OBJECTION.require(actor, objection, actions[outcome])
    Comment.objects.filter(pk=objection.pk).update(
        objection_status=outcome, closed_by=actor, closed_at=timezone.now()
    )
    objection.refresh_from_db()
    audit_event_record(
        actor=actor,
        action=f"review.objection_{outcome}",
        obj=objection,
        data={"submission": submission.pk, "note": (note or "").strip()},
    )
    if (note or "").strip():
        comment_post(submission=submission, actor=actor, body=note, parent=objection)
    _try_complete_review(submission, actor)
    return objection


# --- Waivers ------------------------------------------------------------------------------------


@transaction.atomic
def waiver_request(
    *,
    version: SubmissionVersion,
    actor,
    rule: str,
    point: str = "",
    file: str = "",
    reason: str,
    notify_deciders: bool = True,
) -> Waiver:
    """The submitter asks to waive a failing finding of one version, saying why the rule does not fit
    (`notify_deciders=False`: the caller tells the deciders once for a group, waivers_request_group)."""
    submission = Submission.objects.select_for_update().get(pk=version.submission_id)
    # the submitter, while a waiver can still matter (never once peer review is over: audited, published...)
    SUBMISSION.require(actor, submission, "request_waiver")
    if not (reason or "").strip():
        raise ApplicationError("Say why this finding should be waived.", code="invalid")
    check_run = check_run_latest(version)
    if (
        check_run is None
        or not Finding.objects.filter(
            check_run=check_run, severity="error", rule=rule, point=point or "", file=file or ""
        ).exists()
    ):
        raise ApplicationError(
            f"Version {version.number}'s latest check has no error finding {rule} at that point and file.",
            code="finding-not-found",
        )
    waiver, created = Waiver.objects.get_or_create(
        version=version,
        rule=rule,
        point=point or "",
        file=file or "",
        defaults={"request_reason": reason.strip(), "requested_by": actor},
    )
    if not created:
        raise ConflictError(f"A waiver of {rule} here is already {waiver.status}.", code="waiver-exists")
    audit_event_record(
        actor=actor,
        action="waiver.requested",
        obj=waiver,
        data={"submission": submission.pk, "version": version.number, "rule": rule, "point": point},
    )
    if notify_deciders and SUBMISSION.state_allows(submission, "waive"):  # someone is there to decide it
        notify(
            users=chairs() + auditors(),
            kind="waiver.requested",
            submission_id=submission.pk,
            subject=f"Waiver of {rule} asked for on {_label(submission)}",
            body=reason.strip(),
            url=_url(submission),
        )
    return waiver


@transaction.atomic
def waiver_decide(
    *, waiver: Waiver, actor, grant: bool, reason: str, notify_submitters: bool = True
) -> Waiver:
    """The chair or an auditor grants or refuses a waiver, with a reason; a granted finding counts as waived
    (`notify_submitters=False`: the caller tells them once for a group, waivers_decide_group)."""
    if not (reason or "").strip():
        raise ApplicationError("Say why the waiver is granted or refused.", code="invalid")
    waiver = Waiver.objects.select_related("version__submission").get(pk=waiver.pk)
    WAIVER.require(actor, waiver, "grant" if grant else "refuse", reason=reason)
    if not WAIVER.advance(
        Waiver.objects,
        waiver,
        "grant" if grant else "refuse",
        decided_by=actor,
        decision_reason=reason.strip(),
        decided_at=timezone.now(),
    ):
        raise ConflictError("This waiver was already decided.", code="state-conflict")
    waiver.refresh_from_db()
    status = waiver.status
    submission = waiver.version.submission
    audit_event_record(
        actor=actor,
        action=f"waiver.{status}",
        obj=waiver,
        data={
            "submission": submission.pk,
            "rule": waiver.rule,
            "point": waiver.point,
            "reason": reason.strip(),
        },
    )
    if notify_submitters:
        notify(
            users=_submitters(submission),
            kind=f"waiver.{status}",
            submission_id=submission.pk,
            subject=f"Waiver of {waiver.rule} {status} on {_label(submission)}",
            body=reason.strip(),
            url=f"/submissions/{submission.pk}/",
        )
    return waiver


@transaction.atomic
def waivers_request_group(
    *, version: SubmissionVersion, actor, rule: str, reason: str, points: list[str] | None = None
) -> list[Waiver]:
    """One justification for every error finding of `rule` in the version's latest check that has no waiver yet
    (or only those at `points`): one waiver each (each audited, each decided on its own or as a group), and one
    notification to the deciders for the lot. Nothing is written when one of them is refused."""
    check_run = check_run_latest(version)
    findings = (
        Finding.objects.filter(check_run=check_run, severity="error", rule=rule).order_by(
            "point", "file", "pk"
        )
        if check_run is not None
        else Finding.objects.none()
    )
    if points is not None:
        findings = findings.filter(point__in=points)
    taken = set(Waiver.objects.filter(version=version, rule=rule).values_list("point", "file"))
    wanted = list(
        dict.fromkeys(
            (f.point or "", f.file or "") for f in findings if (f.point or "", f.file or "") not in taken
        )
    )
    if not wanted:
        raise ApplicationError(
            f"Version {version.number}'s latest check has no error finding {rule} without a waiver.",
            code="finding-not-found",
        )
    waivers = [
        waiver_request(
            version=version,
            actor=actor,
            rule=rule,
            point=point,
            file=file,
            reason=reason,
            notify_deciders=False,
        )
        for point, file in wanted
    ]
    submission = version.submission
    if SUBMISSION.state_allows(submission, "waive"):
        notify(
            users=chairs() + auditors(),
            kind="waiver.requested",
            submission_id=submission.pk,
            subject=f"{len(waivers)} waivers of {rule} asked for on {_label(submission)}",
            body=reason.strip(),
            url=_url(submission),
        )
    return waivers


@transaction.atomic
def waivers_decide_group(*, waivers: list[Waiver], actor, grant: bool, reason: str) -> list[Waiver]:
    """The chair or an auditor decides several requested waivers at once with one reason (each audited, all or
    none written); the submitters get one notification per submission and rule."""
    if not waivers:
        raise ApplicationError("Choose the waivers to decide.", code="invalid")
    decided = [
        waiver_decide(waiver=waiver, actor=actor, grant=grant, reason=reason, notify_submitters=False)
        for waiver in waivers
    ]
    groups: dict[tuple[int, str], list[Waiver]] = {}
    for waiver in decided:
        groups.setdefault((waiver.version.submission_id, waiver.rule), []).append(waiver)
    for (_, rule), group in groups.items():
        submission = group[0].version.submission
        status = group[0].status
        notify(
            users=_submitters(submission),
            kind=f"waiver.{status}",
            submission_id=submission.pk,
            subject=f"{len(group)} waiver{'s' if len(group) != 1 else ''} of {rule} {status} on "
            f"{_label(submission)}",
            body=reason.strip(),
            url=f"/submissions/{submission.pk}/",
        )
    return decided


@transaction.atomic
def waiver_grant_directly(
    *, version: SubmissionVersion, actor, rule: str, point: str = "", file: str = "", reason: str
) -> Waiver:
    """The chair or an auditor waives a failing finding nobody asked about (e.g. seen during the audit)."""
    SUBMISSION.require(actor, version.submission, "waive")
    check_run = check_run_latest(version)
    if (
        check_run is None
        or not Finding.objects.filter(
            check_run=check_run, severity="error", rule=rule, point=point or "", file=file or ""
        ).exists()
    ):
        raise ApplicationError(
            f"Version {version.number} has no error finding {rule} there.", code="finding-not-found"
        )
    waiver, _ = Waiver.objects.get_or_create(version=version, rule=rule, point=point or "", file=file or "")
    return waiver_decide(waiver=waiver, actor=actor, grant=True, reason=reason)


# --- Audit: attestation and evidence --------------------------------------------------------------


@transaction.atomic
def attestation_record(*, submission: Submission, actor, notes: str) -> Attestation:
    """An auditor attests the peer-reviewed version (notes required): peer_reviewed -> audited."""
    submission = _locked(submission)
    submission = transition(submission=submission, action="attest", actor=actor, reason=notes)
    attestation = Attestation.objects.create(
        submission=submission, version=submission.submitted_version, auditor=actor, notes=notes.strip()
    )
    notify(
        users=_submitters(submission) + chairs(),
        kind="audit.attested",
        submission_id=submission.pk,
        subject=f"{_label(submission)} is audited",
        body="Choose when to publish it.",
        url=f"/submissions/{submission.pk}/",
    )
    return attestation


@transaction.atomic
def evidence_request(
    *, submission: Submission, actor, question: str, due_days: int | None = None
) -> EvidenceRequest:
    """An auditor asks the submitter for evidence, with a deadline; attestation waits for the answer."""
    submission = _locked(submission)
    SUBMISSION.require(actor, submission, "request_evidence")
    if not (question or "").strip():
        raise ApplicationError("Ask a question the submitter can answer.", code="invalid")
    request = EvidenceRequest.objects.create(
        submission=submission,
        version=submission.submitted_version,
        auditor=actor,
        question=question.strip(),
        due_at=timezone.now() + timedelta(days=due_days or settings.PORTAL_EVIDENCE_DAYS),
    )
    audit_event_record(
        actor=actor,
        action="audit.evidence_requested",
        obj=request,
        data={"submission": submission.pk, "due_at": request.due_at.isoformat()},
    )
    notify(
        users=_submitters(submission),
        kind="audit.evidence_requested",
        submission_id=submission.pk,
        subject=f"An auditor asks for evidence on {_label(submission)}",
        body=f"{question.strip()}\n\nAnswer by {request.due_at:%Y-%m-%d}.",
        url=f"/submissions/{submission.pk}/",
    )
    return request


@transaction.atomic
def evidence_answer(*, request: EvidenceRequest, actor, answer: str) -> EvidenceRequest:
    submission = request.submission
    EVIDENCE_REQUEST.require(actor, request, "answer")
    if not (answer or "").strip():
        raise ApplicationError(
            "An answer needs a text (attach files in the thread, or upload a new version).", code="invalid"
        )
    if not EVIDENCE_REQUEST.advance(
        EvidenceRequest.objects,
        request,
        "answer",
        answer=answer.strip(),
        answered_by=actor,
        answered_at=timezone.now(),
    ):
        raise ConflictError("This request was already answered.", code="state-conflict")
    request.refresh_from_db()
    audit_event_record(
        actor=actor, action="audit.evidence_answered", obj=request, data={"submission": submission.pk}
    )
    notify(
        users=[request.auditor],
        kind="audit.evidence_answered",
        submission_id=submission.pk,
        subject=f"Evidence answered on {_label(submission)}",
        body=answer.strip()[:2000],
        url=_url(submission),
    )
    return request


# --- Deadlines (Celery beat) -----------------------------------------------------------------------


def deadlines_run(*, now: datetime | None = None) -> dict[str, int]:
    """Release reviewers past their due date, remind submitters a day before an objection's answer is due,
    escalate overdue objections and evidence requests to the chair. Each event is handled once: every step
    is a compare-and-set on its own timestamp, so two beat processes do not double it."""
    now = now or timezone.now()
    released = reminded = escalated = 0
    for assignment in ReviewAssignment.objects.filter(
        ReviewAssignment.states.q("active"), due_at__lt=now
    ).select_related("submission", "reviewer"):
        reviewed = Review.objects.filter(
            assignment=assignment, version_id=assignment.submission.submitted_version_id
        )
        if reviewed.exists():
            continue
        with transaction.atomic():
            if _release(assignment, actor=None, reason="the review deadline passed"):
                released += 1
    for objection in Comment.objects.filter(
        Comment.states.q("waiting_for_submitter"),
        kind=Comment.Kind.OBJECTION,
        reminded_at__isnull=True,
        answer_due_at__lte=now + timedelta(days=1),
        answer_due_at__gt=now,
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if Comment.objects.filter(pk=objection.pk, reminded_at__isnull=True).update(reminded_at=now):
                notify(
                    users=_submitters(objection.submission),
                    kind="review.objection_due",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {_label(objection.submission)} is due tomorrow",
                    body=objection.body[:2000],
                    url=f"/submissions/{objection.submission_id}/",
                    dedupe_key=f"objection-due:{objection.pk}",
                )
                reminded += 1
    for objection in Comment.objects.filter(
        Comment.states.q("waiting_for_submitter"),
        kind=Comment.Kind.OBJECTION,
        escalated_at__isnull=True,
        answer_due_at__lte=now,
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if Comment.objects.filter(pk=objection.pk, escalated_at__isnull=True).update(escalated_at=now):
                notify(
                    users=chairs(),
                    kind="review.objection_overdue",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {_label(objection.submission)} is overdue",
                    body=objection.body[:2000],
                    url=_url(objection.submission),
                    dedupe_key=f"objection-overdue:{objection.pk}",
                )
                notify(
                    users=_submitters(objection.submission),
                    kind="review.objection_overdue",
                    submission_id=objection.submission_id,
                    subject=f"An objection on {_label(objection.submission)} is overdue",
                    url=f"/submissions/{objection.submission_id}/",
                    dedupe_key=f"objection-overdue:{objection.pk}",
                )
                escalated += 1
    for request in EvidenceRequest.objects.filter(
        EvidenceRequest.states.q("open"), due_at__lte=now, reminded_at__isnull=True
    ).select_related("submission__benchmark"):
        with transaction.atomic():
            if EvidenceRequest.objects.filter(pk=request.pk, reminded_at__isnull=True).update(
                reminded_at=now
            ):
                notify(
                    users=chairs() + [request.auditor],
                    kind="audit.evidence_overdue",
                    submission_id=request.submission_id,
                    subject=f"Evidence on {_label(request.submission)} is overdue",
                    url=_url(request.submission),
                    dedupe_key=f"evidence-overdue:{request.pk}",
                )
                escalated += 1
    return {"released": released, "reminded": reminded, "escalated": escalated}


# --- The submitter's transitions -----------------------------------------------------------------------------


def submission_submit(*, submission, actor):
    """draft -> submitted, only when the latest version's latest check passed; that version is frozen.
    The `submit` row of review.lifecycle.SUBMISSION."""
    return transition(submission=submission, action="submit", actor=actor)


def submission_withdraw(*, submission, actor, reason: str):
    """Any non-terminal state -> withdrawn, by a submitter of the organisation, with a reason.
    The `withdraw` row of review.lifecycle.SUBMISSION."""
    return transition(submission=submission, action="withdraw", actor=actor, reason=reason)
