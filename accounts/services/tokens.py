"""API tokens: created with a scope and an expiry (only the digest is kept), revoked one by one or by name."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.models import (
    ApiToken,
)
from audit.services import audit_event_record
from portal.errors import ApplicationError, NotAllowedError

User = get_user_model()


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
