"""Reads of systems, submissions, versions and check runs: who may submit for what, and the latest
version and check run of each, in a fixed number of queries. Who may *see* what is access/."""

from __future__ import annotations

from django.db.models import Case, Exists, IntegerField, OuterRef, Prefetch, Q, QuerySet, Value, When

from accounts.actors import SUBMITTER_ROLES
from accounts.models import Organisation
from accounts.selectors import user_is_chair, user_org_ids
from submissions.models import CheckRun, Submission, SubmissionVersion, System

# --- Systems ---------------------------------------------------------------------------------


def systems_submittable_by(user) -> QuerySet[System]:
    """Systems the user may submit results for and describe: of the organisations where they are a submitter
    or org admin (all of them for the chair)."""
    systems = System.objects.select_related("organisation").order_by("organisation__name", "name")
    if user_is_chair(user):
        return systems
    return systems.filter(organisation_id__in=user_org_ids(user, roles=SUBMITTER_ROLES))


def systems_for_new_drafts(user) -> QuerySet[System]:
    """Systems the user may open a draft for: of the organisations where they are a submitter or org admin.

    Not every system for the chair: a draft is its organisation's own (DESIGN.md, visibility), so a draft the
    chair opened for another organisation would be hidden from the chair right away."""
    return (
        System.objects.select_related("organisation")
        .filter(organisation_id__in=user_org_ids(user, roles=SUBMITTER_ROLES))
        .order_by("organisation__name", "name")
    )


def drafts_of(system: System, benchmark) -> QuerySet[Submission]:
    """The drafts of one system on one benchmark, newest first: what a new draft of the pair would duplicate."""
    return Submission.objects.filter(
        Submission.states.q("draft"), system=system, benchmark=benchmark
    ).order_by("-created_at", "-id")


def organisations_registering_systems(user) -> QuerySet[Organisation]:
    """Organisations the user may register systems for (submitter or org admin; every one for the chair)."""
    if user_is_chair(user):
        return Organisation.objects.order_by("name")
    return Organisation.objects.filter(pk__in=user_org_ids(user, roles=SUBMITTER_ROLES)).order_by("name")


def system_description_revisions(system: System):
    """A system's description history, newest first (visible wherever the system is)."""
    return system.description_revisions.select_related("created_by").order_by("-number")


# --- Submissions -----------------------------------------------------------------------------


def user_can_submit_for(user, organisation: Organisation) -> bool:
    """Submitters and org admins of the organisation (and the chair) may create, upload and submit."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return organisation.pk in user_org_ids(user, roles=SUBMITTER_ROLES) or user_is_chair(user)


def _latest_check_runs():
    """Check runs no later run of the same version outranks (ordering -created_at, -id): one per version."""
    own = CheckRun.objects.filter(purpose=CheckRun.Purpose.SUBMISSION)  # a re-check run is never current
    later = own.filter(version_id=OuterRef("version_id")).filter(
        Q(created_at__gt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__gt=OuterRef("id"))
    )
    # List rows show none of the blobs (the report, the curves, the pipeline's per-point file map).
    return own.filter(~Exists(later)).defer("report", "curves", "point_files")


def versions_with_latest_check(versions):
    """Versions with their latest check run prefetched (a fixed number of queries for any number of rows)."""
    return versions.prefetch_related(
        Prefetch("check_runs", queryset=_latest_check_runs(), to_attr="latest_check_runs")
    )


def submissions_with_latest(submissions, *, files: bool = True):
    """Submissions with their latest version (files, uploader, latest check run) prefetched, for lists: the
    number of queries does not grow with the rows. version_latest / check_run_latest read the prefetch.
    files=False leaves out the files and the uploader (the dashboard shows neither)."""
    newer = SubmissionVersion.objects.filter(
        submission_id=OuterRef("submission_id"), number__gt=OuterRef("number")
    )
    versions = SubmissionVersion.objects.filter(~Exists(newer))
    if files:
        versions = versions.select_related("uploader").prefetch_related("files")
    latest_versions = versions_with_latest_check(versions)
    return submissions.prefetch_related(
        Prefetch("versions", queryset=latest_versions, to_attr="latest_versions")
    )


def version_latest(submission):
    prefetched = getattr(submission, "latest_versions", None)
    if prefetched is not None:
        return prefetched[0] if prefetched else None
    return submission.versions.order_by("-number").first()


def check_run_latest(version):
    if version is None:
        return None
    prefetched = getattr(version, "latest_check_runs", None)
    if prefetched is not None:
        return prefetched[0] if prefetched else None
    return (
        version.check_runs.filter(purpose=CheckRun.Purpose.SUBMISSION)
        .defer("report")
        .order_by("-created_at", "-id")
        .first()
    )


def check_run_official(check_run) -> dict | None:
    """The official checker's verdict kept in the run's report, read without loading the whole report."""
    official = CheckRun.objects.filter(pk=check_run.pk).values_list("report__official", flat=True).first()
    return official if isinstance(official, dict) else None


def check_run_curves_and_official(check_run) -> tuple[list, dict | None]:
    """The run's curves and the official checker's verdict in one read (the list rows left both out)."""
    row = CheckRun.objects.filter(pk=check_run.pk).values_list("curves", "report__official").first()
    curves, official = row if row is not None else ([], None)
    return curves or [], official if isinstance(official, dict) else None


def check_run_report(check_run) -> dict | None:
    """The run's whole stored report (Report.to_dict()), or None when the run kept none (it could not finish)."""
    report = CheckRun.objects.filter(pk=check_run.pk).values_list("report", flat=True).first()
    return report if isinstance(report, dict) else None


def check_run_findings(check_run):
    """The run's findings, errors first (a run's rows are visible wherever the run is)."""
    order = Case(
        When(severity="error", then=Value(0)),
        When(severity="warning", then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )
    return check_run.findings.annotate(severity_order=order).order_by(
        "severity_order", "point", "file", "line", "id"
    )


def check_run_point_metrics(check_run):
    return check_run.point_metrics.order_by("system", "model", "concurrency")


def published_revisions(root: Submission) -> list[tuple[int, Submission]]:
    """The published revisions of a result, newest first: (revision number, the submission that made it). The
    first submission is revision 1 (also when published before revisions were numbered)."""
    extensions = list(
        root.extensions.filter(Submission.states.q("published"), revision__isnull=False)
        .select_related("submitted_version")
        .order_by("-revision")
    )
    out = [(extension.revision, extension) for extension in extensions]
    if root.in_state("published"):
        out.append((root.revision or 1, root))
    return out


def extension_open_of(root: Submission) -> Submission | None:
    """The result's extension still on its way (neither published, withdrawn nor rejected), if any."""
    return root.extensions.filter(Submission.states.q("pending")).order_by("-created_at").first()
