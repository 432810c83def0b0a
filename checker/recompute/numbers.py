"""One reading of "a usable number" for every part of the checker: hostile JSON carries bools, NaN,
Infinity and integers too large for a float, and none of them may crash a rule."""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """`value` as a finite float when it is a real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer beyond float range, e.g. 10**400
        return None
    return value if math.isfinite(value) else None
