"""Reads of people and roles: the role lookups every visibility rule and permission check builds on."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from accounts.models import GlobalRole, Membership, Organisation

# --- One read per request -------------------------------------------------------------------
# A page asks "which organisations is this user in", "is the user the chair" a dozen times (the header, the
# visibility rules, the permission checks, the review panel): inside a read-only request the answer cannot
# change, so each is read once (portal.middleware.RoleMemoMiddleware opens the memo for GET and HEAD only;
# writes, commands and tasks always read the database).

_T = TypeVar("_T")
_request_memo: ContextVar[dict | None] = ContextVar("accounts_request_memo", default=None)


@contextmanager
def request_memo() -> Iterator[None]:
    """Within the block, request_memoized answers each key once (a read-only request)."""
    token = _request_memo.set({})
    try:
        yield
    finally:
        _request_memo.reset(token)


def request_memoized(key: Hashable, compute: Callable[[], _T]) -> _T:
    """compute(), read once per key inside request_memo(); every time outside one."""
    memo = _request_memo.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _memberships(user) -> tuple[Membership, ...]:
    """The user's memberships with their organisations, by organisation name then role (one query a request)."""
    if user is None or not user.is_authenticated:
        return ()
    return request_memoized(
        ("memberships", user.pk),
        lambda: tuple(
            Membership.objects.filter(user=user)
            .select_related("organisation")
            .order_by("organisation__name", "role")
        ),
    )


def user_org_ids(user, *, roles: tuple[str, ...] | None = None) -> set[int]:
    """Ids of the organisations the user is a member of (optionally only with one of `roles`)."""
    return {m.organisation_id for m in _memberships(user) if roles is None or m.role in roles}


def user_organisations(user) -> list[Organisation]:
    """The organisations the user is a member of, by name (the header and the dashboard show them)."""
    organisations: dict[int, Organisation] = {}
    for membership in _memberships(user):
        organisations.setdefault(membership.organisation_id, membership.organisation)
    return sorted(organisations.values(), key=lambda o: (o.name, o.pk))


def user_has_global_role(user, role: str) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return request_memoized(
        ("user_global_roles", user.pk),
        lambda: frozenset(GlobalRole.objects.filter(user=user).values_list("role", flat=True)),
    ).__contains__(role)


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
    for membership in _memberships(user):
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
    for membership in _memberships(user):
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
