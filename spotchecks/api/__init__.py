"""The API of spot-checks: spotchecks."""

from __future__ import annotations

from spotchecks.api.spotchecks import SpotCheckViewSet


def register(router) -> None:
    router.register("spotchecks", SpotCheckViewSet, basename="spotcheck")
