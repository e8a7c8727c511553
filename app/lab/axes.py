"""The frame every lab chart shares (a 360 by 220 viewBox), its coordinates and its round axes.

Geometry is in SVG viewBox units; every label is already text.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from app.lab.numbers import fmt


class Tick(NamedTuple):
    """A label at one position along an axis (``at`` in viewBox units)."""

    at: str
    label: str
    kind: str = ""


@dataclass(frozen=True, slots=True)
class Frame:
    """The plot area inside the 360 by 220 viewBox shared by every lab chart."""

    view_box: str
    left: str
    right: str
    bottom: str
    tick_x: str
    label_y: str


WIDTH, HEIGHT = 360.0, 220.0
# Room on the left for a value label of 14-unit type such as "-1000" (a true minus sign), and
# on the right for half of the last step label.
LEFT, RIGHT, TOP, BOTTOM = 58.0, 344.0, 24.0, 186.0
FRAME = Frame(
    view_box=f"0 0 {WIDTH:g} {HEIGHT:g}",
    left="58",
    right="344",
    bottom="186",
    tick_x="52",
    label_y="206",
)
# A label's width estimate in viewBox units per character of the 14-unit chart type.
CHAR_WIDTH = 8.0


def coordinate(value: float) -> str:
    """A coordinate in the SVG viewBox: two decimals are finer than a pixel."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def along(value: float, low: float, high: float, start: float, end: float) -> float:
    """Where ``value`` lies on an axis from ``low`` (at ``start``) to ``high`` (at ``end``); a
    value axis runs from the plot's ``BOTTOM`` to its ``TOP``."""
    return start + (value - low) / (high - low or 1.0) * (end - start)


def widened(low: float, high: float) -> tuple[float, float]:
    """A range of (about) one value, widened by 1 on each side; any other as it is."""
    if high - low < 1e-9 * max(1.0, abs(high)):
        return low - 1.0, high + 1.0
    return low, high


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times 10ᵏ at or above ``value`` (1 when ``value`` ≤ 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power


def nice_range(low: float, high: float) -> tuple[float, float, float]:
    """Bounds widened to whole multiples of a round step (about four steps) and that step."""
    low, high = widened(low, high)
    step = nice_ceiling((high - low) / 4)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


def value_ticks(values: Iterable[float], low: float, high: float) -> tuple[Tick, ...]:
    """A tick at each of ``values`` on a value axis from ``low`` to ``high``."""
    return tuple(Tick(coordinate(along(v, low, high, BOTTOM, TOP)), fmt(v, 4)) for v in values)
