"""Running sums of in-range numbers for the attempt formulas (readings R42)."""

from __future__ import annotations

import math


def running_add(total: int | float, value: int | float) -> int | float:
    """``total + value``; infinity once it cannot be represented (an integer sum beyond the
    float range meeting a float), so that the final ``number_or_none`` makes it unavailable."""
    try:
        return total + value
    except OverflowError:
        return math.inf
