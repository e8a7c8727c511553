"""The lab's view-model: numbers as text, formulas with the student's numbers, chart geometry."""

# The lab writes true minus and times signs; the expected strings spell them the same way.
# ruff: noqa: RUF001

import contextlib
import re
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import EngineError, from_items, from_means, ring_allreduce, trajectory
from app.lab.axes import BOTTOM, LEFT, RIGHT, TOP, nice_ceiling, nice_range
from app.lab.bar_charts import counts_chart, influence_chart
from app.lab.numbers import fmt
from app.lab.path_chart import trajectory_view
from app.lab.pictures import implied_path
from app.lab.view import (
    LabCharts,
    LabDetails,
    LabView,
    lab_charts,
    lab_details,
    lab_view,
    ring_view,
)
from app.lab.worked import fmt_seconds
from tests.lab_states import items_state, means_state, ring_state

LESSON = means_state(counts=(2.0, 6.0), means=(1.0, 3.0), eta=0.1, w=10.0)
ITEMS = items_state(targets=((9.0, 9.0), (7.0,) * 6), weights=None, eta=0.1, w=10.0, steps=30)


def lesson_view() -> LabView:
    return lab_view(from_means(LESSON.counts, LESSON.means, eta=0.1, w=10.0))


def lesson_details() -> LabDetails:
    return lab_details(from_means(LESSON.counts, LESSON.means, eta=0.1, w=10.0), LESSON)


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
    view = lesson_details()
    assert view.lines.N == "2 + 6 = 8"
    assert view.lines.g == "(2×1 + 6×3) / 8 = 2.5"
    assert view.lines.rank_mean == "(1 + 3) / 2 = 2"
    assert view.lines.compensated == "(0.5 + 4.5) / 2 = 2.5"
    assert view.lines.w_new == "10 − 0.1×2.5 = 9.75"
    assert view.lines.w_new_rank_mean == "10 − 0.1×2 = 9.8"
    assert view.lines.difference == "0.1×(2.5 − 2) = 0.05"
    assert [row.factor_formula for row in view.ranks] == ["2×2 / 8 = 0.5", "2×6 / 8 = 1.5"]
    assert [row.compensated for row in view.ranks] == ["0.5", "4.5"]
    assert not lesson_view().agree


def test_negative_operands_are_parenthesised() -> None:
    state = means_state((1.0, 1.0), (-3.0, 1.0), 0.5, -2.0)
    view = lab_details(from_means(state.counts, state.means, eta=0.5, w=-2.0), state)
    assert view.lines.g == "(1×(−3) + 1×1) / 2 = −1"
    assert view.lines.w_new == "−2 − 0.5×(−1) = −1.5"


def test_equal_counts_agree() -> None:
    state = means_state((4.0, 4.0), (1.0, 3.0), 0.1, 10.0)
    assert lab_view(from_means(state.counts, state.means, eta=0.1, w=10.0)).agree


def bars(series: object) -> list[tuple[float, float, float, float]]:
    """Each bar a series path draws, ``M x bottom V y h width V bottom z``: x, y, width, height."""
    axis = f"{BOTTOM:g}"
    drawn = re.findall(rf"M([\d.]+) {axis}V([\d.]+)h([\d.]+)V{axis}z", series.path)  # type: ignore[attr-defined]
    assert "".join(f"M{x} {axis}V{y}h{w}V{axis}z" for x, y, w in drawn) == series.path  # type: ignore[attr-defined]
    return [(float(x), float(y), float(w), BOTTOM - float(y)) for x, y, w in drawn]


def test_count_bars_are_proportional_and_inside_the_frame() -> None:
    chart = lesson_details().counts_chart
    (series,) = chart.series
    drawn = bars(series)
    assert len(drawn) == 2
    assert drawn[1][3] == pytest.approx(3 * drawn[0][3], abs=0.2)  # to 0.1 unit
    for x, y, width, _ in drawn:
        assert x >= LEFT
        assert x + width <= RIGHT
        assert y >= TOP
    assert [tick.label for tick in chart.ticks] == ["0", "5", "10"]
    assert [value.text for value in chart.values] == ["2", "6"]


def test_influence_bars_show_the_rank_mean_overweighting_small_ranks() -> None:
    global_, rank_mean = lesson_details().influence_chart.series
    assert (global_.kind, rank_mean.kind) == ("global", "rank-mean")
    (_, _, _, global_0), (_, _, _, global_1) = bars(global_)
    (_, _, _, rank_mean_0), (_, _, _, rank_mean_1) = bars(rank_mean)
    # Under the rank mean one item of rank 0 weighs 1/4, three times one item of rank 1 (1/12).
    assert rank_mean_0 == pytest.approx(3 * rank_mean_1, abs=0.2)
    # Under the global mean every item weighs 1/N = 1/8, whatever its rank.
    assert global_0 == pytest.approx(global_1)
    assert global_0 == pytest.approx(rank_mean_1 * 12 / 8, abs=0.2)
    # Their values, written above the bars (where they fit), in the lab's one formatting: 1/12
    # exactly.
    chart = lesson_details().influence_chart
    assert [value.text for value in chart.values] == ["0.125", "0.125", "0.25", "1/12"]


def test_empty_rank_has_no_bar_height() -> None:
    state = means_state((2.0, 6.0, 0.0), (1.0, 3.0, 0.0), 0.1, 10.0)
    result = from_means(state.counts, state.means, eta=0.1, w=10.0)
    details = lab_details(result, state)
    assert [bars(series)[2][3] for series in details.influence_chart.series] == [0.0, 0.0]
    assert details.ranks[2].empty
    assert lab_view(result).warnings


def test_trajectory_chart_spans_the_steps_and_orders_the_fixed_points() -> None:
    result = from_items(ITEMS.targets, eta=0.1, w=10.0)
    path = trajectory(ITEMS.targets, eta=0.1, w=10.0, steps=30)
    view = lab_charts(result, path)
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
    assert lab_details(result, ITEMS).ranks[1].gradients == "3, 3, 3, 3, 3, 3"


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


def texts(value: object) -> Iterator[str]:
    """Every string inside a view (dataclasses, tuples), however deep."""
    if isinstance(value, str):
        yield value
    elif is_dataclass(value):
        for field in fields(value):
            yield from texts(getattr(value, field.name))
    elif isinstance(value, tuple):
        for item in value:
            yield from texts(item)


lab_values = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)
lab_counts = st.floats(min_value=0, max_value=1e12, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=64).flatmap(
        lambda p: st.tuples(
            st.lists(lab_counts, min_size=p, max_size=p).filter(any),
            st.lists(lab_values, min_size=p, max_size=p),
        )
    ),
    st.floats(min_value=1e-6, max_value=1e6),
    lab_values,
    st.lists(st.lists(lab_values, max_size=5), min_size=1, max_size=4).filter(
        lambda ranks: any(ranks)
    ),
)
def test_no_view_text_holds_a_character_html_gives_a_meaning_to(
    ranks: tuple[list[float], list[float]], eta: float, w: float, targets: list[list[float]]
) -> None:
    """The results fragment writes the view's text unescaped: it must never need escaping."""
    views: list[LabView | LabCharts | LabDetails] = []
    result_ok = False
    state = means_state(ranks[0], ranks[1], eta, w)
    # Out of the float range the engine refuses, and the lab shows that error (escaped) instead.
    # The pictures come by their own request, after the figures: a state the engine took for
    # the figures must draw them too (an EngineError from the path would fail that request).
    with contextlib.suppress(EngineError):
        means_result = from_means(state.counts, state.means, eta=eta, w=w)
        views += [lab_view(means_result), lab_details(means_result, state)]
    if views:
        views.append(lab_charts(means_result, implied_path(state)))
    items = items_state(targets, None, eta, w, 30)
    with contextlib.suppress(EngineError):
        result = from_items(targets, eta=eta, w=w)
        views += [lab_view(result), lab_details(result, items)]
        result_ok = True
    if result_ok:
        path = trajectory(targets, None, eta=eta, w=w, steps=30)
        views.append(lab_charts(result, path))
    for view in views:
        for text in texts(view):
            # An apostrophe is plain text in element content and in double-quoted attributes.
            assert not set(text) & set('<>&"'), text


CHAR = 8.0  # viewBox units per character of the charts' 14-unit type (generous for digits)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 8])
def test_bar_value_labels_never_overlap_their_neighbours(ranks: int) -> None:
    # P = 3 used to print "0.06670.0667": two labels wider than the bars they sit on.
    counts = tuple(float(c) for c in (2, 6, 3, 5, 7, 1, 4, 8)[:ranks])
    result = from_means(counts, (1.0,) * ranks, eta=0.1, w=10.0)
    for chart in (influence_chart(result), counts_chart(result)):
        spans = sorted(
            (float(v.x) - len(v.text) * CHAR / 2, float(v.x) + len(v.text) * CHAR / 2)
            for v in chart.values
        )
        for (_, right), (left, _) in pairwise(spans):
            assert right <= left, chart.title


def test_trajectory_labels_fit_the_frame_and_keep_their_minus_sign() -> None:
    path = trajectory([[-900.0, -900.0], [-700.0] * 6], eta=0.1, w=10.0, steps=1000)
    chart = trajectory_view(path).chart
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
    chart = trajectory_view(path).chart
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
    chart = trajectory_view(trajectory(targets, weights, eta=eta, w=10.0, steps=steps)).chart
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
