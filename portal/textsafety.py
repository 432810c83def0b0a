"""Text the database can store: PostgreSQL refuses the NUL character, and a lone UTF-16 surrogate (what JSON's
"\\ud800" decodes to) is not Unicode text and cannot be encoded. Both are refused at the edge (API bodies, form
fields, query strings, uploaded system descriptions) with a 400 naming the field, never a 500 from the database."""

from __future__ import annotations

import re
from typing import Any

from portal.errors import ApplicationError

UNSTORABLE_CODE = "text-unstorable"
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    match = _SURROGATE.search(text)
    if match:
        return f"contains a lone surrogate (\\u{ord(match.group()):04x}), which is not valid Unicode text"
    return None


def field_path(parts: tuple[str | int, ...], *, field: str = "") -> str:
    """`description.node_types[0].name`: object keys joined with dots, list positions in brackets."""
    where = field
    for part in parts:
        if isinstance(part, int):
            where = f"{where}[{part}]"
        else:
            where = f"{where}.{part}" if where else part
    return where or "body"


def unstorable_at(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """(path, problem) of the first string (object keys included) in a parsed JSON value that cannot be stored;
    the path is the keys and list positions leading to it. None when all can. Walks without recursion, so any
    nesting depth is safe."""
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return path, problem
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                key_problem = text_problem(key) if isinstance(key, str) else None
                if key_problem:
                    shown = key.encode("unicode_escape").decode("ascii")
                    return (*path, shown), f"is a key that {key_problem}"
                pending.append(((*path, key), child))
        elif isinstance(item, list | tuple):
            for index in range(len(item) - 1, -1, -1):
                pending.append(((*path, index), item[index]))
    return None


def first_unstorable(value: Any, *, field: str = "") -> tuple[str, str] | None:
    """(field, problem) of the first text in `value` that cannot be stored, the field named under `field`."""
    found = unstorable_at(value)
    return (field_path(found[0], field=field), found[1]) if found else None


class UnstorableTextError(ApplicationError):
    """A text input holds a character the database cannot store."""

    code = UNSTORABLE_CODE
    status_code = 400

    def __init__(self, field: str, problem: str):
        super().__init__(
            f"{field} {problem}; remove that character and send it again.", extra={"field": field}
        )
        self.field = field


def require_storable(value: Any, *, field: str = "") -> None:
    """Raise UnstorableTextError naming the first field whose text cannot be stored."""
    found = first_unstorable(value, field=field)
    if found:
        raise UnstorableTextError(*found)


def require_storable_form(data) -> None:
    """The same for a QueryDict (form fields, query string): the field is named by its key."""
    for key, values in data.lists():
        require_storable(key, field="a field name")
        for value in values:
            require_storable(value, field=key)
