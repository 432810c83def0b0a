"""Verified e-mail addresses: the confirmation e-mail, the record that an address is the user's, and changing it."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse

from accounts.models import (
    Invitation,
    VerifiedAddress,
)
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError

# --- Verified e-mail addresses ---------------------------------------------------------------------

EMAIL_VERIFY_SALT = "accounts.email-verify"
EMAIL_VERIFY_DAYS = 2


def address_verified_record(*, user, email: str, via: str) -> bool:
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
    address_verified_record(user=user, email=user.email, via="address change")
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
