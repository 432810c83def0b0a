"""Format suffixes on every API route: `/api/v1/versions/7/files/0.json` is `/api/v1/versions/7/files/0`.

The router adds a `format` URL keyword to every route; DRF hands it to the handler as a keyword argument, and an
action written as `def file(self, request, pk=None, position=None)` then fails with a TypeError (a 500). The
suffix is consumed before the handler is called and kept for content negotiation, so `.json` answers JSON, `.api` the
browsable API, and a suffix no renderer has (`.txt`) the API's JSON 404.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.viewsets import ViewSetMixin


class FormatSuffixAware:
    """Mixin for a viewset: the format suffix reaches content negotiation, never the action's arguments."""

    _format_suffix: str | None = None

    def dispatch(self, request, *args, **kwargs):
        self._format_suffix = kwargs.pop(_format_kwarg(), None)
        return super().dispatch(request, *args, **kwargs)

    def get_format_suffix(self, **kwargs):
        return self._format_suffix


def _format_kwarg() -> str:
    return getattr(settings, "REST_FRAMEWORK", {}).get("FORMAT_SUFFIX_KWARG", "format")


def format_suffix_aware(viewset: type) -> type:
    """`viewset` with FormatSuffixAware mixed in (the same class when it already has it); name, module and
    docstring kept, so the OpenAPI schema reads as before."""
    if not issubclass(viewset, ViewSetMixin) or issubclass(viewset, FormatSuffixAware):
        return viewset
    return type(
        viewset.__name__,
        (FormatSuffixAware, viewset),
        {"__module__": viewset.__module__, "__doc__": viewset.__doc__, "__qualname__": viewset.__qualname__},
    )
