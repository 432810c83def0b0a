"""Small shared helpers of the importers: safe JSON reading, typed look-ups, sniffing a file's first bytes."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from checker.read.inputs.limits import Limits
from checker.read.loaders import json_pointer, load_json
from checker.report import Finding, Findings

SNIFF_BYTES = 64 * 1024
# A tool writes timestamps in nanoseconds at most (1.8e18 today): a number beyond a signed 64-bit integer is no
# tool's, and 1e308 or a 400-digit integer overflows whatever is computed from it.
MAX_MAGNITUDE = 2**63 - 1
MAX_NUMBER_FINDINGS = 20


def head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first bytes of a file (b"" when it cannot be read): enough to tell a tool's output by its keys."""
    try:
        with open(path, "rb") as stream:
            return stream.read(size)
    except OSError:
        return b""


def read_object(path: Path, *, display: str, findings: Findings, limits: Limits) -> dict | None:
    """A JSON object file read with every guard of checker.read.loaders (size, UTF-8, NaN, duplicate keys), its
    numbers bounded (`bounded_numbers`)."""
    data = bounded_numbers(
        load_json(path, display=display, findings=findings, limits=limits), display=display, findings=findings
    )
    return data if isinstance(data, dict) else None


def bounded_numbers(data: Any, *, display: str, findings: Findings, line: int | None = None) -> Any:
    """`data` (loaded JSON) with every number beyond +-(2^63 - 1) replaced by None (what a missing value reads as),
    each one an `import-number-out-of-range` finding naming the file and the field's JSON pointer (the first 20
    of a file, then their count). Iterative: nesting costs no recursion."""
    out_of_range = 0
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, pointer = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            where = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if isinstance(value, dict | list):
                stack.append((value, where))
            elif (
                isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > MAX_MAGNITUDE
            ):
                node[key] = None
                out_of_range += 1
                if out_of_range <= MAX_NUMBER_FINDINGS:
                    findings.error(
                        "import-number-out-of-range",
                        f"{display}{'' if line is None else f' line {line}'} {where}: {_shown(value)} is beyond "
                        "any figure a benchmark tool writes; it was read as missing.",
                        file=display,
                        line=line,
                        pointer=where,
                        fix="Import the file exactly as the tool wrote it.",
                    )
    if out_of_range > MAX_NUMBER_FINDINGS:
        findings.error(
            "import-number-out-of-range",
            f"{display}: {out_of_range - MAX_NUMBER_FINDINGS} more numbers are out of range; all were read as missing.",
            file=display,
            fix="Import the file exactly as the tool wrote it.",
        )
    if isinstance(data, int | float) and not isinstance(data, bool) and abs(data) > MAX_MAGNITUDE:
        return None
    return data


def _shown(value: int | float) -> str:
    if isinstance(value, int):
        digits = len(
            str(abs(value))
        )  # bounded: Python refuses integers of more than 4300 digits when parsing
        return f"a {digits}-digit integer"
    return repr(value)


def dig(obj: Any, *keys: str | int) -> Any:
    """obj[k1][k2]... through dicts and lists; None as soon as a level is missing."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(obj, list) or not -len(obj) <= key < len(obj):
                return None
            obj = obj[key]
        else:
            if not isinstance(obj, dict):
                return None
            obj = obj.get(key)
    return obj


class FieldReader:
    """Typed reads of the fields an importer takes from one file: every value hostile until checked.

    Where the tool writes a number, a value of another type (a string such as "12", a boolean, a list, an object, a
    fraction where it writes a whole count) is an `import-field-type` finding, and a number out of the field's range
    (a negative count or latency) an `import-number-out-of-range` finding; each names the file, the line when the
    file has lines (JSON Lines: set `line` per record) and the field's JSON pointer, and the value reads as missing
    (None). A field that is absent or null reads as None without a finding, as it always did. The same field
    wrong in many places (every request's TTFT a string) is one finding that counts the others, and a file gets
    at most MAX_NUMBER_FINDINGS such findings, then one with the count of the rest. An importer reads each value
    once (a value read twice would be counted twice).
    """

    def __init__(self, file: str, findings: Findings, *, writer: str) -> None:
        self.file = file
        self.findings = findings
        self.writer = writer  # who wrote the file, for the sentence: "vLLM", "GuideLLM", ...
        self.line: int | None = None
        self._repeats: dict[tuple[str, str], tuple[Finding, str, list[int]]] = {}
        self._overflow: Finding | None = None
        self._overflow_count = 0

    def number(self, obj: Any, *keys: str | int, at: str = "", minimum: float | None = None) -> float | None:
        """obj[k1][k2]... as a finite float (None when absent); `minimum`: the least value the tool writes there."""
        value = dig(obj, *keys)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._wrong_type(value, self._pointer(at, keys), "a number")
            return None
        if abs(value) > MAX_MAGNITUDE:
            return None  # bounded_numbers named it when the file was read
        value = float(value)
        if not math.isfinite(value):
            self._out_of_range(value, self._pointer(at, keys), "a finite number")
            return None
        if minimum is not None and value < minimum:
            self._out_of_range(value, self._pointer(at, keys), f"a number of at least {minimum:g}")
            return None
        return value

    def count(
        self, obj: Any, *keys: str | int, at: str = "", minimum: int = 0, maximum: int = MAX_MAGNITUDE
    ) -> int | None:
        """obj[k1][k2]... as a whole number from `minimum` to `maximum` (None when absent); 12.0 reads as 12."""
        value = dig(obj, *keys)
        if value is None:
            return None
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong_type(value, self._pointer(at, keys), "a whole number")
            return None
        if abs(value) > MAX_MAGNITUDE:
            return None  # bounded_numbers named it when the file was read
        if not minimum <= value <= maximum:
            expected = f"a whole number of at least {minimum:,}"
            if maximum < MAX_MAGNITUDE:
                expected = f"a whole number from {minimum:,} to {maximum:,}"
            self._out_of_range(value, self._pointer(at, keys), expected)
            return None
        return value

    def numbers(
        self, obj: Any, *keys: str | int, at: str = "", minimum: float | None = None
    ) -> list[float | None] | None:
        """obj[k1][k2]... as a list of numbers, each element read by `number` (None for an element that is not
        one); None when absent, and a finding when it is there but not a list."""
        values = dig(obj, *keys)
        if values is None:
            return None
        pointer = self._pointer(at, keys)
        if not isinstance(values, list):
            self._wrong_type(values, pointer, "a list of numbers")
            return None
        return [self.number(values, index, at=pointer, minimum=minimum) for index in range(len(values))]

    def _pointer(self, at: str, keys: tuple[str | int, ...]) -> str:
        return at + json_pointer(keys)

    def _wrong_type(self, value: Any, pointer: str, expected: str) -> None:
        self._finding(
            "import-field-type",
            pointer,
            f"{_described(value)} where {self.writer} writes {expected}",
            f"Import the file exactly as {self.writer} wrote it: this field holds {expected}, never text, a "
            "boolean, a list or an object.",
        )

    def _out_of_range(self, value: float | int, pointer: str, expected: str) -> None:
        self._finding(
            "import-number-out-of-range",
            pointer,
            f"{_shown(value) if abs(value) > 10**15 else repr(value)} where {self.writer} writes {expected}",
            f"Import the file exactly as {self.writer} wrote it.",
        )

    def _finding(self, rule: str, pointer: str, what: str, fix: str) -> None:
        pattern = re.sub(r"/\d+(?=/|$)", "/*", pointer)
        repeated = self._repeats.get((rule, pattern))
        if repeated is not None:  # the same field of another request: counted in the first finding
            finding, message, more = repeated
            more[0] += 1
            finding.message = (
                f"{message} {more[0]:,} more value(s) at {pattern} are the same and were read as missing too."
            )
            return
        if len(self._repeats) >= MAX_NUMBER_FINDINGS:
            self._overflow_count += 1
            message = (
                f"{self.file}: {self._overflow_count:,} more field(s) hold a value of the wrong type or out of "
                "range; all were read as missing."
            )
            if self._overflow is None:
                self._overflow = self.findings.error(rule, message, file=self.file, fix=fix)
            self._overflow.message = message
            return
        where = f"{self.file}{'' if self.line is None else f' line {self.line}'} {pointer}"
        message = f"{where}: {what}; it was read as missing."
        finding = self.findings.error(rule, message, file=self.file, line=self.line, pointer=pointer, fix=fix)
        self._repeats[(rule, pattern)] = (finding, message, [0])


def _described(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else f"{value[:20]}... ({len(value)} characters)"
        return f"the text {json.dumps(shown)}"
    if isinstance(value, list):
        return f"a list of {len(value):,} item(s)"
    if isinstance(value, dict):
        return f"an object of {len(value):,} key(s)"
    if isinstance(value, float):
        return repr(value)
    return f"{type(value).__name__} {value!r}"
