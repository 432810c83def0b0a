"""Writes for organisations, users, memberships and global roles (the chair's); each records an audit event."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from accounts.models import (
    GlobalRole,
    Membership,
    Organisation,
)
from accounts.selectors import user_administers, user_is_chair, user_org_ids
from accounts.signals import membership_changed
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError

User = get_user_model()


def require_chair(actor) -> None:
    # actor None is the system itself (migrations, seed_demo, management commands).
    if actor is not None and not user_is_chair(actor):
        raise NotAllowedError("Only the chair can do this.")


@transaction.atomic
def organisation_create(*, name: str, kind: str, slug: str | None = None, actor=None) -> Organisation:
    require_chair(actor)
    organisation = Organisation(name=name, slug=slug or slugify(name), kind=kind)
    organisation.full_clean()
    organisation.save()
    audit_event_record(
        actor=actor, action="organisation.created", obj=organisation, data={"name": name, "kind": kind}
    )
    return organisation


@transaction.atomic
def user_create(
    *,
    username: str,
    email: str = "",
    password: str | None = None,
    is_staff: bool = False,
    is_superuser: bool = False,
    actor=None,
) -> User:
    require_chair(actor)
    user = User(username=username, email=email, is_staff=is_staff or is_superuser, is_superuser=is_superuser)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    audit_event_record(
        actor=actor,
        action="user.created",
        obj=user,
        data={"username": username, "is_staff": user.is_staff, "is_superuser": is_superuser},
    )
    return user


@transaction.atomic
def membership_grant(*, user, organisation: Organisation, role: str, actor=None, added_by=None) -> Membership:
    """Give a user a role in an organisation (chair, or an org_admin of that organisation)."""
    if actor is not None and not (
        user_is_chair(actor) or organisation.pk in user_org_ids(actor, roles=(Membership.Role.ORG_ADMIN,))
    ):
        raise NotAllowedError("Only the chair or an admin of this organisation can add members.")
    return membership_add(user=user, organisation=organisation, role=role, actor=actor, added_by=added_by)


def membership_add(
    *, user, organisation: Organisation, role: str, actor, added_by=None, via: str = ""
) -> Membership:
    """The role given and its audit event (actor: who did it, e.g. the invitee accepting an invitation; the
    caller checked that they may)."""
    if role not in Membership.Role.values:
        raise NotAllowedError(
            f"{role!r} is not a role inside an organisation (the auditor and chair roles are the chair's to give)."
        )
    membership, created = Membership.objects.get_or_create(
        user=user, organisation=organisation, role=role, defaults={"added_by": added_by or actor}
    )
    if created:
        membership.full_clean()
        data = {"user": user.username, "organisation": organisation.slug, "role": role}
        if via:
            data["via"] = via
        if membership.added_by_id is not None:
            data["added_by"] = membership.added_by.get_username()
        audit_event_record(actor=actor, action="membership.granted", obj=membership, data=data)
        membership_changed.send(sender=Membership, user=user, actor=actor)
    return membership


@transaction.atomic
def global_role_grant(*, user, role: str, actor=None) -> GlobalRole:
    require_chair(actor)
    global_role, created = GlobalRole.objects.get_or_create(user=user, role=role)
    if created:
        global_role.full_clean()
        audit_event_record(
            actor=actor,
            action="global_role.granted",
            obj=global_role,
            data={"user": user.username, "role": role},
        )
    return global_role


@transaction.atomic
def global_role_revoke(*, user, role: str, actor=None) -> bool:
    """Take a global role back (the chair only); the last chair keeps theirs. True when one was removed."""
    require_chair(actor)
    if role == GlobalRole.Role.CHAIR and not GlobalRole.objects.filter(role=role).exclude(user=user).exists():
        raise ApplicationError(
            "The portal needs a chair: grant the role to someone else first.", code="last_chair"
        )
    removed, _ = GlobalRole.objects.filter(user=user, role=role).delete()
    if removed:
        audit_event_record(
            actor=actor, action="global_role.revoked", obj=user, data={"user": user.username, "role": role}
        )
    return bool(removed)


def require_organisation_admin(actor, organisation: Organisation) -> None:
    if actor is not None and not user_administers(actor, organisation):
        raise NotAllowedError("Only the chair or an admin of this organisation can manage its members.")


def member_roles_chosen(roles) -> list[str]:
    """The roles asked for, each one an organisation role; the global roles are refused as an escalation."""
    chosen = sorted({str(role) for role in roles})
    for role in chosen:
        if role not in Membership.Role.values:
            raise NotAllowedError(
                f"{role!r} is not a role an organisation can give: only {', '.join(Membership.Role.values)}. "
                "The auditor and chair roles are granted by the chair on /accounts/roles/.",
                code="role_not_grantable",
            )
    if not chosen:
        raise ApplicationError("Choose at least one role.", code="no_role")
    return chosen


def _admins_left(organisation: Organisation, *, without_user) -> bool:
    return (
        Membership.objects.filter(organisation=organisation, role=Membership.Role.ORG_ADMIN)
        .exclude(user=without_user)
        .exists()
    )


@transaction.atomic
def membership_roles_set(*, user, organisation: Organisation, roles, actor) -> list[str]:
    """Make `user`'s roles in the organisation exactly `roles` (chair or the organisation's admin). The
    organisation keeps at least one admin. The roles now held."""
    require_organisation_admin(actor, organisation)
    chosen = member_roles_chosen(roles)
    held = set(Membership.objects.filter(user=user, organisation=organisation).values_list("role", flat=True))
    if not held:
        raise ApplicationError(
            f"{user.get_username()} is not a member of {organisation.name}.", code="not_member"
        )
    if (
        Membership.Role.ORG_ADMIN in held
        and Membership.Role.ORG_ADMIN not in chosen
        and not _admins_left(organisation, without_user=user)
    ):
        raise ApplicationError(
            f"{organisation.name} needs an admin: make someone else its admin first.", code="last_admin"
        )
    for role in sorted(set(chosen) - held):
        membership_grant(user=user, organisation=organisation, role=role, actor=actor)
    for role in sorted(held - set(chosen)):
        Membership.objects.filter(user=user, organisation=organisation, role=role).delete()
        audit_event_record(
            actor=actor,
            action="membership.revoked",
            obj=organisation,
            data={"user": user.username, "organisation": organisation.slug, "role": role},
        )
        membership_changed.send(sender=Membership, user=user, actor=actor)
    return chosen


@transaction.atomic
def membership_remove(*, user, organisation: Organisation, actor) -> int:
    """Remove `user` from the organisation (every role); the organisation keeps at least one admin."""
    require_organisation_admin(actor, organisation)
    held = list(
        Membership.objects.filter(user=user, organisation=organisation).values_list("role", flat=True)
    )
    if Membership.Role.ORG_ADMIN in held and not _admins_left(organisation, without_user=user):
        raise ApplicationError(
            f"{organisation.name} needs an admin: make someone else its admin first.", code="last_admin"
        )
    Membership.objects.filter(user=user, organisation=organisation).delete()
    for role in sorted(held):
        audit_event_record(
            actor=actor,
            action="membership.revoked",
            obj=organisation,
            data={"user": user.username, "organisation": organisation.slug, "role": role},
        )
    membership_changed.send(sender=Membership, user=user, actor=actor)
    return len(held)
