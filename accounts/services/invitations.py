"""Invitations to an organisation: created by its admins, bound to the invited address, accepted once (by a
signed-in account, or by registering from the link); the confirmation link that verifies an address and joins."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import (
    Invitation,
    Membership,
    Organisation,
)
from accounts.selectors import user_email_verified
from accounts.services.addresses import (
    EMAIL_VERIFY_DAYS,
    EMAIL_VERIFY_SALT,
    address_verified_record,
    email_verification_send,
)
from accounts.services.organisations import (
    member_roles_chosen,
    membership_add,
    organisation_create,
    require_chair,
    require_organisation_admin,
)
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError

User = get_user_model()

# --- Organisations run themselves: invitations and memberships ---------------------------------------


INVITATION_SALT = "accounts.invitation"


def invitation_link(invitation: Invitation) -> str:
    """The site-relative accept link: signed (the id and the nonce), so it cannot be forged or guessed."""
    token = signing.dumps({"i": invitation.pk, "n": invitation.nonce}, salt=INVITATION_SALT, compress=True)
    return reverse("accounts:invitation_accept", kwargs={"token": token})


def invitation_from_token(token: str) -> Invitation:
    """The invitation a link names, still pending; ApplicationError (stable code) saying why not otherwise."""
    try:
        payload = signing.loads(
            token, salt=INVITATION_SALT, max_age=timedelta(days=settings.PORTAL_INVITATION_DAYS)
        )
    except signing.SignatureExpired:
        raise ApplicationError(
            "This invitation has expired. Ask the organisation's admin for a new one.",
            code="invitation_expired",
        ) from None
    except signing.BadSignature:
        raise ApplicationError(
            "This invitation link is not valid: check that it was copied whole.", code="invitation_invalid"
        ) from None
    invitation = (
        Invitation.objects.select_related("organisation", "invited_by")
        .filter(pk=payload.get("i"), nonce=payload.get("n"))
        .first()
    )
    if invitation is None or invitation.revoked_at is not None:
        raise ApplicationError(
            "This invitation was withdrawn. Ask the organisation's admin for a new one.",
            code="invitation_revoked",
        )
    if invitation.accepted_at is not None:
        raise ApplicationError(
            "This invitation has already been used. Log in to reach the organisation.", code="invitation_used"
        )
    if invitation.expires_at <= timezone.now():
        raise ApplicationError(
            "This invitation has expired. Ask the organisation's admin for a new one.",
            code="invitation_expired",
        )
    return invitation


@transaction.atomic
def invitation_create(*, organisation: Organisation, email: str, roles, actor) -> Invitation:
    """Invite `email` to the organisation with `roles` (chair or the organisation's admin); e-mails the link."""
    require_organisation_admin(actor, organisation)
    chosen = member_roles_chosen(roles)
    invitation = Invitation(
        organisation=organisation,
        email=email.strip(),
        roles=chosen,
        invited_by=actor,
        nonce=secrets.token_hex(16),
        expires_at=timezone.now() + timedelta(days=settings.PORTAL_INVITATION_DAYS),
    )
    invitation.full_clean()
    invitation.save()
    audit_event_record(
        actor=actor,
        action="invitation.created",
        obj=invitation,
        data={"organisation": organisation.slug, "email": invitation.email, "roles": chosen},
    )
    link = f"{settings.PORTAL_SITE_URL.rstrip('/')}{invitation_link(invitation)}"
    inviter = actor.get_username() if actor is not None else "The Endpoints Portal chair"
    labels = ", ".join(Membership.Role(role).label.lower() for role in chosen)
    transaction.on_commit(
        lambda: send_mail(
            f"[Endpoints Portal] Join {organisation.name}",
            f"{inviter} invites you to join {organisation.name} on the Endpoints Portal as {labels}.\n\n"
            f"Accept (the link works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC, and only for an "
            f"account with this address, {invitation.email}, confirmed):\n{link}\n",
            None,
            [invitation.email],
        )
    )
    return invitation


def _invitation_refusal_record(*, invitation: Invitation, user, reason: str) -> None:
    """The refusal in the audit log, in its own transaction: it stays when the refusal rolls back the caller's."""
    with transaction.atomic():
        audit_event_record(
            actor=user,
            action="invitation.refused",
            obj=invitation,
            data={
                "organisation": invitation.organisation.slug,
                "user": user.get_username(),
                "reason": reason,
            },
        )


def invitation_accept(*, invitation: Invitation, user) -> list[Membership]:
    """`user` takes the invitation's roles; the invitation is used up (a second acceptance is refused).

    The invitation is bound to the address it was sent to: only an account whose current e-mail address is that
    address, and verified (email_verify), may take it. Another account holding the link (a forwarded or leaked
    e-mail) is refused with `invitation_wrong_account`, and the refusal is audited."""
    invitation = Invitation.objects.select_related("organisation").get(pk=invitation.pk)
    _invitation_usable(invitation)
    if (user.email or "").strip().lower() != invitation.email.strip().lower():
        _invitation_refusal_record(invitation=invitation, user=user, reason="address_mismatch")
        raise NotAllowedError(
            f"This invitation was sent to {invitation.email}, and you are signed in as {user.get_username()}, "
            "whose address is another one. Sign in with the account that uses the invited address (or create "
            "one from this link after signing out), or ask the organisation's admin to invite your own address.",
            code="invitation_wrong_account",
        )
    if not user_email_verified(user):
        raise NotAllowedError(
            f"Confirm first that {invitation.email} is yours: send yourself the confirmation link from this page "
            "and open it; it takes you into the organisation.",
            code="email_unverified",
        )
    return _invitation_take(invitation=invitation, user=user)


def _invitation_usable(invitation: Invitation) -> None:
    if (
        invitation.accepted_at is not None
        or invitation.revoked_at is not None
        or invitation.expires_at <= timezone.now()
    ):
        raise ApplicationError("This invitation is no longer valid.", code="invitation_used")


@transaction.atomic
def _invitation_take(*, invitation: Invitation, user) -> list[Membership]:
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    _invitation_usable(locked)
    locked.accepted_at = timezone.now()
    locked.accepted_by = user
    locked.save(update_fields=["accepted_at", "accepted_by"])
    memberships = [
        membership_add(
            user=user,
            organisation=locked.organisation,
            role=role,
            actor=user,
            added_by=locked.invited_by,
            via=f"invitation {locked.pk}",
        )
        for role in locked.roles
    ]
    audit_event_record(
        actor=user,
        action="invitation.accepted",
        obj=locked,
        data={"organisation": locked.organisation.slug, "user": user.username, "roles": locked.roles},
    )
    return memberships


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor) -> None:
    require_organisation_admin(actor, invitation.organisation)
    if invitation.accepted_at is not None:
        raise ApplicationError(
            "This invitation was already accepted: remove the member instead.", code="conflict"
        )
    if invitation.revoked_at is None:
        Invitation.objects.filter(pk=invitation.pk).update(revoked_at=timezone.now())
        audit_event_record(
            actor=actor,
            action="invitation.revoked",
            obj=invitation,
            data={"organisation": invitation.organisation.slug, "email": invitation.email},
        )


@transaction.atomic
def organisation_create_with_admin(*, name: str, kind: str, admin_email: str, actor) -> tuple:
    """The chair creates an organisation and invites its first admin: (organisation, invitation)."""
    require_chair(actor)
    organisation = organisation_create(name=name, kind=kind, actor=actor)
    invitation = invitation_create(
        organisation=organisation, email=admin_email, roles=[Membership.Role.ORG_ADMIN], actor=actor
    )
    return organisation, invitation


@transaction.atomic
def user_register_from_invitation(*, invitation: Invitation, username: str, password: str) -> User:
    """A new account for the invited address. It joins when its owner opens the confirmation link e-mailed to
    that address (email_verify): holding the invitation link alone proves nothing, it may have been forwarded."""
    user = User(username=username, email=invitation.email.strip())
    user.set_password(password)
    user.full_clean(exclude=["password"])
    user.save()
    audit_event_record(
        actor=user,
        action="user.created",
        obj=user,
        data={
            "username": username,
            "invitation": invitation.pk,
            "organisation": invitation.organisation.slug,
        },
    )
    email_verification_send(user=user, invitation=invitation)
    return user


def email_verify(*, user, token: str) -> Organisation | None:
    """Open a confirmation link: the user's address is verified (audited); a link sent for an invitation also
    accepts it. The organisation joined, else None. The address stays verified when the invitation is refused
    (expired, withdrawn, already used): that refusal is raised after."""
    try:
        payload = signing.loads(token, salt=EMAIL_VERIFY_SALT, max_age=timedelta(days=EMAIL_VERIFY_DAYS))
    except signing.SignatureExpired:
        raise ApplicationError(
            "This confirmation link has expired: ask for a new one.", code="link_expired"
        ) from None
    except signing.BadSignature:
        raise ApplicationError(
            "This confirmation link is not valid: check that it was copied whole.", code="link_invalid"
        ) from None
    if payload.get("u") != user.pk:
        raise NotAllowedError(
            "This link confirms another account's address: sign out and sign in as that account.",
            code="link_wrong_account",
        )
    if payload.get("e") != (user.email or "").strip().lower():
        raise ApplicationError(
            "Your address changed since this link was sent: ask for a new one.", code="link_used"
        )
    with transaction.atomic():
        address_verified_record(user=user, email=user.email, via="confirmation link")
    if "i" not in payload:
        return None
    invitation = (
        Invitation.objects.select_related("organisation", "invited_by")
        .filter(pk=payload["i"], nonce=payload.get("n"))
        .first()
    )
    if invitation is None or invitation.revoked_at is not None:
        raise ApplicationError(
            "Your address is confirmed, but the invitation was withdrawn: ask the organisation's admin for a new one.",
            code="invitation_revoked",
        )
    if invitation.accepted_at is not None and invitation.accepted_by_id == user.pk:
        return invitation.organisation
    invitation_accept(invitation=invitation, user=user)
    return invitation.organisation
