"""Reads of the review app: conflicts, who may review what, queues, the thread each person may read, quorum."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet

from accounts.models import Membership
from accounts.selectors import request_memoized, user_is_auditor, user_is_chair, user_org_ids
from review.models import Comment, Conflict, EvidenceRequest, Review, ReviewAssignment, Waiver
from submissions.models import CheckRun, Finding, PointMetric, Submission, SubmissionVersion
from submissions.selectors import check_run_latest, check_run_official
from submissions.verdicts import verdict


def user_is_reviewer(user) -> bool:
    """Whether the user holds a reviewer role in any organisation."""
    return bool(user_org_ids(user, roles=(Membership.Role.REVIEWER,)))


# --- Conflicts of interest ----------------------------------------------------------------------


def conflicted_organisation_ids(organisation_id: int) -> set[int]:
    """The organisation itself and every organisation declared in conflict with it (either direction)."""

    def read() -> frozenset[int]:
        pairs = Conflict.objects.filter(Q(organisation_id=organisation_id) | Q(other_id=organisation_id))
        ids = {organisation_id}
        for left, right in pairs.values_list("organisation_id", "other_id"):
            ids.update((left, right))
        return frozenset(ids)

    return set(request_memoized(("conflicted_organisation_ids", organisation_id), read))


def organisations_conflicted_with_any(organisation_ids) -> set[int]:
    """conflicted_organisation_ids of every organisation of `organisation_ids`, united (one query)."""
    ids = frozenset(organisation_ids)
    if not ids:
        return set()

    def read() -> frozenset[int]:
        pairs = Conflict.objects.filter(Q(organisation_id__in=ids) | Q(other_id__in=ids)).order_by()
        found = set(ids)
        for left, right in pairs.values_list("organisation_id", "other_id"):
            found.update((left, right))
        return frozenset(found)

    return set(request_memoized(("organisations_conflicted_with_any", ids), read))


def user_is_conflicted(user, submission: Submission) -> bool:
    """A member (any role) of the submitting organisation or of one in conflict with it."""
    return bool(user_org_ids(user) & conflicted_organisation_ids(submission.organisation_id))


def reviewer_organisation_for(user, submission: Submission) -> int | None:
    """The organisation `user` would review `submission` for, or None when they may not review it."""
    if (
        user is None
        or not user.is_authenticated
        or not user.is_active
        or user_is_conflicted(user, submission)
    ):
        return None
    reviewing = sorted(user_org_ids(user, roles=(Membership.Role.REVIEWER,)))
    return reviewing[0] if reviewing else None


def eligible_reviewers(submission: Submission) -> list[tuple[object, int]]:
    """(user, organisation id) of every reviewer without a conflict and without an active assignment here."""
    blocked = conflicted_organisation_ids(submission.organisation_id)
    already = set(
        ReviewAssignment.objects.filter(
            ReviewAssignment.states.q("active"), submission=submission
        ).values_list("reviewer_id", flat=True)
    )
    # Anyone holding any membership in a blocked organisation is out, whatever else they are.
    blocked_users = set(
        Membership.objects.filter(organisation_id__in=blocked).values_list("user_id", flat=True)
    )
    out = []
    memberships = (
        Membership.objects.filter(role=Membership.Role.REVIEWER, user__is_active=True)
        .exclude(organisation_id__in=blocked)
        .exclude(user_id__in=blocked_users | already)
        .order_by("organisation__name", "user__username")
    )
    users = get_user_model().objects.in_bulk({m.user_id for m in memberships})
    seen = set()
    for membership in memberships:
        if membership.user_id in seen:
            continue
        seen.add(membership.user_id)
        out.append((users[membership.user_id], membership.organisation_id))
    return out


def open_load_by_organisation() -> dict[int, int]:
    """Active assignments per reviewing organisation (the chair's 'assign N' draws from the least loaded)."""
    rows = (
        ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"))
        .exclude(Submission.states.q("review_over", via="submission"))
        .values("organisation_id")
        .annotate(load=Count("id"))
    )
    return {row["organisation_id"]: row["load"] for row in rows}


def open_load_by_reviewer() -> dict[int, int]:
    rows = (
        ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"))
        .exclude(Submission.states.q("review_over", via="submission"))
        .values("reviewer_id")
        .annotate(load=Count("id"))
    )
    return {row["reviewer_id"]: row["load"] for row in rows}


# --- Assignments and reviews --------------------------------------------------------------------


def assignment_active(user, submission: Submission) -> ReviewAssignment | None:
    if user is None or not user.is_authenticated:
        return None
    return ReviewAssignment.objects.filter(
        ReviewAssignment.states.q("active"), submission=submission, reviewer=user
    ).first()


def user_is_assigned_reviewer(user, submission: Submission) -> bool:
    """An accepted assignment and no conflict (the lifecycle table's `assigned_reviewer`)."""
    if user is None or not user.is_authenticated or user_is_conflicted(user, submission):
        return False
    return ReviewAssignment.objects.filter(
        ReviewAssignment.states.q("accepted"), submission=submission, reviewer=user
    ).exists()


def review_queue(user) -> QuerySet[ReviewAssignment]:
    """The reviewer's open assignments, soonest due first."""
    return (
        ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"), reviewer=user)
        .exclude(Submission.states.q("terminal", via="submission"))
        .select_related("submission__organisation", "submission__system", "submission__benchmark")
        .order_by("due_at", "pk")
    )


def reviews_of_version(version: SubmissionVersion) -> QuerySet[Review]:
    return Review.objects.filter(version=version).select_related(
        "assignment__reviewer", "assignment__organisation"
    )


def approvals_count(submission: Submission, version: SubmissionVersion | None = None) -> int:
    """Approvals of the version by reviewers whose assignment still stands and who have no conflict of interest
    with the submitter now: an approval by someone who joined the submitting (or a conflicted) organisation since
    does not count."""
    version_id = version.pk if version is not None else submission.submitted_version_id
    approvals = Review.objects.filter(
        ReviewAssignment.states.q("accepted", via="assignment"),
        version_id=version_id,
        decision=Review.Decision.APPROVE,
        assignment__submission=submission,
    ).select_related("assignment__reviewer")
    return sum(1 for review in approvals if not user_is_conflicted(review.assignment.reviewer, submission))


# --- The thread ---------------------------------------------------------------------------------


def comment_visibilities_for(user, submission: Submission) -> tuple[str, ...]:
    """Which visibility levels of the thread this user reads."""
    if user_is_auditor(user) or user_is_chair(user):
        return tuple(Comment.Visibility.values)
    if assignment_active(user, submission) is not None and not user_is_conflicted(user, submission):
        return (Comment.Visibility.ALL, Comment.Visibility.REVIEWERS)
    if submission.organisation_id in user_org_ids(user):
        return (Comment.Visibility.ALL,)
    return ()


def open_objections(submission: Submission) -> QuerySet[Comment]:
    return Comment.objects.filter(
        Comment.states.q("open"), submission=submission, kind=Comment.Kind.OBJECTION
    )


def add_business_days(start: datetime, days: int) -> datetime:
    """`days` working days (Monday to Friday) after `start`, at the same time of day."""
    current = start
    added = 0
    while added < days:
        current += timedelta(days=1)
        if current.weekday() < 5:
            added += 1
    return current


# --- Waivers and attestation --------------------------------------------------------------------


def _identity(finding) -> tuple[str, str, str]:
    return (finding.rule, finding.point or "", finding.file or "")


def error_findings(check_run: CheckRun) -> QuerySet[Finding]:
    return Finding.objects.filter(check_run=check_run, severity="error").order_by("rule", "point", "file")


def unwaived_errors(
    version: SubmissionVersion, check_run: CheckRun, *, granted_only: bool = False
) -> list[Finding]:
    """Error findings of the run with no waiver asked for (or, with granted_only, none granted)."""
    states = (
        Waiver.states.q("granted")
        if granted_only
        else Waiver.states.q("granted") | Waiver.states.q("requested")
    )
    covered = {
        (rule, point, file)
        for rule, point, file in Waiver.objects.filter(states, version=version).values_list(
            "rule", "point", "file"
        )
    }
    return [finding for finding in error_findings(check_run) if _identity(finding) not in covered]


def waived_error_count(
    version: SubmissionVersion | None, check_run: CheckRun | None, *, errors: list[Finding] | None = None
) -> int:
    """How many error findings of the run have a granted waiver (the status badge says "N waived").
    `errors`: the run's error findings when the caller has read them already."""
    if version is None or check_run is None or not check_run.in_state("failed"):
        return 0
    granted = set(
        Waiver.objects.filter(Waiver.states.q("granted"), version=version).values_list(
            "rule", "point", "file"
        )
    )
    if not granted:  # the usual case: no need to read the findings
        return 0
    if errors is None:
        errors = list(error_findings(check_run).only("rule", "point", "file"))
    return sum(1 for finding in errors if _identity(finding) in granted)


def waived_error_counts(check_runs) -> dict[int, int]:
    """waived_error_count for many check runs (by run id) in at most two queries, for lists."""
    failed = [run for run in check_runs if run is not None and run.in_state("failed")]
    if not failed:
        return {}
    granted: dict[int, set] = {}
    for version_id, rule, point, file in Waiver.objects.filter(
        Waiver.states.q("granted"), version_id__in={run.version_id for run in failed}
    ).values_list("version_id", "rule", "point", "file"):
        granted.setdefault(version_id, set()).add((rule, point or "", file or ""))
    waived_runs = {run.pk: granted[run.version_id] for run in failed if run.version_id in granted}
    counts: dict[int, int] = {}
    if not waived_runs:
        return counts
    for run_id, rule, point, file in Finding.objects.filter(
        check_run_id__in=list(waived_runs), severity="error"
    ).values_list("check_run_id", "rule", "point", "file"):
        if (rule, point or "", file or "") in waived_runs[run_id]:
            counts[run_id] = counts.get(run_id, 0) + 1
    return counts


def check_verdicts_prime(check_runs) -> None:
    """Put each run's check_verdict on it (`run.verdict`) for a list, in at most two queries."""
    runs = [run for run in check_runs if run is not None]
    counts = waived_error_counts(runs)
    for run in runs:
        run.verdict = check_verdict(None, run, waived=counts.get(run.pk, 0))


def check_verdict(
    version: SubmissionVersion | None,
    check_run: CheckRun | None,
    *,
    errors: list[Finding] | None = None,
    waived: int | None = None,
    official: bool = False,
) -> dict:
    """What a check run's verdict reads wherever it is shown, in the one vocabulary (submissions.verdicts): passed,
    passed with N waived (a failed run whose every error finding has a granted waiver: a published result's check,
    never "failed"), failed, not run and why. `status` is the word an API answer carries (passed,
    passed_with_waivers, failed, ...). With `official` the official cross-check's words too ("official")."""
    if check_run is None:
        return verdict(None, **({"official": None} if official else {}))
    error_count = int((check_run.counts or {}).get("error") or 0)
    if waived is None:
        waived = waived_error_count(version, check_run, errors=errors)
    extra = {"official": check_run_official(check_run)} if official else {}
    return verdict(check_run.status, errors=error_count, waived=waived, **extra)


def waivers_of(version: SubmissionVersion) -> QuerySet[Waiver]:
    return Waiver.objects.filter(version=version).select_related("requested_by", "decided_by")


def open_evidence_requests(submission: Submission) -> QuerySet[EvidenceRequest]:
    return EvidenceRequest.objects.filter(EvidenceRequest.states.q("open"), submission=submission)


@dataclass
class AttestationReadiness:
    """What stands between a peer-reviewed submission and its attestation (empty: ready)."""

    missing: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.missing


def attestation_readiness(submission: Submission) -> AttestationReadiness:
    readiness = AttestationReadiness()
    version = submission.submitted_version
    check_run = check_run_latest(version) if version is not None else None
    if check_run is None or not check_run.in_state("judged"):
        readiness.missing.append("a finished check of the frozen version")
    elif check_run.in_state("failed"):
        unwaived = unwaived_errors(version, check_run, granted_only=True)
        if unwaived:
            readiness.missing.append(
                f"a granted waiver for each of {len(unwaived)} error finding{'s' if len(unwaived) != 1 else ''} "
                f"({', '.join(sorted({f.rule for f in unwaived})[:5])})"
            )
    objections = open_objections(submission).count()
    if objections:
        readiness.missing.append(f"{objections} open objection{'s' if objections != 1 else ''} closed")
    evidence = open_evidence_requests(submission).count()
    if evidence:
        readiness.missing.append(f"{evidence} open evidence request{'s' if evidence != 1 else ''} answered")
    return readiness


# --- Queues of the auditor and the chair -------------------------------------------------------


def audit_queue() -> QuerySet[Submission]:
    return (
        Submission.objects.filter(Submission.states.q("awaiting_audit"))
        .select_related("organisation", "system", "benchmark", "submitted_version")
        .order_by("status_changed_at", "pk")
    )


@dataclass
class ChairDashboard:
    unassigned: list[Submission]
    overdue_assignments: list[ReviewAssignment]
    overdue_objections: list[Comment]
    stuck: list[Submission]
    awaiting_audit: list[Submission]
    waivers_requested: list[Waiver]


def chair_dashboard(*, now: datetime, stuck_after_days: int = 14) -> ChairDashboard:
    active = ReviewAssignment.states.q("active", via="review_assignments")
    unassigned = list(
        Submission.objects.filter(Submission.states.q("under_review"))
        .annotate(active=Count("review_assignments", filter=active))
        .filter(active=0)
        .select_related("organisation", "system", "benchmark")
        .order_by("status_changed_at", "pk")
    )
    overdue_assignments = list(
        ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"), due_at__lt=now)
        .select_related("reviewer", "submission__organisation", "submission__system")
        .order_by("due_at")
    )
    overdue_objections = list(
        Comment.objects.filter(
            Comment.states.q("waiting_for_submitter"), kind=Comment.Kind.OBJECTION, answer_due_at__lt=now
        )
        .select_related("submission__organisation", "submission__system", "author")
        .order_by("answer_due_at")
    )
    stuck = list(
        Submission.objects.filter(
            Submission.states.q("in_process"),
            status_changed_at__lt=now - timedelta(days=stuck_after_days),
        )
        .select_related("organisation", "system", "benchmark")
        .order_by("status_changed_at")
    )
    waivers = waivers_awaiting_decision()
    return ChairDashboard(
        unassigned=unassigned,
        overdue_assignments=overdue_assignments,
        overdue_objections=overdue_objections,
        stuck=stuck,
        awaiting_audit=list(audit_queue()),
        waivers_requested=waivers,
    )


# --- What changed between two versions ------------------------------------------------------------


@dataclass
class VersionDiff:
    """What reviewers see between the version they reviewed and the new one."""

    files_added: list[str]
    files_removed: list[str]
    files_changed: list[str]
    findings_added: list[tuple]
    findings_removed: list[tuple]
    points: list[dict]  # {"key", "old": {...}, "new": {...}} per load point, official metrics side by side


DIFF_METRICS = ("system_tps", "tps_per_user", "ttft_p90_ms", "tpot_p90_ms", "qps", "n_samples_completed")


def _metric_table(check_run: CheckRun | None) -> dict[str, dict]:
    if check_run is None:
        return {}
    table = {}
    for metric in PointMetric.objects.filter(check_run=check_run):
        values = metric.recomputed or metric.claimed or {}
        table[metric.key] = {name: values.get(name) for name in DIFF_METRICS}
    return table


def version_diff(old: SubmissionVersion, new: SubmissionVersion) -> VersionDiff:
    old_files = {f.original_filename: f.sha256 for f in old.files.all()}
    new_files = {f.original_filename: f.sha256 for f in new.files.all()}
    old_run, new_run = check_run_latest(old), check_run_latest(new)

    def finding_set(run):
        if run is None:
            return set()
        return set(run.findings.values_list("rule", "severity", "point", "file", "message"))

    old_findings, new_findings = finding_set(old_run), finding_set(new_run)
    old_metrics, new_metrics = _metric_table(old_run), _metric_table(new_run)
    keys = sorted(set(old_metrics) | set(new_metrics), key=lambda key: (len(key), key))
    return VersionDiff(
        files_added=sorted(set(new_files) - set(old_files)),
        files_removed=sorted(set(old_files) - set(new_files)),
        files_changed=sorted(
            name for name in set(old_files) & set(new_files) if old_files[name] != new_files[name]
        ),
        findings_added=sorted(new_findings - old_findings),
        findings_removed=sorted(old_findings - new_findings),
        points=[{"key": key, "old": old_metrics.get(key), "new": new_metrics.get(key)} for key in keys],
    )


def quorum_size() -> int:
    return settings.PORTAL_REVIEW_QUORUM


def waivers_awaiting_decision() -> list[Waiver]:
    """Waivers a submitter asked for that the chair or an auditor has not decided, oldest first."""
    return list(
        Waiver.objects.filter(Waiver.states.q("requested"))
        .exclude(Submission.states.q("draft", via="version__submission"))
        .select_related("version__submission__organisation", "version__submission__system", "requested_by")
        .order_by("created_at")
    )


def waivers_asked_with(waiver: Waiver) -> list[Waiver]:
    """`waiver` and the other waivers still asked for of its version and rule (decided as one group), first."""
    others = (
        Waiver.objects.filter(Waiver.states.q("requested"), version_id=waiver.version_id, rule=waiver.rule)
        .exclude(pk=waiver.pk)
        .order_by("point", "file", "pk")
    )
    return [waiver, *others]


def waiver_groups(waivers: list[Waiver]) -> list[dict]:
    """Requested waivers grouped by version and rule, in first-seen order: {"first", "waivers", "points"}."""
    groups: dict[tuple[int, str], list[Waiver]] = {}
    for waiver in waivers:
        groups.setdefault((waiver.version_id, waiver.rule), []).append(waiver)
    return [
        {
            "first": group[0],
            "waivers": group,
            "points": [w.point.rsplit("/", 1)[-1] for w in group if w.point],
            "reasons": list(dict.fromkeys(w.request_reason for w in group)),
        }
        for group in groups.values()
    ]
