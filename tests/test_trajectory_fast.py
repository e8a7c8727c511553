"""The SGD chart's quick arithmetic against plain references: the same floats, the same places.

The chart's label placement takes a shortcut (only the curve segments near a label are
tested); it is checked here against testing every point of both curves.
"""

import math
import random
from collections.abc import Sequence
from itertools import pairwise

import pytest

from app.lab.axes import BOTTOM, CHAR_WIDTH, LEFT, RIGHT, TOP, along
from app.lab.path_chart import (
    Box,
    curve_meets,
    place_label,
)

# ---- the chart -------------------------------------------------------------------------------


def _dense(track: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Every tested point of a curve, listed (the search the chart used to run)."""
    dense = list(track[:1])
    for (xa, ya), (xb, yb) in pairwise(track):
        parts = max(1, math.ceil((xb - xa) / 3.0))
        dense += [
            (xa + (xb - xa) * t / parts, ya + (yb - ya) * t / parts) for t in range(1, parts + 1)
        ]
    return dense


def _meet(one: Box, other: Box) -> bool:
    """Whether two label boxes overlap."""
    return not (
        one.x1 < other.x0 or other.x1 < one.x0 or one.bottom < other.top or other.bottom < one.top
    )


def _holds(box: Box, x: float, y: float) -> bool:
    """Whether a tested point lies in the box grown by 2 units on each side."""
    return box.x0 - 2 <= x <= box.x1 + 2 and box.top - 2 <= y <= box.bottom + 2


def _reference_place(
    text: str,
    guide_y: float,
    start_y: float,
    curves: Sequence[Sequence[tuple[float, float]]],
    guide_ys: Sequence[float],
    placed: Sequence[Box],
) -> Box:
    width = len(text) * CHAR_WIDTH
    below, above = guide_y + 15, guide_y - 5
    sides = (below, above) if start_y <= guide_y else (above, below)
    points = [point for curve in curves for point in _dense(curve)]
    candidates = [
        Box(x0, x0 + width, min(max(baseline, TOP + 11), BOTTOM - 3))
        for baseline in sides
        for x0 in (LEFT + 6, LEFT + (RIGHT - LEFT - width) / 2, RIGHT - width - 2)
    ]
    candidates += [Box(x0, x0 + width, TOP - 8) for x0 in (LEFT, RIGHT - width)]
    for box in candidates:
        crossed = any(box.top - 1 <= y <= box.bottom + 1 for y in guide_ys)
        if crossed or any(_meet(box, other) for other in placed):
            continue
        if not any(_holds(box, x, y) for x, y in points):
            return box
    return candidates[0]


def _random_curve(rng: random.Random, steps: int) -> list[float]:
    kind = rng.choice(["walk", "zigzag", "decay", "flat"])
    y = rng.uniform(TOP, BOTTOM)
    target, factor = rng.uniform(TOP, BOTTOM), rng.choice([0.9, 0.5, -0.5, -0.95, -1.0])
    ys = [y]
    for _ in range(steps):
        if kind == "walk":
            y = min(BOTTOM, max(TOP, y + rng.uniform(-25, 25)))
        elif kind == "zigzag":
            y = TOP if y > (TOP + BOTTOM) / 2 else BOTTOM
        elif kind == "decay":
            y = target + factor * (y - target)
        ys.append(y)
    return ys


@pytest.mark.parametrize("seed", range(6))
def test_labels_go_where_testing_every_point_puts_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        steps = rng.choice([0, 1, 2, 5, 30, 30, 30, 100, 1000 if rng.random() < 0.1 else 40])
        xs = [along(k, 0, steps, LEFT, RIGHT) for k in range(steps + 1)]
        curves = [_random_curve(rng, steps) for _ in range(2)]
        guide_ys = [rng.uniform(TOP, BOTTOM) for _ in range(2)]
        start_y = curves[0][0]
        tracks = [list(zip(xs, ys, strict=True)) for ys in curves]
        ys = curves[0] + curves[1] + guide_ys
        placed: list[Box] = []
        expected: list[Box] = []
        for guide_y in guide_ys:
            text = "x" * rng.randint(3, 34)
            placed.append(place_label(text, guide_y, start_y, ys, steps, guide_ys, placed))
            expected.append(_reference_place(text, guide_y, start_y, tracks, guide_ys, expected))
        assert placed == expected


def test_curves_meet_a_box_where_a_tested_point_lies_in_it() -> None:
    # Boxes whose edges fall on tested points, within a rounding of them, or just beside them.
    rng = random.Random(11)
    for _ in range(300):
        steps = rng.choice([0, 1, 2, 5, 30, 30, 100])
        xs = [along(k, 0, steps, LEFT, RIGHT) for k in range(steps + 1)]
        curves = [_random_curve(rng, steps) for _ in range(2)]
        points = [p for ys in curves for p in _dense(list(zip(xs, ys, strict=True)))]
        for _ in range(20):
            px, py = rng.choice(points)
            qx = rng.choice(points)[0]
            nudge = rng.choice([0.0, 1e-12, -1e-12, 1e-9, 0.5])
            x_range = (min(px, qx) + nudge, max(px, qx) + rng.choice([0.0, -nudge, 3.0]))
            y_range = (py + nudge, py + rng.choice([0.0, 1e-13, 18.0, -1e-13]))
            assert curve_meets(curves[0] + curves[1], steps, x_range, y_range) == any(
                x_range[0] <= x <= x_range[1] and y_range[0] <= y <= y_range[1] for x, y in points
            )
