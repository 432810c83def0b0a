"""Writes for organisations, users, memberships, global roles and API tokens; each records an audit event."""

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
from django.utils.text import slugify

from accounts.models import (
    ApiToken,
    GlobalRole,
    Invitation,
    Membership,
    Notification,
    NotificationPreference,
    Organisation,
    SignIn,
    VerifiedAddress,
)
from accounts.selectors import user_administers, user_email_verified, user_is_chair, user_org_ids
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
    return _membership_add(user=user, organisation=organisation, role=role, actor=actor, added_by=added_by)


def _membership_add(
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


# --- Organisations run themselves: invitations and memberships ---------------------------------------


INVITATION_SALT = "accounts.invitation"


def _require_admin(actor, organisation: Organisation) -> None:
    if actor is not None and not user_administers(actor, organisation):
        raise NotAllowedError("Only the chair or an admin of this organisation can manage its members.")


def _member_roles(roles) -> list[str]:
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
    _require_admin(actor, organisation)
    chosen = _member_roles(roles)
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
        _membership_add(
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
    _require_admin(actor, invitation.organisation)
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
    _require_admin(actor, organisation)
    chosen = _member_roles(roles)
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
    _require_admin(actor, organisation)
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


# --- Verified e-mail addresses ---------------------------------------------------------------------

EMAIL_VERIFY_SALT = "accounts.email-verify"
EMAIL_VERIFY_DAYS = 2


def _address_verified_record(*, user, email: str, via: str) -> bool:
    """Remember that `user` proved `email` is theirs; audited the first time. True when it is new."""
    _, created = VerifiedAddress.objects.get_or_create(user=user, email=email.strip().lower())
    if created:
        audit_event_record(
            actor=user,
            action="account.email_verified",
            obj=user,
            data={"email": email.strip().lower(), "via": via},
        )
    return created


def email_verification_send(*, user, invitation: Invitation | None = None) -> str:
    """E-mail a signed link to the user's current address (after commit); opening it, signed in as that user,
    verifies the address and, with `invitation`, joins its organisation. The absolute link."""
    email = (user.email or "").strip()
    if not email:
        raise ApplicationError(
            "Your account has no e-mail address: add one on /accounts/email/ first.", code="no_email"
        )
    payload: dict[str, object] = {"u": user.pk, "e": email.lower()}
    if invitation is not None:
        payload |= {"i": invitation.pk, "n": invitation.nonce}
    token = signing.dumps(payload, salt=EMAIL_VERIFY_SALT, compress=True)
    link = (
        f"{settings.PORTAL_SITE_URL.rstrip('/')}{reverse('accounts:email_verify', kwargs={'token': token})}"
    )
    joining = f" and join {invitation.organisation.name}" if invitation is not None else ""
    transaction.on_commit(
        lambda: send_mail(
            "[Endpoints Portal] Confirm your e-mail address",
            f"Someone (we hope you) asked to confirm this address for the Endpoints Portal account "
            f"{user.get_username()}.\n\nConfirm{joining} within {EMAIL_VERIFY_DAYS} days (sign in as "
            f"{user.get_username()} when asked):\n{link}\n\nIgnore this e-mail if it was not you.\n",
            None,
            [email],
        )
    )
    return link


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
        _address_verified_record(user=user, email=user.email, via="confirmation link")
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


# --- Sign-ins, lockouts, e-mail and password changes ----------------------------------------------


def sign_in_record(*, user, outcome: str, address: str | None, user_agent: str) -> SignIn:
    agent = " ".join((user_agent or "").split())
    return SignIn.objects.create(
        user=user,
        outcome=outcome,
        address=address or None,
        user_agent=agent[:117] + "..." if len(agent) > 120 else agent,
    )


def lockout_notify(*, user, address: str | None, minutes: int) -> None:
    """Tell an account's owner that sign-ins to it are refused for a while after repeated failures."""
    if user is None or not user.email:
        return
    site = settings.PORTAL_SITE_URL.rstrip("/")
    send_mail(
        "[Endpoints Portal] Sign-in to your account locked",
        f"There were too many failed attempts to sign in to your account {user.get_username()} (the last from "
        f"{address or 'an unknown address'}). Sign-in is refused for the next {minutes} minutes, even with the "
        "right password.\n\nIf this was you, wait and try again, or reset your password: "
        f"{site}{reverse('password_reset')}\nIf it was not you, your password held; consider turning on "
        f"two-factor sign-in: {site}{reverse('accounts:two_factor')}\n",
        None,
        [user.email],
    )


EMAIL_CHANGE_SALT = "accounts.email-change"


def email_change_request(*, user, new_email: str) -> str:
    """E-mail a signed confirmation link to the new address (the change happens when it is opened)."""
    new_email = new_email.strip()
    token = signing.dumps(
        {"u": user.pk, "e": new_email, "o": user.email}, salt=EMAIL_CHANGE_SALT, compress=True
    )
    link = (
        f"{settings.PORTAL_SITE_URL.rstrip('/')}{reverse('accounts:email_confirm', kwargs={'token': token})}"
    )
    send_mail(
        "[Endpoints Portal] Confirm your new e-mail address",
        f"Someone (we hope you) asked to use this address for the Endpoints Portal account {user.get_username()}."
        f"\n\nConfirm within two days:\n{link}\n\nIgnore this e-mail to keep the current address.\n",
        None,
        [new_email],
    )
    return link


@transaction.atomic
def email_change_confirm(*, user, token: str) -> str:
    try:
        payload = signing.loads(token, salt=EMAIL_CHANGE_SALT, max_age=timedelta(days=2))
    except signing.SignatureExpired:
        raise ApplicationError(
            "This confirmation link has expired: ask again.", code="link_expired"
        ) from None
    except signing.BadSignature:
        raise ApplicationError("This confirmation link is not valid.", code="link_invalid") from None
    if payload.get("u") != user.pk:
        raise NotAllowedError("This link confirms another account's address: log in as that account.")
    if payload.get("o") != user.email:
        raise ApplicationError("The address changed since this link was sent: ask again.", code="link_used")
    old = user.email
    user.email = payload["e"]
    user.save(update_fields=["email"])
    audit_event_record(
        actor=user, action="account.email_changed", obj=user, data={"old": old, "new": user.email}
    )
    # The link went to the new address: opening it proves the address is the user's.
    _address_verified_record(user=user, email=user.email, via="address change")
    if old:
        transaction.on_commit(
            lambda: send_mail(
                "[Endpoints Portal] Your e-mail address changed",
                f"The Endpoints Portal account {user.get_username()} now uses {user.email} instead of this address."
                "\nIf you did not ask for this, reset your password and tell the chair.\n",
                None,
                [old],
            )
        )
    return user.email


def _account_roles(user) -> list[str]:
    """The global roles an account holds (a chair's or auditor's password change stands out in the log)."""
    roles = sorted(GlobalRole.objects.filter(user=user).values_list("role", flat=True))
    if user.is_superuser and GlobalRole.Role.CHAIR not in roles:
        roles.append("superuser")
    return roles


PASSWORD_HOW = {
    # how -> (audit action, what the account's owner is told)
    "change": ("account.password_changed", "was changed from the account page"),
    "reset": ("account.password_reset", "was reset with a link e-mailed to this address"),
    "admin": ("account.password_set_by_admin", "was set by {actor} in the portal's admin"),
}


@transaction.atomic
def password_set(*, user, password: str, actor, how: str) -> None:
    """Set `user`'s password and record it in the same transaction: `change` (the user, knowing the old one),
    `reset` (the user, through the e-mailed reset link; `actor` is the user, who proved the address) or `admin`
    (the chair in the Django admin). The owner is e-mailed (after commit) unless they changed it themselves."""
    if how not in PASSWORD_HOW:
        raise ValueError(f"unknown way of setting a password: {how!r}")
    if how == "admin":
        require_chair(actor)
    elif actor is None or actor.pk != user.pk:
        raise NotAllowedError("Only the account's owner changes or resets its password.")
    user.set_password(password)
    user.save(update_fields=["password"])
    action, told = PASSWORD_HOW[how]
    data = {"user": user.get_username(), "global_roles": _account_roles(user)}
    if how == "admin":
        data["set_by"] = actor.get_username()
    audit_event_record(actor=actor, action=action, obj=user, data=data)
    if how != "change" and user.email:
        message = told.format(actor=actor.get_username() if actor is not None else "the system")
        site = settings.PORTAL_SITE_URL.rstrip("/")
        transaction.on_commit(
            lambda: send_mail(
                "[Endpoints Portal] Your password was changed",
                f"The password of the Endpoints Portal account {user.get_username()} {message}.\n"
                f"If this was not you, reset it now ({site}{reverse('password_reset')}) and tell the chair.\n",
                None,
                [user.email],
            )
        )


# --- Two-factor sign-in (django-otp devices) --------------------------------------------------------

RECOVERY_CODES = 10


def totp_device_start(*, user):
    """The user's unconfirmed authenticator device (a new secret when there is none yet)."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    device = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("pk").first()
    return device or TOTPDevice.objects.create(user=user, name="Authenticator app", confirmed=False)


@transaction.atomic
def totp_device_confirm(*, user, device, code: str) -> list[str]:
    """Confirm the device with a code it produced: two-factor sign-in is on; the new recovery codes."""
    if device.user_id != user.pk or device.confirmed:
        raise NotAllowedError("This is not your pending authenticator.")
    if not device.verify_token((code or "").replace(" ", "")):
        raise ApplicationError(
            "That code does not match: type the six digits your app shows now (check the phone's clock).",
            code="bad_code",
        )
    type(device).objects.filter(user=user).exclude(pk=device.pk).delete()
    device.confirmed = True
    device.save(update_fields=["confirmed"])
    codes = _recovery_codes_new(user)
    audit_event_record(actor=user, action="two_factor.enabled", obj=user, data={"user": user.username})
    return codes


def _recovery_codes_new(user) -> list[str]:
    from django_otp.plugins.otp_static.models import StaticDevice, StaticToken

    StaticDevice.objects.filter(user=user).delete()
    static = StaticDevice.objects.create(user=user, name="Recovery codes", confirmed=True)
    codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create([StaticToken(device=static, token=code) for code in codes])
    return codes


@transaction.atomic
def recovery_codes_regenerate(*, user) -> list[str]:
    codes = _recovery_codes_new(user)
    audit_event_record(
        actor=user, action="two_factor.recovery_codes_renewed", obj=user, data={"user": user.username}
    )
    return codes


@transaction.atomic
def two_factor_disable(*, user, actor) -> None:
    """Turn two-factor sign-in off (never for the chair or an auditor, who need it)."""
    from django_otp.plugins.otp_static.models import StaticDevice
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from accounts.selectors import user_requires_second_factor

    if actor is not None and actor.pk != user.pk:
        require_chair(actor)
    if user_requires_second_factor(user) and (actor is None or actor.pk == user.pk):
        raise NotAllowedError(
            "Chair and auditor accounts must keep two-factor sign-in: set up a new authenticator instead.",
            code="two_factor_required",
        )
    TOTPDevice.objects.filter(user=user).delete()
    StaticDevice.objects.filter(user=user).delete()
    audit_event_record(actor=actor, action="two_factor.disabled", obj=user, data={"user": user.username})


def second_factor_wait(*, user):
    """When the authenticator refuses codes after wrong ones (django-otp doubles the wait each time): the time
    it accepts one again, else None."""
    from accounts.selectors import totp_device_of

    device = totp_device_of(user)
    if device is None:
        return None
    allowed, info = device.verify_is_allowed()
    return None if allowed else (info or {}).get("locked_until")


def second_factor_match(*, user, code: str):
    """The device (authenticator, else a one-time recovery code, used up) that accepts `code`; None if none."""
    from django_otp.plugins.otp_static.models import StaticDevice
    from django_otp.plugins.otp_totp.models import TOTPDevice

    code = (code or "").strip().replace(" ", "").replace("-", "")
    if not code or len(code) > 32:
        return None
    # Six digits are the app's code; anything else a recovery code (so a recovery code never counts as a
    # wrong app code, which would make the app's codes wait).
    model = TOTPDevice if code.isdigit() and len(code) <= 8 else StaticDevice
    with transaction.atomic():
        for device in model.objects.select_for_update().filter(user=user, confirmed=True):
            if device.verify_token(code if model is TOTPDevice else code.lower()):
                return device
    return None


# --- API tokens (docs/api-tokens.md) --------------------------------------------------------------

# Active (neither revoked nor expired) tokens one user may hold at once.
API_TOKENS_PER_USER = 50


def _validate_token_request(*, name: str, scope: str, expires_in: timedelta | None) -> str:
    name = (name or "").strip()
    if not name:
        raise ApplicationError(
            "Give the token a name, e.g. the machine or CI job that will use it.", code="invalid"
        )
    if len(name) > 100:
        raise ApplicationError("A token name has at most 100 characters.", code="invalid")
    if scope not in ApiToken.Scope.values:
        raise ApplicationError(f"Scope must be one of {', '.join(ApiToken.Scope.values)}.", code="invalid")
    if expires_in is not None and expires_in <= timedelta(0):
        raise ApplicationError("A token must expire in the future (or never).", code="invalid")
    return name


@transaction.atomic
def api_token_create(
    *, user, name: str, scope: str = ApiToken.Scope.READ, expires_in: timedelta | None = None, actor=None
) -> tuple[ApiToken, str]:
    """A new API token for `user`: (the row, the key). The key is returned this once and never stored (knox keeps
    its SHA-512 digest); `expires_in` None never expires. Only the user themselves or the system (actor None:
    `manage.py issue_token`) may create one."""
    if actor is not None and actor.pk != user.pk:
        raise NotAllowedError("You can only create API tokens for yourself.")
    name = _validate_token_request(name=name, scope=scope, expires_in=expires_in)
    User.objects.select_for_update().filter(
        pk=user.pk
    ).first()  # one creation at a time per user: the cap holds
    now = timezone.now()
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).exclude(expiry__lte=now).count()
    if active >= API_TOKENS_PER_USER:
        raise ApplicationError(
            f"You already have {active} active API tokens: revoke the ones you no longer use first.",
            code="token_limit",
        )
    token, key = ApiToken.objects.create(user=user, expiry=expires_in, name=name, scope=scope)
    audit_event_record(
        actor=actor,
        action="api_token.created",
        obj=token,
        data={
            "user": user.get_username(),
            "name": name,
            "scope": scope,
            "expires_at": token.expiry.isoformat() if token.expiry else None,
        },
    )
    return token, key


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor=None) -> ApiToken:
    """Revoke a token at once (requests with it get 401 token_revoked); revoking twice changes nothing. Only its
    owner or the system (actor None) may."""
    if actor is not None and actor.pk != token.user_id:
        raise NotAllowedError("You can only revoke your own API tokens.")
    locked = ApiToken.objects.select_for_update().get(pk=token.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        audit_event_record(
            actor=actor,
            action="api_token.revoked",
            obj=locked,
            data={"user": locked.user.get_username(), "name": locked.name},
        )
    return locked


@transaction.atomic
def api_tokens_revoke_named(*, user, name: str, actor=None) -> int:
    """Revoke every active token of `user` called `name` (manage.py issue_token --rotate); how many."""
    revoked = 0
    for token in ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True):
        api_token_revoke(token=token, actor=actor)
        revoked += 1
    return revoked


# --- Notifications -------------------------------------------------------------------------------


# What an e-mail calls each kind of notification about a submission. E-mails carry this title, the submission's
# number and a link, never a system name, a figure or a comment body: the page behind the link checks who may read.
NOTIFICATION_TITLES = {
    "review.assigned": "Review requested",
    "review.accepted": "A reviewer accepted",
    "review.declined": "A reviewer declined",
    "review.released": "Reviewer released",
    "review.peer_reviewed": "Peer reviewed",
    "review.changes_requested": "Changes requested",
    "review.comment": "New comment",
    "review.objection": "New objection",
    "review.objection_due": "Objection due tomorrow",
    "review.objection_overdue": "Objection overdue",
    "waiver.requested": "Waiver requested",
    "waiver.granted": "Waiver granted",
    "waiver.refused": "Waiver refused",
    "audit.attested": "Audited",
    "audit.evidence_requested": "Evidence requested",
    "audit.evidence_answered": "Evidence answered",
    "audit.evidence_overdue": "Evidence overdue",
}


def notification_title(notification: Notification) -> str:
    """The kind's title with the submission's number (or the stored subject for a notification about no
    submission, e.g. a challenge of a public result): all an e-mail says."""
    if notification.submission_ref is None:
        return notification.subject
    title = NOTIFICATION_TITLES.get(notification.kind, "Update")
    return f"{title}: submission #{notification.submission_ref}"


def _deliver_now(notification_ids: list[int]) -> None:
    """E-mail the given notifications whose users want them immediately (each at most once)."""
    digest_users = set(
        NotificationPreference.objects.filter(delivery=NotificationPreference.Delivery.DIGEST).values_list(
            "user_id", flat=True
        )
    )
    for notification in Notification.objects.filter(
        pk__in=notification_ids, emailed_at__isnull=True
    ).select_related("user"):
        if notification.user_id in digest_users or not notification.user.email:
            continue
        # Claim it first (compare-and-set): two deliveries of the same row send one e-mail.
        if not Notification.objects.filter(pk=notification.pk, emailed_at__isnull=True).update(
            emailed_at=timezone.now()
        ):
            continue
        site = settings.PORTAL_SITE_URL.rstrip("/")
        send_mail(
            f"[Endpoints Portal] {notification_title(notification)}",
            f"{notification_title(notification)}\n{site}{notification.url or '/accounts/notifications/'}\n\n"
            "Sign in to read it: the page shows it while you may see it.\n",
            None,
            [notification.user.email],
        )


def notify(
    *,
    users,
    kind: str,
    subject: str,
    body: str = "",
    url: str = "",
    dedupe_key: str = "",
    submission_id: int | None = None,
) -> list:
    """Tell each of `users` about something: a Notification row now, an e-mail after commit (immediately, or
    in the daily digest when the user chose it). With `dedupe_key`, a user is told about the same event once.
    `submission_id` names the submission it is about: its subject and body are shown only to a reader who may
    still read that submission's review (access.notifications), and e-mails carry only its number and a link."""
    created = []
    for user in {user.pk: user for user in users if user is not None}.values():
        if dedupe_key and Notification.objects.filter(user=user, dedupe_key=dedupe_key).exists():
            continue
        created.append(
            Notification.objects.create(
                user=user,
                kind=kind,
                subject=subject[:200],
                body=body,
                url=url,
                dedupe_key=dedupe_key,
                submission_ref=submission_id,
            )
        )
    ids = [notification.pk for notification in created]
    if ids:
        transaction.on_commit(lambda: _deliver_now(ids))
    return created


def notifications_mark_read(*, user, notification_ids: list[int] | None = None) -> int:
    """Mark the user's notifications read (all unread ones when no ids are given); how many changed."""
    unread = Notification.objects.filter(user=user, read_at__isnull=True)
    if notification_ids is not None:
        unread = unread.filter(pk__in=notification_ids)
    return unread.update(read_at=timezone.now())


@transaction.atomic
def notification_preference_set(*, user, delivery: str) -> NotificationPreference:
    """Immediate e-mails or one daily digest; switching to immediate leaves earlier rows to the next digest."""
    if delivery not in NotificationPreference.Delivery.values:
        raise ApplicationError(
            f"Delivery must be one of {', '.join(NotificationPreference.Delivery.values)}.", code="invalid"
        )
    preference, _ = NotificationPreference.objects.select_for_update().get_or_create(
        user=user, defaults={"delivery": delivery}
    )
    if preference.delivery != delivery:
        NotificationPreference.objects.filter(pk=preference.pk).update(delivery=delivery)
        preference.delivery = delivery
    return preference


def notification_preference_of(user) -> str:
    preference = NotificationPreference.objects.filter(user=user).values_list("delivery", flat=True).first()
    return preference or NotificationPreference.Delivery.IMMEDIATE


def _digest_one(user, *, now) -> int:
    """One e-mail with every un-e-mailed notification of `user`; 0 when another process took them first.

    The rows are locked and claimed (emailed_at set where still empty) in one transaction; a second beat
    process waits on the locks, then finds them claimed. The e-mail leaves inside the transaction, so a failed
    send leaves the rows for the next digest."""
    with transaction.atomic():
        pending = list(
            Notification.objects.select_for_update()
            .filter(user=user, emailed_at__isnull=True)
            .order_by("created_at", "pk")
        )
        ids = [notification.pk for notification in pending]
        if not ids or not Notification.objects.filter(pk__in=ids, emailed_at__isnull=True).update(
            emailed_at=now
        ):
            return 0
        site = settings.PORTAL_SITE_URL.rstrip("/")
        parts = [
            f"- {notification_title(notification)} ({notification.created_at:%Y-%m-%d %H:%M} UTC)\n"
            f"  {site}{notification.url or '/accounts/notifications/'}"
            for notification in pending
        ]
        count = len(pending)
        send_mail(
            f"[Endpoints Portal] Daily digest: {count} notification{'s' if count != 1 else ''}",
            "\n\n".join(parts) + f"\n\nAll your notifications: {site}/accounts/notifications/\n",
            None,
            [user.email],
        )
        return count


def notifications_digest_send(*, now=None) -> dict[str, int]:
    """The daily digest (beat): each digest user gets ONE e-mail with their un-e-mailed notifications; each
    notification is e-mailed once even when two beat processes run this at the same time."""
    now = now or timezone.now()
    users = User.objects.filter(
        is_active=True,
        notification_preference__delivery=NotificationPreference.Delivery.DIGEST,
        notifications__emailed_at__isnull=True,
    ).exclude(email="")
    sent = notifications = 0
    for user in users.distinct().order_by("pk"):
        count = _digest_one(user, now=now)
        if count:
            sent += 1
            notifications += count
    return {"emails": sent, "notifications": notifications}
