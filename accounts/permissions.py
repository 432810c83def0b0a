"""API permissions of accounts: what an API token's scope lets it do."""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from accounts.models import ApiToken


class TokenScopeAllows(BasePermission):
    """A read-only API token may only read (GET, HEAD, OPTIONS): no upload, submit, withdraw or any other write.

    In REST_FRAMEWORK["DEFAULT_PERMISSION_CLASSES"], so every API view has it unless it sets its own
    permission_classes, which then list it first. Session (browser) requests and write tokens pass."""

    message = (
        "This API token is read-only: it cannot upload, submit or change anything. "
        "Create a token with the 'Read, upload and submit' scope on /accounts/tokens/."
    )
    code = "token_read_only"

    def has_permission(self, request, view) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken) or request.method in SAFE_METHODS:
            return True
        return token.can_write
