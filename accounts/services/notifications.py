"""Notifications: what each kind is titled (never a system's name or a figure), delivered at once or in the
daily digest, marked read; each user's delivery preference."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import (
    Notification,
    NotificationPreference,
)
from portal.errors import ApplicationError

User = get_user_model()


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
    subject = subject[:200]
    for user in {user.pk: user for user in users if user is not None}.values():
        if dedupe_key and Notification.objects.filter(user=user, dedupe_key=dedupe_key).exists():
            continue
        if not dedupe_key and _grouped(
            user, kind=kind, subject=subject, body=body, url=url, submission_id=submission_id
        ):
            continue
        created.append(
            Notification.objects.create(
                user=user,
                kind=kind,
                subject=subject,
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


GROUPED_BODY_MAX_CHARS = 20_000


def _grouped(user, *, kind: str, subject: str, body: str, url: str, submission_id: int | None) -> bool:
    """One row per event, grouped: the same kind about the same thing (same subject and submission) while the
    user has not read the first is counted into it (`times`), its body gains the new text if it says something
    new, and it moves to the top; no second e-mail (the first one stands for the group). False: nothing to group
    into."""
    same = (
        Notification.objects.filter(
            user=user,
            kind=kind,
            subject=subject,
            submission_ref=submission_id,
            read_at__isnull=True,
            dedupe_key="",
        )
        .order_by("-created_at", "-id")
        .first()
    )
    if same is None:
        return False
    text = body.strip()
    merged = same.body if not text or text in same.body else f"{same.body}\n\n{text}".strip()
    Notification.objects.filter(pk=same.pk).update(
        times=F("times") + 1,
        body=merged[:GROUPED_BODY_MAX_CHARS],
        url=url or same.url,
        created_at=timezone.now(),
    )
    return True


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
