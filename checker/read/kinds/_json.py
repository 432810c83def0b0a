"""Small shared helpers of the importers: safe JSON reading, typed look-ups, sniffing a file's first bytes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from checker.read.inputs.limits import Limits
from checker.read.loaders import load_json
from checker.report import Findings

SNIFF_BYTES = 64 * 1024


def head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first bytes of a file (b"" when it cannot be read): enough to tell a tool's output by its keys."""
    try:
        with open(path, "rb") as stream:
            return stream.read(size)
    except OSError:
        return b""


def read_object(path: Path, *, display: str, findings: Findings, limits: Limits) -> dict | None:
    """A JSON object file read with every guard of checker.read.loaders (size, UTF-8, NaN, duplicate keys)."""
    data = load_json(path, display=display, findings=findings, limits=limits)
    return data if isinstance(data, dict) else None


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
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def count(value: Any) -> int | None:
    """A non-negative integer from a JSON number."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
