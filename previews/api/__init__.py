"""The API of previews: previews (its organisation's members only, docs/previews.md)."""

from __future__ import annotations

from previews.api.previews import PreviewViewSet


def register(router) -> None:
    router.register("previews", PreviewViewSet, basename="preview")
