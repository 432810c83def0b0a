"""The API of accounts, one module per resource: me (the caller's identity and roles, `/api/v1/me/`),
notifications (their notifications and how they are e-mailed; only the caller's own: access.visibility). The
throttles every token request passes are accounts.throttles (DRF loads them with the authentication class, before
this package can be imported)."""

from __future__ import annotations

from rest_framework.routers import BaseRouter

from accounts.api.notifications import NotificationViewSet


def register(router: BaseRouter) -> None:
    router.register("notifications", NotificationViewSet, basename="notification")
