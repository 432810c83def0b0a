"""Small shared helpers of the importers: safe JSON reading, typed look-ups, sniffing a file's first bytes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from checker.read.inputs.limits import Limits
from checker.read.loaders import load_json
from checker.report import Findings

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


def number(value: Any) -> float | None:
    """A finite float from a JSON number (bools and strings are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > MAX_MAGNITUDE:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def count(value: Any) -> int | None:
    """A non-negative integer from a JSON number."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MAGNITUDE:
        return None
    return value
