"""Template filters for the official tools' names: `{{ region|region_label }}` gives the readable label to show
beside an official region id (checker.recompute.regions.REGION_LABELS)."""

from __future__ import annotations

from django import template

from checker.recompute.regions import region_label as _region_label

register = template.Library()


@register.filter
def region_label(region) -> str:
    return _region_label(region if isinstance(region, str) else None)
