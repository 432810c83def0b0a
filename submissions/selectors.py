"""Reads for people, roles, benchmarks and systems; the role lookups every visibility rule builds on."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db.models import Q, QuerySet

from submissions.models import Benchmark, GlobalRole, Membership, Organisation, System

# --- Roles: the building blocks of the visibility table in DESIGN.md -----------------------------
# Later: submissions_visible_to(user) = published
#   | organisation_id in user_org_ids(user)
#   | (assigned to user as reviewer, status >= submitted)
#   | (status != draft if user_is_auditor(user) or user_is_chair(user))


def user_org_ids(user, *, roles: tuple[str, ...] | None = None) -> set[int]:
    """Ids of the organisations the user is a member of (optionally only with one of `roles`)."""
    if user is None or not user.is_authenticated:
        return set()
    memberships = Membership.objects.filter(user=user)
    if roles is not None:
        memberships = memberships.filter(role__in=roles)
    return set(memberships.values_list("organisation_id", flat=True))


def user_has_global_role(user, role: str) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return GlobalRole.objects.filter(user=user, role=role).exists()


def user_is_auditor(user) -> bool:
    """Auditors see every non-draft submission."""
    return user_has_global_role(user, GlobalRole.Role.AUDITOR)


def user_is_chair(user) -> bool:
    """The chair runs the benchmark (organisations, catalog, conflicts); a superuser counts as chair."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or user_has_global_role(user, GlobalRole.Role.CHAIR)


def user_roles(user) -> dict[str, object]:
    """A summary of everything the user may act as: {"organisations": {slug: [roles]}, "auditor", "chair"}."""
    organisations: dict[str, list[str]] = {}
    if user is not None and user.is_authenticated:
        for membership in Membership.objects.filter(user=user).select_related("organisation"):
            organisations.setdefault(membership.organisation.slug, []).append(membership.role)
    return {
        "organisations": {slug: sorted(roles) for slug, roles in organisations.items()},
        "auditor": user_is_auditor(user),
        "chair": user_is_chair(user),
    }


def organisations_of_user(user) -> QuerySet[Organisation]:
    return Organisation.objects.filter(pk__in=user_org_ids(user)).order_by("name")


# --- Catalog ---------------------------------------------------------------------------------


def benchmark_list(*, active_only: bool = True) -> QuerySet[Benchmark]:
    """The benchmark catalog; public information."""
    benchmarks = Benchmark.objects.all()
    if active_only:
        benchmarks = benchmarks.filter(is_active=True)
    return benchmarks.order_by("model_id")


def benchmark_tokenizer_json(benchmark: Benchmark) -> str:
    """The text of the benchmark's tokenizer.json (uploaded file first, else the shipped one), for
    tokenizers.Tokenizer.from_str; works whatever the storage backend."""
    if benchmark.tokenizer_file:
        with benchmark.tokenizer_file.open("rb") as handle:
            return handle.read().decode("utf-8")
    root = Path(settings.PORTAL_TOKENIZERS_DIR).resolve()
    path = (root / benchmark.tokenizer_path).resolve()
    if root not in path.parents:
        raise ValueError(f"Tokenizer path {benchmark.tokenizer_path!r} leaves {root}.")
    return path.read_text(encoding="utf-8")


# --- Systems ---------------------------------------------------------------------------------


def systems_visible_to(user) -> QuerySet[System]:
    """Systems of the user's own organisations; auditors and the chair see all of them; everyone (anonymous
    included) sees the systems of published results."""
    from django.db.models import Exists, OuterRef

    from submissions.models import Submission

    systems = System.objects.select_related("organisation")
    if user_is_auditor(user) or user_is_chair(user):
        return systems.all()
    published = Exists(
        Submission.objects.filter(system_id=OuterRef("pk"), status=Submission.Status.PUBLISHED)
    )
    return systems.filter(Q(organisation_id__in=user_org_ids(user)) | Q(published))


def systems_submittable_by(user) -> QuerySet[System]:
    """Systems the user may submit results for and describe: of the organisations where they are a submitter
    or org admin (all of them for the chair)."""
    systems = System.objects.select_related("organisation").order_by("organisation__name", "name")
    if user_is_chair(user):
        return systems
    return systems.filter(
        organisation_id__in=user_org_ids(user, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    )


def organisations_registering_systems(user) -> QuerySet[Organisation]:
    """Organisations the user may register systems for (submitter or org admin; every one for the chair)."""
    if user_is_chair(user):
        return Organisation.objects.order_by("name")
    return Organisation.objects.filter(
        pk__in=user_org_ids(user, roles=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN))
    ).order_by("name")


def system_description_revisions(system: System):
    """A system's description history, newest first (visible wherever the system is)."""
    return system.description_revisions.select_related("created_by").order_by("-number")


# --- Submissions: the visibility table of DESIGN.md ------------------------------------------


def user_can_submit_for(user, organisation: Organisation) -> bool:
    """Submitters and org admins of the organisation (and the chair) may create, upload and submit."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    roles = (Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN)
    return organisation.pk in user_org_ids(user, roles=roles) or user_is_chair(user)


def submissions_visible_to(user):
    """Every submission the user may see, as DESIGN.md's table says:
    anonymous: published only; members: all of their organisations' submissions in every state;
    assigned reviewers: their assignments from `submitted` on (never drafts);
    auditors and the chair: every non-draft submission. Anything else does not exist for the user (404).
    """
    from django.db.models import Q

    from submissions.models import Submission

    submissions = Submission.objects.select_related("organisation", "system", "benchmark")
    visible = Q(status=Submission.Status.PUBLISHED)
    if user is not None and user.is_authenticated and user.is_active:
        visible |= Q(organisation_id__in=user_org_ids(user))
        visible |= Q(review_assignments__reviewer=user) & ~Q(status=Submission.Status.DRAFT)
        if user_is_auditor(user) or user_is_chair(user):
            visible |= ~Q(status=Submission.Status.DRAFT)
    # A reviewer with several assignment rows would repeat a submission: keep the ids distinct.
    return submissions.filter(pk__in=Submission.objects.filter(visible).values("pk"))


def submission_get_visible(user, pk):
    """One submission, or Http404 when it does not exist for the user (never a 403 that leaks existence)."""
    from django.shortcuts import get_object_or_404

    return get_object_or_404(submissions_visible_to(user), pk=pk)


def versions_visible_to(user):
    from submissions.models import SubmissionVersion

    return (
        SubmissionVersion.objects.filter(submission__in=submissions_visible_to(user))
        .select_related("submission", "uploader")
        .prefetch_related("files")
    )


def check_runs_visible_to(user):
    from submissions.models import CheckRun

    return CheckRun.objects.filter(version__submission__in=submissions_visible_to(user)).select_related(
        "version__submission"
    )


def uploads_visible_to(user):
    """Upload sessions are private to the uploading organisation's members (they are never published)."""
    from submissions.models import Upload

    if user is None or not user.is_authenticated:
        return Upload.objects.none()
    return Upload.objects.filter(submission__organisation_id__in=user_org_ids(user)).select_related(
        "submission__organisation"
    )


def _latest_check_runs():
    """Check runs no later run of the same version outranks (ordering -created_at, -id): one per version."""
    from django.db.models import Exists, OuterRef, Q

    from submissions.models import CheckRun

    later = CheckRun.objects.filter(version_id=OuterRef("version_id")).filter(
        Q(created_at__gt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__gt=OuterRef("id"))
    )
    return CheckRun.objects.filter(~Exists(later)).defer("report", "curves")  # list rows show neither blob


def versions_with_latest_check(versions):
    """Versions with their latest check run prefetched (a fixed number of queries for any number of rows)."""
    from django.db.models import Prefetch

    return versions.prefetch_related(
        Prefetch("check_runs", queryset=_latest_check_runs(), to_attr="latest_check_runs")
    )


def submissions_with_latest(submissions):
    """Submissions with their latest version (files, uploader, latest check run) prefetched, for lists: the
    number of queries does not grow with the rows. version_latest / check_run_latest read the prefetch."""
    from django.db.models import Exists, OuterRef, Prefetch

    from submissions.models import SubmissionVersion

    newer = SubmissionVersion.objects.filter(
        submission_id=OuterRef("submission_id"), number__gt=OuterRef("number")
    )
    latest_versions = versions_with_latest_check(
        SubmissionVersion.objects.filter(~Exists(newer)).select_related("uploader").prefetch_related("files")
    )
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
    return version.check_runs.defer("report").order_by("-created_at", "-id").first()


def check_run_official(check_run) -> dict | None:
    """The official checker's verdict kept in the run's report, read without loading the whole report."""
    from submissions.models import CheckRun

    official = CheckRun.objects.filter(pk=check_run.pk).values_list("report__official", flat=True).first()
    return official if isinstance(official, dict) else None


def check_run_findings(check_run):
    """The run's findings, errors first (a run's rows are visible wherever the run is)."""
    from django.db.models import Case, IntegerField, Value, When

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
