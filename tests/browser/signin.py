"""Signing in from the browser: after the password, the two-factor step for accounts that have an authenticator
(the chair and auditors always do: tests/factories.py), with the code computed from the tests' secret."""

from __future__ import annotations

import re

VERIFY_URL = re.compile(r"/accounts/login/verify/")


def pass_second_factor(page, username: str) -> None:
    """Call right after submitting the password; does nothing for an account without an authenticator."""
    from django.contrib.auth import get_user_model

    from accounts.selectors import user_has_second_factor
    from tests.accounts.support import totp_code, totp_device_for

    user = get_user_model().objects.get(username=username)
    if not user_has_second_factor(user):
        return
    page.wait_for_url(VERIFY_URL)
    page.fill("input[name=code]", totp_code(totp_device_for(user)))
    page.click("main button[type=submit]")


def landing_path(username: str) -> str:
    """The page a user lands on after signing in (accounts.views.sign_in.landing_url: their role's own work)."""
    from django.contrib.auth import get_user_model

    from accounts.views.sign_in import landing_url

    return landing_url(get_user_model().objects.get(username=username))
