"""`{{ name|visible_chars }}`: a name from an uploaded archive shown as it is, with every character that would
hide or reorder what the reader sees (C0/C1 controls, bidirectional overrides and isolates, zero-width marks)
written as a visible escape: `c16/\u202eslmx.json` reads `c16/⟨U+202E⟩slmx.json`, not `c16/json.xmls`."""

from __future__ import annotations

import re

from django import template

register = template.Library()

_BIDI_AND_INVISIBLE = (
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
)
_HIDDEN = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI_AND_INVISIBLE}]")


def visible(text: str) -> str:
    if not _HIDDEN.search(text):
        return text
    return _HIDDEN.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


@register.filter
def visible_chars(value) -> str:
    return visible(value) if isinstance(value, str) else value
