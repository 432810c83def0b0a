"""API of the audit app (attestations and challenges arrive with later work)."""

from rest_framework.routers import BaseRouter


def register(router: BaseRouter) -> None:
    """Add this app's viewsets to the /api/v1/ router; none yet."""
