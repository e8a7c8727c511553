"""The lab's pictures: the number line of rank means and the SGD path the means imply."""

from fractions import Fraction
from itertools import pairwise

import pytest

from app.engine import from_means
from app.lab.pictures import (
    AXIS_Y,
    DOT_RADIUS,
    LINE_LEFT,
    LINE_RIGHT,
    LINE_WIDTH,
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
    line = number_line(result)
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
    line = number_line(result)
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
    line = number_line(result)
    empty = line.dots[2]
    assert empty.empty
    assert "counted as 0" in empty.title


def test_number_line_ticks_are_round_values_in_order_inside_the_line() -> None:
    result = from_means((2.0, 6.0), (1.0, 3.0), eta=0.1, w=10.0)
    ticks = number_line(result).ticks
    assert len(ticks) >= 3
    xs = [float(x) for x, _ in ticks]
    assert xs == sorted(xs)
    assert all(LINE_LEFT <= x <= LINE_RIGHT for x in xs)
    values = [float(label.replace("\N{MINUS SIGN}", "-")) for _, label in ticks]
    steps = {round(b - a, 9) for a, b in pairwise(values)}
    assert len(steps) == 1  # evenly spaced, one round step
