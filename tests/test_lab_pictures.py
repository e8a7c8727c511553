"""The lab's pictures: the number line of rank means and the SGD path the means imply."""

import math
import random
from fractions import Fraction

import pytest

from app.engine import GradientResult, from_means
from app.lab.axes import coordinate, nice_ceiling
from app.lab.numbers import fmt
from app.lab.pictures import (
    AXIS_Y,
    DOT_LABEL_Y,
    DOT_RADIUS,
    LINE_HEIGHT,
    LINE_LEFT,
    LINE_RIGHT,
    LINE_WIDTH,
    TICK_Y,
    VIEW_BOX,
    Dot,
    Formatter,
    Marker,
    NumberLine,
    _bounds,
    _label_x,
    implied_path,
    number_line,
)
from tests.lab_states import means_state

LESSON = means_state(counts=(2.0, 6.0), means=(1.0, 3.0), eta=0.1, w=10.0)


def test_the_means_imply_the_lessons_targets_and_fixed_points() -> None:
    # ḡ_r = w - ȳ_r at w = 10: means 1 and 3 are targets 9 and 7, the lesson's items example,
    # whose fixed points are 7.5 (every item) and 8 (every rank).
    path = implied_path(LESSON, steps=30)
    assert path.fixed_point_global == pytest.approx(float(Fraction(2 * 9 + 6 * 7, 8)))
    assert path.fixed_point_rank_mean == pytest.approx(float(Fraction(9 + 7, 2)))
    # The first step of each scheme is the lab's own w_new: 9.75 and 9.8.
    assert path.w_global[1] == pytest.approx(9.75)
    assert path.w_rank_mean[1] == pytest.approx(9.8)


def test_an_empty_rank_is_dropped_by_the_global_path_and_still_slows_the_rank_mean() -> None:
    state = means_state(counts=(2.0, 6.0, 0.0), means=(1.0, 3.0, 0.0), eta=0.1, w=10.0)
    path = implied_path(state, steps=1)
    assert path.fixed_point_global == pytest.approx(7.5)
    assert path.fixed_point_rank_mean == pytest.approx(8.0)
    # One rank-mean step: w - η·(1/3)·(1 + 3 + 0) = 10 - 0.4/3.
    assert path.w_rank_mean[1] == pytest.approx(float(10 - Fraction(1, 10) * Fraction(4, 3)))


def _x(line: object, index: int) -> float:
    return float(line.dots[index].cx)  # type: ignore[attr-defined]


def test_number_line_dot_area_is_the_count_and_marks_sit_at_g_and_the_rank_mean() -> None:
    result = from_means((2.0, 6.0), (1.0, 3.0), eta=0.1, w=10.0)
    line = number_line(result, fmt)
    small, big = (float(d.r) for d in line.dots)
    assert big == pytest.approx(DOT_RADIUS)
    assert (small / big) ** 2 == pytest.approx(2 / 6, rel=1e-3)  # area ∝ count
    marks = {m.kind: m for m in line.markers}
    assert marks["global"].label == "g 2.5"
    assert marks["rank-mean"].label == "rank mean 2"
    # Positions are linear in the value: g = 2.5 sits 3/4 of the way from mean 1 to mean 3.
    left, right = _x(line, 0), _x(line, 1)
    assert float(marks["global"].x) == pytest.approx(left + 0.75 * (right - left), abs=0.02)
    assert float(marks["rank-mean"].x) == pytest.approx(left + 0.5 * (right - left), abs=0.02)
    assert float(line.axis_y) == AXIS_Y


def test_number_line_labels_stay_inside_the_frame() -> None:
    result = from_means((1.0, 60.0), (-1000.0, 3.0), eta=0.1, w=10.0)
    line = number_line(result, fmt)
    for mark in line.markers:
        half = len(mark.label) * 8 / 2
        x = float(mark.label_x)
        if mark.anchor == "middle":
            assert half <= x <= LINE_WIDTH - half
        elif mark.anchor == "start":
            assert x + 2 * half <= LINE_WIDTH
        else:
            assert x - 2 * half >= 0
    assert line.markers[0].label.startswith("g \N{MINUS SIGN}")


def test_an_empty_rank_is_a_ring_at_zero() -> None:
    result = from_means((2.0, 6.0, 0.0), (1.0, 3.0, 5.0), eta=0.1, w=10.0)
    line = number_line(result, fmt)
    empty = line.dots[2]
    assert empty.empty
    assert "counted as 0" in empty.title


def reference_number_line(result: GradientResult, fmt: Formatter) -> NumberLine:
    """``number_line`` as it was (a5e7c58): x(value) a closure, every label formatted where used."""
    shown = [m if n > 0 else 0.0 for n, m in zip(result.counts, result.means, strict=True)]
    g, rank_mean = result.global_gradient, result.rank_mean_gradient
    low, high = _bounds([*shown, g, rank_mean])
    span = high - low

    def x(value: float) -> float:
        return LINE_LEFT + (value - low) / span * (LINE_RIGHT - LINE_LEFT)

    biggest = max(result.counts) or 1.0
    dots = []
    for r, (count, mean) in enumerate(zip(result.counts, shown, strict=True)):
        if count > 0:
            radius = DOT_RADIUS * math.sqrt(count / biggest)
            title = f"rank {r}: local mean {fmt(mean)}, count {fmt(count)}"
        else:
            radius = 5.0
            title = f"rank {r}: empty, counted as 0 by the plain rank mean"
        dots.append(
            Dot(coordinate(x(mean)), coordinate(radius), str(r), DOT_LABEL_Y, title, count <= 0)
        )
    markers = []
    for value, kind, name, label_y in (
        (g, "global", "g", "18"),
        (rank_mean, "rank-mean", "rank mean", f"{LINE_HEIGHT - 6:g}"),
    ):
        text = f"{name} {fmt(value)}"
        at = x(value)
        label_x, anchor = _label_x(at, text)
        marked = coordinate(at)
        markers.append(
            Marker(
                marked,
                text,
                marked if label_x == at else coordinate(label_x),
                label_y,
                anchor,
                kind,
            )
        )
    step = nice_ceiling(span / 4)
    first = math.ceil(low / step)
    ticks = tuple(
        (coordinate(x(k * step)), fmt(k * step, 4))
        for k in range(first, math.floor(high / step) + 1)
    )
    dots_text = "; ".join(d.title for d in dots)
    return NumberLine(
        title="The rank means on a number line",
        description=(
            f"Each rank's local mean as a dot whose area is its count: {dots_text}."
            f" The global item mean g is {fmt(g)}; the plain rank mean is {fmt(rank_mean)}."
        ),
        view_box=VIEW_BOX,
        left=coordinate(LINE_LEFT),
        right=coordinate(LINE_RIGHT),
        axis_y=coordinate(AXIS_Y),
        dots=tuple(dots),
        markers=tuple(markers),
        ticks=ticks,
        tick_y=TICK_Y,
    )


def test_number_line_is_the_reference() -> None:
    """The number line (positions written out, g and the rank mean formatted once) is the
    former one, field for field, on random states of 1 to 64 ranks, empty ranks included."""
    rng = random.Random(21)
    for _ in range(2000):
        p = rng.choice([1, 2, 3, 5, 8, 64])
        counts = [float(rng.choice([0, 1, 7, 64, 0.5, 1e6, rng.randint(0, 99)])) for _ in range(p)]
        counts[0] = counts[0] or 2.0
        means = [
            rng.choice([rng.randint(-100, 100) / 10, rng.uniform(-1e7, 1e7), 1e-9, 0.0])
            for _ in range(p)
        ]
        result = from_means(counts, means, eta=0.5, w=1.0)
        assert number_line(result, fmt) == reference_number_line(result, fmt)
