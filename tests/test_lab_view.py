"""The lab's view-model: numbers as text, formulas with the student's numbers, chart geometry."""

# The lab writes true minus and times signs; the expected strings spell them the same way.
# ruff: noqa: RUF001

from itertools import pairwise

import pytest

from app.engine import from_items, from_means, ring_allreduce, trajectory
from app.lab.view import (
    BOTTOM,
    LEFT,
    RIGHT,
    TOP,
    LabView,
    counts_chart,
    influence_chart,
    lab_view,
    nice_ceiling,
    nice_range,
    ring_view,
    trajectory_chart,
)
from app.lab.worked import fmt_seconds
from app.numbers import fmt
from tests.lab_states import items_state, means_state, ring_state

LESSON = means_state(counts=(2.0, 6.0), means=(1.0, 3.0), eta=0.1, w=10.0)
ITEMS = items_state(targets=((9.0, 9.0), (7.0,) * 6), weights=None, eta=0.1, w=10.0, steps=30)


def lesson_view() -> LabView:
    return lab_view(from_means(LESSON.counts, LESSON.means, eta=0.1, w=10.0), LESSON)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.5, "2.5"),
        (8.0, "8"),
        (0.0, "0"),
        (-3.0, "−3"),
        (9.8 - 9.75, "0.05"),
        (1 / 12, "0.0833333"),
        (1.5e-7, "1.5×10⁻⁷"),
        (-2e9, "−2×10⁹"),
    ],
)
def test_fmt_reads_like_the_lesson(value: float, text: str) -> None:
    assert fmt(value) == text


def test_lesson_example_formulas_carry_the_students_numbers() -> None:
    view = lesson_view()
    assert view.N_formula == "2 + 6 = 8"
    assert view.g_formula == "(2×1 + 6×3) / 8 = 2.5"
    assert view.rank_mean_formula == "(1 + 3) / 2 = 2"
    assert view.compensated_formula == "(0.5 + 4.5) / 2 = 2.5"
    assert view.w_new_formula == "10 − 0.1×2.5 = 9.75"
    assert view.w_new_rank_mean_formula == "10 − 0.1×2 = 9.8"
    assert view.difference_formula == "0.1×(2.5 − 2) = 0.05"
    assert [row.factor_formula for row in view.ranks] == ["2×2 / 8 = 0.5", "2×6 / 8 = 1.5"]
    assert [row.compensated for row in view.ranks] == ["0.5", "4.5"]
    assert not view.agree


def test_negative_operands_are_parenthesised() -> None:
    state = means_state((1.0, 1.0), (-3.0, 1.0), 0.5, -2.0)
    view = lab_view(from_means(state.counts, state.means, eta=0.5, w=-2.0), state)
    assert view.g_formula == "(1×(−3) + 1×1) / 2 = −1"
    assert view.w_new_formula == "−2 − 0.5×(−1) = −1.5"


def test_equal_counts_agree() -> None:
    state = means_state((4.0, 4.0), (1.0, 3.0), 0.1, 10.0)
    assert lab_view(from_means(state.counts, state.means, eta=0.1, w=10.0), state).agree


def test_count_bars_are_proportional_and_inside_the_frame() -> None:
    chart = lesson_view().counts_chart
    heights = [float(bar.height) for bar in chart.bars]
    assert heights[1] == pytest.approx(3 * heights[0], rel=1e-3)
    for bar in chart.bars:
        assert float(bar.x) >= LEFT
        assert float(bar.x) + float(bar.width) <= RIGHT
        assert float(bar.y) >= TOP
        assert float(bar.y) + float(bar.height) == pytest.approx(BOTTOM)
    assert [tick.label for tick in chart.ticks] == ["0", "5", "10"]


def test_influence_bars_show_the_rank_mean_overweighting_small_ranks() -> None:
    chart = lesson_view().influence_chart
    by_label = {bar.label: float(bar.height) for bar in chart.bars}
    # Under the rank mean one item of rank 0 weighs 1/4, three times one item of rank 1 (1/12).
    assert by_label["rank 0, rank mean 1/(P·nᵣ): 0.25"] == pytest.approx(
        3 * by_label["rank 1, rank mean 1/(P·nᵣ): 1/12"], rel=1e-3
    )
    assert by_label["rank 0, global mean 1/N: 0.125"] == pytest.approx(
        by_label["rank 1, global mean 1/N: 0.125"]
    )


def test_empty_rank_has_no_bar_height() -> None:
    state = means_state((2.0, 6.0, 0.0), (1.0, 3.0, 0.0), 0.1, 10.0)
    view = lab_view(from_means(state.counts, state.means, eta=0.1, w=10.0), state)
    assert [bar.height for bar in view.influence_chart.bars[-2:]] == ["0", "0"]
    assert view.ranks[2].empty
    assert view.warnings


def test_trajectory_chart_spans_the_steps_and_orders_the_fixed_points() -> None:
    result = from_items(ITEMS.targets, eta=0.1, w=10.0)
    path = trajectory(ITEMS.targets, eta=0.1, w=10.0, steps=30)
    view = lab_view(result, ITEMS, path)
    assert view.trajectory is not None
    chart = view.trajectory.chart
    for line in chart.lines:
        points = [tuple(map(float, p.split(","))) for p in line.points.split()]
        assert len(points) == 31
        assert points[0][0] == LEFT
        assert points[-1][0] == RIGHT
        assert all(TOP <= y <= BOTTOM for _, y in points)
    global_guide, rank_guide = (float(g.points.split(",")[1].split()[0]) for g in chart.guides)
    assert global_guide > rank_guide  # 7.5 sits below 8 (SVG y grows downwards)
    assert view.trajectory.fixed_point_global == "7.5"
    assert view.trajectory.fixed_point_rank_mean == "8"
    assert [tick.label for tick in chart.ticks] == ["7", "8", "9", "10"]
    assert view.ranks[1].gradients == "3, 3, 3, 3, 3, 3"


@pytest.mark.parametrize(
    ("value", "ceiling"), [(6, 10), (0.25, 0.25), (0.3, 0.5), (2, 2), (0, 1), (120, 200)]
)
def test_nice_ceiling(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


def test_nice_range_widens_to_round_steps() -> None:
    assert nice_range(7.35, 10.15) == pytest.approx((7.0, 11.0, 1.0))
    low, high, step = nice_range(5.0, 5.0)
    assert low < 5.0 < high
    assert step > 0


def test_ring_view_substitutes_the_numbers() -> None:
    state = ring_state(payload_mb=100.0, ranks=8, alpha_us=10.0, bandwidth_gbps=10.0)
    view = ring_view(ring_allreduce(100e6, 8, 10e-6, 10e9), state)
    # 2·7·(10 µs + 100 MB / 80 GB/s) = 14 · 1.26 ms = 17.64 ms; the count: 14 · ~10 µs = 140 µs.
    assert view.time == "17.64 ms"
    assert view.time_formula.endswith("= 17.64 ms")
    assert "2×(8 − 1)" in view.time_formula
    assert view.count_time == "140.001 µs"
    assert view.overhead == "0.794 %"


@pytest.mark.parametrize(
    ("seconds", "text"), [(2.5, "2.5 s"), (0.01764, "17.64 ms"), (1.4e-4, "140 µs"), (5e-9, "5 ns")]
)
def test_fmt_seconds(seconds: float, text: str) -> None:
    assert fmt_seconds(seconds) == text


CHAR = 8.0  # viewBox units per character of the charts' 14-unit type (generous for digits)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 8])
def test_bar_value_labels_never_overlap_their_neighbours(ranks: int) -> None:
    # P = 3 used to print "0.06670.0667": two labels wider than the bars they sit on.
    counts = tuple(float(c) for c in (2, 6, 3, 5, 7, 1, 4, 8)[:ranks])
    result = from_means(counts, (1.0,) * ranks, eta=0.1, w=10.0)
    for chart in (influence_chart(result), counts_chart(result)):
        spans = sorted(
            (float(bar.cx) - len(bar.value) * CHAR / 2, float(bar.cx) + len(bar.value) * CHAR / 2)
            for bar in chart.bars
            if bar.value
        )
        for (_, right), (left, _) in pairwise(spans):
            assert right <= left, chart.title


def test_trajectory_labels_fit_the_frame_and_keep_their_minus_sign() -> None:
    path = trajectory([[-900.0, -900.0], [-700.0] * 6], eta=0.1, w=10.0, steps=1000)
    chart = trajectory_chart(path)
    assert any(t.label.startswith("\N{MINUS SIGN}") for t in chart.ticks)
    for tick in chart.ticks:  # right-aligned at tick_x: the whole label left of it, inside
        assert float(chart.frame.tick_x) - len(tick.label) * CHAR >= 0, tick.label
    last = chart.step_ticks[-1]
    assert last.label == "1000"
    assert last.kind == "end"
    assert float(last.at) <= 360


def test_trajectory_fixed_point_labels_sit_away_from_the_start() -> None:
    # The curves come down from w = 10 towards 8 and 7.5: each label goes under its guide.
    path = trajectory([[9.0, 9.0], [7.0] * 6], eta=0.1, w=10.0, steps=30)
    chart = trajectory_chart(path)
    guides = {g.kind: float(g.points.split()[0].split(",")[1]) for g in chart.guides}
    for label in chart.guide_labels:
        assert float(label.y) > guides[label.kind], label.label


def _curve_points(chart: object) -> list[tuple[float, float]]:
    points = []
    for line in chart.lines:  # type: ignore[attr-defined]
        pairs = [tuple(map(float, p.split(","))) for p in line.points.split()]
        for (xa, ya), (xb, yb) in pairwise(pairs):
            points += [(xa + (xb - xa) * t / 20, ya + (yb - ya) * t / 20) for t in range(21)]
    return points


@pytest.mark.parametrize(
    ("targets", "weights", "eta", "steps"),
    [
        # Heavy padding: the rank-mean curve falls past the global guide (8.6) on its way to 8.
        ([[9.0] * 8, [7.0, 7.0] + [0.0] * 6], [[1.0] * 8, [1.0, 1.0] + [0.0] * 6], 0.1, 30),
        ([[9.0, 9.0], [7.0] * 6], None, 0.1, 30),
        ([[9.0, 9.0], [7.0] * 6], None, 1.5, 10),  # oscillating
        ([[12.0], [-3.0] * 3, [5.0]], None, 0.3, 1),  # one step: two points far apart
    ],
)
def test_fixed_point_labels_never_meet_a_curve_or_each_other(
    targets: list[list[float]], weights: list[list[float]] | None, eta: float, steps: int
) -> None:
    chart = trajectory_chart(trajectory(targets, weights, eta=eta, w=10.0, steps=steps))
    boxes = []
    for label in chart.guide_labels:
        x0, baseline = float(label.x), float(label.y)
        box = (x0, x0 + len(label.label) * CHAR, baseline - 11, baseline + 3)
        boxes.append(box)
        assert box[0] >= 0, label.label
        assert box[1] <= 360, label.label
        for x, y in _curve_points(chart):
            assert not (box[0] <= x <= box[1] and box[2] <= y <= box[3]), (label.label, x, y)
    (a, b) = boxes
    assert a[1] < b[0] or b[1] < a[0] or a[3] < b[2] or b[3] < a[2]
