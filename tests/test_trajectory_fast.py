"""The SGD chart's quick arithmetic against what a reader sees: labels clear of every point.

The chart's label placement takes a shortcut (only the curve segments near a label are
tested); each label it places is checked here against every tested point of both curves.
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


def _clear(
    box: Box,
    curves: Sequence[Sequence[tuple[float, float]]],
    guide_ys: Sequence[float],
    placed: Sequence[Box],
) -> bool:
    """Whether a reader sees the label clear: no tested point of either curve within 2 units
    of its box, no guide line within 1 unit of it, no label already placed meeting it."""
    return not (
        any(_holds(box, x, y) for curve in curves for x, y in _dense(curve))
        or any(box.top - 1 <= y <= box.bottom + 1 for y in guide_ys)
        or any(_meet(box, other) for other in placed)
    )


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
def test_labels_sit_beside_their_guide_clear_of_what_is_drawn(seed: int) -> None:
    """A fixed point's label, as a reader sees it: in the chart, beside its own guide, clear of
    both curves, the guides and the labels placed before it; on the side of the guide away from
    the start whenever one of that side's spots (left, middle and right of the plot) is clear;
    overlapping something only when no spot is clear, and then at the first, the left of the
    far side."""
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
        for guide_y in guide_ys:
            text = "x" * rng.randint(3, 34)
            width = len(text) * CHAR_WIDTH
            box = place_label(text, guide_y, start_y, ys, steps, guide_ys, placed)
            assert box.x1 - box.x0 == width
            assert box.x0 >= LEFT
            assert box.x1 <= RIGHT
            in_margin = box.bottom < TOP
            if not in_margin:  # in the plot, beside its guide, or against the plot's edge
                assert box.top >= TOP
                assert box.bottom <= BOTTOM
                gap = box.top - guide_y if box.top > guide_y else guide_y - box.bottom
                assert gap <= 4 + 1e-9 or box.top == TOP or box.bottom == BOTTOM, (box, guide_y)
            # The far side's spots: 15 below the guide's line or 5 above it, kept in the plot.
            far_baseline = guide_y + 15 if start_y <= guide_y else guide_y - 5
            far_baseline = min(max(far_baseline, TOP + 11), BOTTOM - 3)
            far = [
                Box(x0, x0 + width, far_baseline)
                for x0 in (LEFT + 6, LEFT + (RIGHT - LEFT - width) / 2, RIGHT - width - 2)
            ]
            if _clear(box, tracks, guide_ys, placed):
                # The far side's spots are tried first, in order: those before it are not clear.
                tried = far[: far.index(box)] if box in far else far
                assert not any(_clear(spot, tracks, guide_ys, placed) for spot in tried)
            else:
                assert box == far[0]
            placed.append(box)


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
