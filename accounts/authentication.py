"""API token authentication that keeps the chair and auditors to the two-factor rule (docs/accounts.md).

A token is one factor. The chair's and auditors' tokens read as before, but their writes (publish, waive,
reject, attest, assign...) are refused with 403 `two_factor_required` until the token's owner has set up
two-factor sign-in on /accounts/two-factor/: whoever holds the password alone cannot mint a token and act.
Any token class can take the rule: subclass it with SecondFactorForTokensMixin first."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from accounts.selectors import user_has_second_factor, user_requires_second_factor

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class SecondFactorRequired(exceptions.PermissionDenied):
    default_code = "two_factor_required"
    default_detail = (
        "This account is a chair or auditor account: set up two-factor sign-in at /accounts/two-factor/ before "
        "acting with its API token."
    )


class SecondFactorForTokensMixin:
    def authenticate(self, request):
        result = super().authenticate(request)  # type: ignore[misc]
        if result is None or request.method in SAFE_METHODS:
            return result
        user = result[0]
        if user_requires_second_factor(user) and not user_has_second_factor(user):
            raise SecondFactorRequired()
        return result


class TokenAuthentication(SecondFactorForTokensMixin, authentication.TokenAuthentication):
    """DRF's `Authorization: Token <key>`, with the two-factor rule for the chair and auditors."""
