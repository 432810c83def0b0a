"""Two-factor sign-in in tests: a confirmed authenticator for a user (a known secret), its current code, and
signing a test client in with or without the second factor.

tests/conftest.py makes `client.force_login(user)` mean "fully signed in": for the chair and auditors it also
gives the user a confirmed authenticator and marks the session verified, as the two-step sign-in does. Tests
about the unverified state use `force_login_unverified`."""

from __future__ import annotations

import time

from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

# 20 bytes, hex: the secret every test authenticator shares (tests only).
TEST_TOTP_KEY = "3132333435363738393031323334353637383930"


def totp_device_for(user) -> TOTPDevice:
    """The user's confirmed authenticator, created with the test secret when they have none."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).order_by("pk").first()
    return device or TOTPDevice.objects.create(
        user=user, name="Test authenticator", key=TEST_TOTP_KEY, confirmed=True
    )


def totp_code(device: TOTPDevice) -> str:
    """The code the device accepts now. It forgets the last code used and the wrong ones first (django-otp
    refuses a code twice, and for a growing delay after wrong ones; a test may sign in twice within one
    30-second step)."""
    TOTPDevice.objects.filter(pk=device.pk).update(
        last_t=-1, throttling_failure_count=0, throttling_failure_timestamp=None
    )
    code = totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits, drift=device.drift)
    return str(code).zfill(device.digits)


def verified_session(client, user) -> None:
    """Mark the client's (already signed-in) session as verified by the user's authenticator."""
    device = totp_device_for(user)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()


def force_login_unverified(client, user) -> None:
    """Sign in with no second factor: what a password alone gives (Django's own force_login)."""
    from django.test import Client

    getattr(Client.force_login, "unverified", Client.force_login)(client, user)


def install_verified_force_login() -> None:
    """client.force_login(user) also passes the second factor for users whose role needs it."""
    from django.test import Client

    original = Client.force_login
    if getattr(original, "unverified", None) is not None:
        return

    def force_login(self, user, backend=None):
        original(self, user, backend)
        from accounts.selectors import user_requires_second_factor

        if user_requires_second_factor(user):
            verified_session(self, user)

    force_login.unverified = original  # type: ignore[attr-defined]
    Client.force_login = force_login  # type: ignore[method-assign]


def now_code_after(device: TOTPDevice, seconds: float = 0) -> str:
    time.sleep(seconds)
    return totp_code(device)
