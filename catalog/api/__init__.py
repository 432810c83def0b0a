"""The API of the catalog: benchmarks (public)."""

from __future__ import annotations

from rest_framework.routers import BaseRouter

from catalog.api.benchmarks import BenchmarkViewSet


def register(router: BaseRouter) -> None:
    router.register("benchmarks", BenchmarkViewSet, basename="benchmark")
