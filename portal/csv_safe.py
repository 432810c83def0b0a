"""The one CSV writer of every export: a text cell a spreadsheet would run as a formula is neutralised.

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return (also after leading spaces, which
spreadsheets skip) gets a leading apostrophe, the convention spreadsheet programs show as text. Numbers stay
numbers: -3.5 is written as -3.5. Every CSV the portal serves goes through `writer()` (tests/portal/
test_csv_safe.py reads the code to keep it so)."""

from __future__ import annotations

import csv
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """`value` as it may go into a CSV cell."""
    if isinstance(value, str) and value.lstrip(" ")[:1] in FORMULA_STARTS:
        return "'" + value
    return value


class _SafeWriter:
    def __init__(self, out, **options):
        self._writer = csv.writer(out, **options)

    def writerow(self, row) -> None:
        self._writer.writerow([cell(value) for value in row])

    def writerows(self, rows) -> None:
        for row in rows:
            self.writerow(row)


def writer(out, **options) -> _SafeWriter:
    """A csv.writer over `out` whose rows are neutralised cell by cell."""
    return _SafeWriter(out, **options)
