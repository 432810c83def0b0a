"""Sign-ins and lockouts recorded, passwords set (changed, reset, by the chair), two-factor devices and recovery
codes."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import (
    GlobalRole,
    SignIn,
)
from accounts.selectors import totp_device_of, user_requires_second_factor
from accounts.services.organisations import require_chair
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError

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

    device = totp_device_of(user)
    if device is None:
        return None
    allowed, info = device.verify_is_allowed()
    return None if allowed else (info or {}).get("locked_until")


def second_factor_match(*, user, code: str):
    """The device (authenticator, else a one-time recovery code, used up) that accepts `code`; None if none."""

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
