"""Writes for organisations, users, memberships, global roles and API tokens; each records an audit event."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import (
    ApiToken,
    GlobalRole,
    Membership,
    Notification,
    NotificationPreference,
    Organisation,
)
from accounts.selectors import user_is_chair, user_org_ids
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
def membership_grant(*, user, organisation: Organisation, role: str, actor=None) -> Membership:
    """Give a user a role in an organisation (chair, or an org_admin of that organisation)."""
    if actor is not None and not (
        user_is_chair(actor) or organisation.pk in user_org_ids(actor, roles=(Membership.Role.ORG_ADMIN,))
    ):
        raise NotAllowedError("Only the chair or an admin of this organisation can add members.")
    membership, created = Membership.objects.get_or_create(user=user, organisation=organisation, role=role)
    if created:
        membership.full_clean()
        audit_event_record(
            actor=actor,
            action="membership.granted",
            obj=membership,
            data={"user": user.username, "organisation": organisation.slug, "role": role},
        )
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
