"""Small readers that never raise on hostile descriptor values, and the cohort calendar arithmetic."""

from __future__ import annotations

import re
from typing import Any

COHORT_RE = re.compile(r"\d{4}-\d{2}-C[01]")


def count(value: Any) -> int | None:
    """A non-negative integer (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def dig(obj: Any, *keys: Any) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def percentile(block: Any, p: float) -> Any:
    table = dig(block, "percentiles")
    if not isinstance(table, dict):
        return None
    for key, value in table.items():
        try:
            if float(key) == p:
                return value
        except (TypeError, ValueError, OverflowError):
            continue
    return None


def hashable(value: Any) -> Any:
    """The value itself when it can go in a set, else its short repr (lists and dicts from hostile files)."""
    return value if isinstance(value, str | int | float | bool | type(None)) else short(value)


def short(value: Any, limit: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def cohort_key(value: Any) -> tuple[int, int, int] | None:
    """(year, month, index) of a YYYY-MM-C0/C1 cohort, or None when malformed (month outside 1..12)."""
    if not isinstance(value, str) or not COHORT_RE.fullmatch(value.strip()):
        return None
    year, month, index = int(value[:4]), int(value[5:7]), int(value.strip()[-1])
    return (year, month, index) if 1 <= month <= 12 else None


def cohort_after(cohort: tuple[int, int, int], steps: int) -> tuple[int, int, int]:
    """The cohort `steps` publications after `cohort` (two per month)."""
    year, month, index = cohort
    for _ in range(steps):
        if index == 0:
            index = 1
        elif month == 12:
            year, month, index = year + 1, 1, 0
        else:
            month, index = month + 1, 0
    return year, month, index


def cohort_name(cohort: tuple[int, int, int]) -> str:
    return f"{cohort[0]:04d}-{cohort[1]:02d}-C{cohort[2]}"
