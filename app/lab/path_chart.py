"""The SGD paths' picture: w over the steps under both schemes, each fixed point as a guide
with its label placed clear of both curves, and the words beside it.
"""

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from app.engine import Trajectory
from app.lab.axes import (
    BOTTOM,
    CHAR_WIDTH,
    FRAME,
    LEFT,
    RIGHT,
    TOP,
    Frame,
    Tick,
    along,
    coordinate,
    nice_range,
    value_ticks,
)
from app.lab.numbers import fmt, fmt_distinct, minus_signs


# Named tuples, as the bar charts' records: built on every chart request.
class Line(NamedTuple):
    points: str
    kind: str
    label: str


class GuideLabel(NamedTuple):
    """A fixed point's label on the line chart: where its text starts, and what it says."""

    x: str
    y: str
    label: str
    kind: str


class LineChart(NamedTuple):
    title: str
    description: str
    frame: Frame
    lines: tuple[Line, ...]
    guides: tuple[Line, ...]
    guide_labels: tuple[GuideLabel, ...]
    ticks: tuple[Tick, ...]
    step_ticks: tuple[Tick, ...]


class TrajectoryView(NamedTuple):
    """The SGD paths' text: per scheme a verb (heads to, oscillates around, diverges from),
    its fixed point and a clause with the step's contraction factor."""

    steps: str
    start: str
    fixed_point_global: str
    fixed_point_rank_mean: str
    global_verb: str
    rank_mean_verb: str
    global_clause: str
    rank_mean_clause: str
    final_global: str
    final_rank_mean: str
    loss_final_global: str
    loss_final_rank_mean: str
    chart: LineChart
    warnings: tuple[str, ...]


class Box(NamedTuple):
    """A label's box in viewBox units: left and right, text baseline, top and bottom."""

    x0: float
    x1: float
    baseline: float

    @property
    def top(self) -> float:
        return self.baseline - 11  # the 14-unit type's ascent

    @property
    def bottom(self) -> float:
        return self.baseline + 3


# A curve is tested at its start and, along each segment, at points evenly spaced no further
# apart (in x) than this, the last at (about) the segment's end: for t = 1 … parts,
# (xa + (xb - xa) * t / parts, ya + (yb - ya) * t / parts), parts = max(1, ⌈(xb - xa) / 3⌉).
SPACING = 3.0
# A tested point lies between its segment's ends but for rounding: far below this for ys in
# viewBox units (a few hundred at most: three roundings of about 1e-14 each).
ROUNDING = 1e-9


def curve_meets(
    ys: Sequence[float], steps: int, x_range: tuple[float, float], y_range: tuple[float, float]
) -> bool:
    """Whether a tested point of either curve lies in ``x_range`` by ``y_range`` (bounds
    included). ``ys``: both curves' ys at each step, one curve after the other (then
    anything). A segment whose ends are both beyond the y range by more than rounding holds
    none; the others' points are worked out as floats."""
    xs = _step_axis(steps)[0]
    (x0, x1), (low, high) = x_range, y_range
    below, above = low - ROUNDING, high + ROUNDING
    # The segments (from step k to k + 1) that may hold a tested point in the x range (a
    # segment's last point may lie a rounding past its step).
    first, last = max(bisect_left(xs, x0) - 2, 0), min(bisect_right(xs, x1), steps)
    for start in (0, steps + 1):
        ends = ys[start + first : start + last + 1]
        if max(ends) < below or min(ends) > above:
            continue
        if x0 <= xs[0] <= x1 and low <= ys[start] <= high:
            return True
        for k in range(first, last):
            ya, yb = ys[start + k], ys[start + k + 1]
            if (ya if ya > yb else yb) < below or (yb if ya > yb else ya) > above:
                continue
            xa, xb = xs[k], xs[k + 1]
            parts = max(1, math.ceil((xb - xa) / SPACING))
            for t in range(1, parts + 1):
                if (
                    x0 <= xa + (xb - xa) * t / parts <= x1
                    and low <= (yb - ya) * t / parts + ya <= high
                ):
                    return True
    return False


def place_label(
    text: str,
    guide_y: float,
    start_y: float,
    ys: Sequence[float],
    steps: int,
    guide_ys: Sequence[float],
    placed: Sequence[Box],
) -> Box:
    """Where a fixed point's label goes: beside its guide, clear of both curves, the other
    guide and the labels already placed. Tried in order: the side of the guide away from the
    start value (where its own curve never goes), at the left, middle and right of the plot;
    then the other side; then the margin above the plot. ``ys``: both curves' ys at each of
    ``steps`` steps (as ``curve_meets``); a curve is clear of a box when none of its tested
    points lies in the box grown by 2 units on each side."""
    width = len(text) * CHAR_WIDTH
    below, above = guide_y + 15, guide_y - 5
    sides = (below, above) if start_y <= guide_y else (above, below)
    lefts = (LEFT + 6, LEFT + (RIGHT - LEFT - width) / 2, RIGHT - width - 2)
    # Candidates by baseline, each with its x0s in order. Last resort (curves everywhere, e.g.
    # an oscillating run): the margin above the plot, where no curve goes, told apart by colour.
    rows: list[tuple[float, tuple[float, ...]]] = [
        (min(max(side, TOP + 11), BOTTOM - 3), lefts) for side in sides
    ]
    rows.append((TOP - 8, (LEFT, RIGHT - width)))
    guides = sorted(guide_ys)
    for baseline, row in rows:
        top, bottom = baseline - 11, baseline + 3  # Box.top and Box.bottom
        k = bisect_left(guides, top - 1)
        if k < len(guides) and guides[k] <= bottom + 1:
            continue  # it crosses a guide (whatever its x)
        for x0 in row:
            x1 = x0 + width
            if placed and any(
                not (x1 < other.x0 or other.x1 < x0 or bottom < other.top or other.bottom < top)
                for other in placed
            ):
                continue  # it meets a label already placed
            if not curve_meets(ys, steps, (x0 - 2, x1 + 2), (top - 2, bottom + 2)):
                return Box(x0, x1, baseline)
    baseline, row = rows[0]
    return Box(row[0], row[0] + width, baseline)


@lru_cache(maxsize=16)
def _step_axis(steps: int) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Each step's x and its text: the same for every run of ``steps`` steps (geometry, not a
    result)."""
    xs = tuple(along(k, 0, steps, LEFT, RIGHT) for k in range(steps + 1))
    return xs, tuple(coordinate(x) for x in xs)


def _points(x_texts: Sequence[str], ys: Sequence[float]) -> str:
    """A curve's SVG ``points``: each step's x and the ``coordinate`` of its y."""
    return " ".join(f"{x},{coordinate(y)}" for x, y in zip(x_texts, ys, strict=True))


GUIDE_FROM, GUIDE_TO = coordinate(LEFT), coordinate(RIGHT)


@lru_cache(maxsize=16)
def _step_ticks(steps: int) -> tuple[Tick, ...]:
    """Ticks at the first, middle and last step (geometry, the same for every run of ``steps``).

    The last step label ends at the right edge of the plot, so it is never cut off."""
    x_texts = _step_axis(steps)[1]
    return tuple(
        Tick(x_texts[k], str(k), "end" if k == steps and k else "middle")
        for k in sorted({0, steps // 2, steps})
    )


def trajectory_chart(path: Trajectory, labels: tuple[str, str], description: str) -> LineChart:
    """w over the SGD steps under both schemes, with each scheme's fixed point as a guide
    labelled ``labels`` (global, rank mean)."""
    n = path.steps + 1
    values = (
        *path.w_global,
        *path.w_rank_mean,
        path.fixed_point_global,
        path.fixed_point_rank_mean,
    )
    low, high, step = nice_range(min(values), max(values))
    ys = [along(value, low, high, BOTTOM, TOP) for value in values]
    x_texts = _step_axis(path.steps)[1]
    points_global, points_rank_mean = _points(x_texts, ys[:n]), _points(x_texts, ys[n : 2 * n])
    lines = (
        Line(points_global, "global", "global item mean"),
        Line(points_rank_mean, "rank-mean", "plain rank mean"),
    )
    y_global, y_rank_mean = coordinate(ys[2 * n]), coordinate(ys[2 * n + 1])
    guides = (
        Line(f"{GUIDE_FROM},{y_global} {GUIDE_TO},{y_global}", "global", ""),
        Line(f"{GUIDE_FROM},{y_rank_mean} {GUIDE_TO},{y_rank_mean}", "rank-mean", ""),
    )
    guide_ys = ys[2 * n :]
    placed: list[Box] = []
    for text, guide_y in zip(labels, guide_ys, strict=True):
        placed.append(place_label(text, guide_y, ys[0], ys, path.steps, guide_ys, placed))
    guide_labels = tuple(
        GuideLabel(coordinate(box.x0), coordinate(box.baseline), text, kind)
        for box, text, kind in zip(placed, labels, ("global", "rank-mean"), strict=True)
    )
    return LineChart(
        "w over the SGD steps",
        description,
        FRAME,
        lines,
        guides,
        guide_labels,
        value_ticks([low + k * step for k in range(round((high - low) / step) + 1)], low, high),
        _step_ticks(path.steps),
    )


def _course(scheme: str, point: str, factor: float) -> tuple[str, str, str]:
    """One scheme's course as a verb, a clause and its guide's label: it ``heads to`` its fixed
    point (printed as ``point``) only when the step's factor has ``|factor| < 1``; else it
    oscillates around it or diverges from it."""
    clause = f"each step multiplies the distance to it by {fmt(factor)}"
    if abs(factor) < 1:
        return "heads to", clause, f"{scheme} → {point}"
    if abs(factor) == 1:
        verb, clause = "oscillates around", f"{clause}, so it never gets closer"
    else:
        verb, clause = "diverges from", f"{clause}, so it grows without bound"
    return verb, clause, f"{scheme}: {verb} {point}"


def trajectory_view(path: Trajectory) -> TrajectoryView:
    """The SGD paths' words and chart; the two schemes' fixed points, final ws and losses each
    print with the digits that tell them apart."""
    fixed = fmt_distinct((path.fixed_point_global, path.fixed_point_rank_mean))
    global_verb, global_clause, global_label = _course("global", fixed[0], path.contraction_global)
    rank_verb, rank_clause, rank_label = _course("rank mean", fixed[1], path.contraction_rank_mean)
    final_global, final_rank_mean = fmt_distinct((path.w_global[-1], path.w_rank_mean[-1]))
    loss_global, loss_rank_mean = fmt_distinct((path.loss_final_global, path.loss_final_rank_mean))
    start = fmt(path.w_global[0])
    steps = f"{path.steps} step" + ("" if path.steps == 1 else "s")
    description = (
        f"Line chart of w over {steps} from w = {start}: the global item mean"
        f" ends at {final_global} and {global_verb} {fixed[0]} ({global_clause}); the plain rank"
        f" mean ends at {final_rank_mean} and {rank_verb} {fixed[1]} ({rank_clause})."
    )
    return TrajectoryView(
        str(path.steps),
        start,
        fixed[0],
        fixed[1],
        global_verb,
        rank_verb,
        global_clause,
        rank_clause,
        final_global,
        final_rank_mean,
        loss_global,
        loss_rank_mean,
        trajectory_chart(path, (global_label, rank_label), description),
        tuple(map(minus_signs, path.warnings)),
    )
