"""Reads of people and roles: the role lookups every visibility rule and permission check builds on."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import GlobalRole, Invitation, Membership, Organisation, VerifiedAddress

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
    return role in _global_roles(user)


def _global_roles(user) -> frozenset[str]:
    """The global roles the user holds (one query a request)."""
    return request_memoized(
        ("user_global_roles", user.pk),
        lambda: frozenset(GlobalRole.objects.filter(user=user).values_list("role", flat=True)),
    )


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


# --- Two-factor sign-in ----------------------------------------------------------------------------


def user_requires_second_factor(user) -> bool:
    """The chair (superusers included) and auditors may act only after signing in with a second factor."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or bool(_global_roles(user))


def totp_device_of(user, *, confirmed: bool | None = True):
    """The user's authenticator-app device (django-otp TOTPDevice), None when there is none."""

    devices = TOTPDevice.objects.filter(user=user)
    if confirmed is not None:
        devices = devices.filter(confirmed=confirmed)
    return devices.order_by("pk").first()


def user_has_second_factor(user) -> bool:
    return user is not None and user.is_authenticated and totp_device_of(user) is not None


def recovery_codes_left(user) -> int:

    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


# --- Organisation administration -------------------------------------------------------------------


def user_administers(user, organisation) -> bool:
    """The chair, or an organisation admin of `organisation`: who manages its members and invitations."""
    return user_is_chair(user) or organisation.pk in user_org_ids(user, roles=(Membership.Role.ORG_ADMIN,))


def organisations_administered_by(user) -> QuerySet[Organisation]:
    if user_is_chair(user):
        return Organisation.objects.order_by("name")
    return Organisation.objects.filter(
        pk__in=user_org_ids(user, roles=(Membership.Role.ORG_ADMIN,))
    ).order_by("name")


def organisation_members(organisation) -> list[dict[str, object]]:
    """Each member once, with their roles, who gave each and when: [{"user", "roles": [Membership, ...]}]."""
    members: dict[int, dict[str, object]] = {}
    rows = (
        Membership.objects.filter(organisation=organisation)
        .select_related("user", "added_by")
        .order_by("user__username", "role")
    )
    for membership in rows:
        entry = members.setdefault(membership.user_id, {"user": membership.user, "roles": []})
        entry["roles"].append(membership)  # type: ignore[attr-defined]
    return list(members.values())


def invitations_pending(organisation) -> QuerySet:

    return (
        Invitation.objects.filter(
            organisation=organisation,
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .select_related("invited_by")
        .order_by("-created_at")
    )


def global_role_holders() -> QuerySet[GlobalRole]:
    return GlobalRole.objects.select_related("user").order_by("role", "user__username")


def user_email_verified(user) -> bool:
    """Whether the user's current e-mail address is one they proved is theirs (a signed link sent to it)."""
    email = (getattr(user, "email", "") or "").strip().lower()
    if not email or user.pk is None:
        return False
    return VerifiedAddress.objects.filter(user=user, email=email).exists()


def user_find(identifier: str):
    """The active user a sign-in name means: the username (case-insensitive), else the one user with that
    e-mail address; None when there is no such user or the address is shared by several."""
    identifier = (identifier or "").strip()
    if not identifier:
        return None
    users = get_user_model().objects.filter(is_active=True)
    by_name = list(users.filter(username__iexact=identifier)[:2])
    if len(by_name) == 1:
        return by_name[0]
    exact = [user for user in by_name if user.username == identifier]
    if exact:
        return exact[0]
    if "@" in identifier:
        by_email = list(users.filter(email__iexact=identifier)[:2])
        if len(by_email) == 1:
            return by_email[0]
    return None
