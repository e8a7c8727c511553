"""Round axis steps shared by the lab's charts."""

import math


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times 10ᵏ at or above ``value`` (1 when ``value`` ≤ 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power
