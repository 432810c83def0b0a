"""Template filters for the official tools' names and the portal's own words: `{{ region|region_label }}` gives the
readable label to show beside an official region id (checker.recompute.regions.REGION_LABELS); `{{ run|check_verdict:
waived }}` a check run's verdict in the one vocabulary (submissions.verdicts)."""

from __future__ import annotations

from django import template

from checker.recompute.regions import region_label as _region_label
from submissions.verdicts import verdict

register = template.Library()


@register.filter
def region_label(region) -> str:
    return _region_label(region if isinstance(region, str) else None)


@register.filter
def check_verdict(check_run, waived=0) -> dict:
    """The run's verdict words, with `waived` of its error findings covered by a granted waiver."""
    errors = int((getattr(check_run, "counts", None) or {}).get("error") or 0)
    return verdict(getattr(check_run, "status", None), errors=errors, waived=int(waived or 0))
