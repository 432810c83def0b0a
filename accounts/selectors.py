"""Reads of people and roles: the role lookups every visibility rule and permission check builds on."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from accounts.models import GlobalRole, Membership, Organisation


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


ROLE_HINTS = {
    Membership.Role.SUBMITTER: "creates drafts, uploads and submits",
    Membership.Role.REVIEWER: "reviews other organisations' submissions when assigned",
    Membership.Role.ORG_ADMIN: "submits, and manages the organisation's members",
}


def membership_labels(user) -> list[dict[str, object]]:
    """The user's memberships for people: [{"organisation": name, "roles": [(label, hint), ...]}], by name."""
    by_org: dict[str, list[tuple[str, str]]] = {}
    if user is not None and user.is_authenticated:
        memberships = Membership.objects.filter(user=user).select_related("organisation")
        for membership in memberships.order_by("organisation__name", "role"):
            role = Membership.Role(membership.role)
            by_org.setdefault(membership.organisation.name, []).append((role.label, ROLE_HINTS.get(role, "")))
    return [{"organisation": name, "roles": roles} for name, roles in by_org.items()]


def organisations_of_user(user) -> QuerySet[Organisation]:
    return Organisation.objects.filter(pk__in=user_org_ids(user)).order_by("name")


def chairs() -> list:
    """Active users holding the chair role (superusers when nobody does): who hears about escalations."""
    users = get_user_model().objects.filter(is_active=True)
    return list(users.filter(global_roles__role=GlobalRole.Role.CHAIR).distinct()) or list(
        users.filter(is_superuser=True)
    )


def auditors() -> list:
    """Active users holding the auditor role."""
    return list(
        get_user_model().objects.filter(is_active=True, global_roles__role=GlobalRole.Role.AUDITOR).distinct()
    )


def organisation_submitters(organisation_id: int) -> list:
    """Active submitters and org admins of an organisation: who hears about its submissions."""
    return list(
        get_user_model()
        .objects.filter(
            is_active=True,
            memberships__organisation_id=organisation_id,
            memberships__role__in=(Membership.Role.SUBMITTER, Membership.Role.ORG_ADMIN),
        )
        .distinct()
    )
