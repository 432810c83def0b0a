"""The leaderboard's API, one module per resource: results (the public API of published results, their points and
curves), buyer (the SLO finder's and the procurement report's answers), tender (site sizing), rechecks (the chair's)."""

from rest_framework.routers import BaseRouter

from leaderboard.api import buyer, rechecks, results, tender


def register(router: BaseRouter) -> None:
    """Add this app's viewsets to the /api/v1/ router."""
    rechecks.register(router)  # the chair's re-checks of what is published
    results.register(router)  # published results, points, curves, benchmarks
    buyer.register(router)  # the SLO finder and the procurement report
    tender.register(router)  # the tender desk: site sizing
