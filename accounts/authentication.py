"""API token authentication: `Authorization: Token <key>` checked against the digests knox keeps
(accounts.models.ApiToken); an expired, revoked or unknown token gets a 401 naming the tokens page, and an
address that sent too many bad tokens gets 429 (accounts.throttles.FailedTokenThrottle).

A token is one factor. The chair's and auditors' tokens read as before, but their writes (publish, waive,
reject, attest, assign...) are refused with 403 `two_factor_required` until the token's owner has set up
two-factor sign-in on /accounts/two-factor/: whoever holds the password alone cannot mint a token and act
(docs/accounts.md). Any token class can take the rule: subclass it with SecondFactorForTokensMixin first."""

from __future__ import annotations

from datetime import timedelta
from hmac import compare_digest

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.settings import CONSTANTS
from rest_framework import exceptions
from rest_framework.authentication import get_authorization_header

from accounts.models import ApiToken
from accounts.selectors import user_has_second_factor, user_requires_second_factor
from accounts.throttles import FailedTokenThrottle

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


# A token's last use is written at most this often (one UPDATE per token per minute, not one per request).
LAST_USED_RESOLUTION = timedelta(minutes=1)


def tokens_page_url(request) -> str:
    return request.build_absolute_uri(reverse("accounts:tokens"))


class _KnoxTokenAuthentication(TokenAuthentication):
    """knox's token authentication with the portal's token rows: scope, expiry, revocation and last use."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.authenticate_header(request).encode().lower():
            return None  # no token: the session (or nobody) authenticates
        failures = FailedTokenThrottle()
        wait = failures.blocked_for(request)
        if wait is not None:
            raise exceptions.Throttled(
                wait,
                detail=(
                    "Too many wrong, expired or revoked API tokens were sent from your address; "
                    f"try again in {int(wait)} seconds."
                ),
                code="throttled",
            )
        try:
            if len(header) != 2:
                raise self._failed(
                    request,
                    "The Authorization header must be 'Token <key>' (one key, no spaces).",
                    "token_invalid",
                )
            return self._check(request, header[1])
        except exceptions.AuthenticationFailed:
            failures.record_failure(request)
            raise

    def _failed(self, request, message: str, code: str) -> exceptions.AuthenticationFailed:
        return exceptions.AuthenticationFailed(
            f"{message} Create a new token at {tokens_page_url(request)}", code
        )

    def _check(self, request, raw: bytes):
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self._failed(request, "Invalid API token.", "token_invalid") from None
        digest = hash_token(key)
        token = next(
            (
                candidate
                for candidate in ApiToken.objects.filter(
                    token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH]
                ).select_related("user")
                if compare_digest(digest, candidate.digest)
            ),
            None,
        )
        if token is None:
            raise self._failed(request, "Invalid API token.", "token_invalid")
        if token.revoked_at is not None:
            raise self._failed(
                request,
                f"This API token ('{token.name}') was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC.",
                "token_revoked",
            )
        if token.is_expired:
            raise self._failed(
                request,
                f"This API token ('{token.name}') expired on {token.expiry:%Y-%m-%d %H:%M} UTC.",
                "token_expired",
            )
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This account is disabled.", "account_inactive")
        self._record_use(token)
        return token.user, token

    @staticmethod
    def _record_use(token: ApiToken) -> None:
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now


class ApiTokenAuthentication(SecondFactorForTokensMixin, _KnoxTokenAuthentication):
    """The portal's API token authentication (REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"])."""


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema (/api/docs/) describes the token header."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                'API token: "Token <key>". Create one on /accounts/tokens/ (scope read, or read + upload and '
                "submit); a read-only token gets 403 token_read_only on any write."
            ),
        }
