"""Reads for people, roles, benchmarks and systems; the role lookups every visibility rule builds on."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet

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
    """Systems of the user's own organisations; auditors and the chair see all of them.
    (Systems of published results become public through the leaderboard, not here.)"""
    systems = System.objects.select_related("organisation")
    if user_is_auditor(user) or user_is_chair(user):
        return systems.all()
    return systems.filter(organisation_id__in=user_org_ids(user))
