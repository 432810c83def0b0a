"""API of the review app (arrives with the review issue)."""

from rest_framework.routers import BaseRouter


def register(router: BaseRouter) -> None:
    """Add this app's viewsets to the /api/v1/ router; none yet."""
