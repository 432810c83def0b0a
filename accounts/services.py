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
    if role not in Membership.Role.values:
        raise NotAllowedError(
            f"{role!r} is not a role inside an organisation (the auditor and chair roles are the chair's to give)."
        )
    membership, created = Membership.objects.get_or_create(
        user=user, organisation=organisation, role=role, defaults={"added_by": added_by or actor}
    )
    if created:
        membership.full_clean()
        audit_event_record(
            actor=actor,
            action="membership.granted",
            obj=membership,
            data={"user": user.username, "organisation": organisation.slug, "role": role},
        )
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
            f"Accept (the link works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC):\n{link}\n",
            None,
            [invitation.email],
        )
    )
    return invitation


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user) -> list[Membership]:
    """`user` takes the invitation's roles; the invitation is used up (a second acceptance is refused)."""
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if locked.accepted_at is not None or locked.revoked_at is not None or locked.expires_at <= timezone.now():
        raise ApplicationError("This invitation is no longer valid.", code="invitation_used")
    locked.accepted_at = timezone.now()
    locked.accepted_by = user
    locked.save(update_fields=["accepted_at", "accepted_by"])
    memberships = [
        membership_grant(user=user, organisation=locked.organisation, role=role, added_by=locked.invited_by)
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
    """A new account for the invited address, which takes the invitation at once."""
    user = User(username=username, email=invitation.email)
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
    invitation_accept(invitation=invitation, user=user)
    return user


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


@transaction.atomic
def password_changed_record(*, user) -> None:
    audit_event_record(actor=user, action="account.password_changed", obj=user, data={"user": user.username})


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
        link = f"\n\n{settings.PORTAL_SITE_URL.rstrip('/')}{notification.url}" if notification.url else ""
        send_mail(
            f"[Endpoints Portal] {notification.subject}",
            f"{notification.body}{link}",
            None,
            [notification.user.email],
        )


def notify(*, users, kind: str, subject: str, body: str = "", url: str = "", dedupe_key: str = "") -> list:
    """Tell each of `users` about something: a Notification row now, an e-mail after commit (immediately, or
    in the daily digest when the user chose it). With `dedupe_key`, a user is told about the same event once."""
    created = []
    for user in {user.pk: user for user in users if user is not None}.values():
        if dedupe_key and Notification.objects.filter(user=user, dedupe_key=dedupe_key).exists():
            continue
        created.append(
            Notification.objects.create(
                user=user, kind=kind, subject=subject[:200], body=body, url=url, dedupe_key=dedupe_key
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
        parts = []
        for notification in pending:
            lines = [f"- {notification.subject} ({notification.created_at:%Y-%m-%d %H:%M} UTC)"]
            if notification.body:
                lines.append("  " + notification.body.strip().replace("\n", "\n  "))
            if notification.url:
                lines.append(f"  {site}{notification.url}")
            parts.append("\n".join(lines))
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
