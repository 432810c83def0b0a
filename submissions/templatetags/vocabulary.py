"""Template filters for the official tools' names and the portal's own words: `{{ region|region_label }}` gives the
readable label to show beside an official region id (checker.recompute.regions.REGION_LABELS); `{{ run|check_verdict:
waived }}` a check run's verdict in the one vocabulary (submissions.verdicts)."""

from __future__ import annotations

import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from checker.recompute.regions import region_label as _region_label
from submissions.verdicts import verdict

register = template.Library()


@register.filter
def region_label(region) -> str:
    return _region_label(region if isinstance(region, str) else None)


# A field name of the submitter's files (`model_name`, `steady_state`, `max_supported_concurrency`) inside a
# finding's sentence; never part of a file name or path (AX-8000_c16.tar.gz, c16/system_desc.json).
_IDENTIFIER = re.compile(r"(?<![\w/.:-])([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![\w/:-])(?!\.\w)")


@register.filter
def identifiers_as_code(message) -> str:
    """A finding's message with the files' field names set as code, so a sentence reads as words and the names it
    quotes read as the file's own (`{{ finding.message|identifiers_as_code }}`)."""
    if not isinstance(message, str):
        return message
    return mark_safe(_IDENTIFIER.sub(r"<code>\1</code>", str(conditional_escape(message))))


@register.filter
def check_verdict(check_run, waived=0) -> dict:
    """The run's verdict words, with `waived` of its error findings covered by a granted waiver."""
    errors = int((getattr(check_run, "counts", None) or {}).get("error") or 0)
    return verdict(getattr(check_run, "status", None), errors=errors, waived=int(waived or 0))
