"""The lab's view-model: engine results as display strings, substituted formulas and chart geometry.

Templates only place these strings; every number on the lab is formatted here.
"""

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple, cast

from app.engine import GradientResult, RingCost, Trajectory
from app.lab.numbers import Printer, fmt, minus_signs
from app.lab.pictures import NumberLine, number_line
from app.lab.scale import nice_ceiling
from app.lab.state import MAX_RANKS, GradientRequest, RingRequest
from app.lab.worked import (
    Lines,
    PathWords,
    column,
    figures,
    lines,
    path_words,
    ring_words,
    verdict,
)

ITEMS_SHOWN = 12


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# ---- results -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RankRow:
    """One rank in the results table."""

    rank: int
    count: str
    mean: str
    factor: str
    factor_formula: str
    compensated: str
    compensated_formula: str
    influence_global: str
    influence_rank_mean: str
    empty: bool
    items: str
    gradients: str


# NamedTuples rather than frozen dataclasses: a request builds dozens of these small records,
# and a tuple is built in half the time.
class Bar(NamedTuple):
    """One bar's geometry in viewBox units (from x, y down to the axis)."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Series:
    """Bars of one kind, drawn as one SVG path (``d``): one element however many ranks."""

    kind: str
    bars: tuple[Bar, ...]
    path: str


class Label(NamedTuple):
    """A text at (x, y) in viewBox units."""

    x: str
    y: str
    text: str


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
    guide_x: str


@dataclass(frozen=True, slots=True)
class BarChart:
    """An inline SVG bar chart: geometry in viewBox units, text already formatted."""

    title: str
    description: str
    frame: Frame
    series: tuple[Series, ...]
    values: tuple[Label, ...]
    ticks: tuple[Tick, ...]
    rank_labels: tuple[Tick, ...]
    legend: tuple[tuple[str, str], ...]


# The SGD chart's records are named tuples too (see Bar): the results pane builds them on every
# slider step.
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


class LabView(NamedTuple):
    """The results pane, as text: what a drag refreshes on every input event (a named tuple,
    like the SGD chart's records: built on every drag). The pictures are :class:`LabCharts`."""

    mode: str
    N: str
    global_gradient: str
    rank_mean_gradient: str
    w_new: str
    w_new_rank_mean: str
    w_new_difference: str
    agree: bool
    verdict: str
    warnings: tuple[str, ...]
    summary: str


class LabCharts(NamedTuple):
    """The pictures below the figures: the rank means on a number line and the SGD paths.
    A drag refreshes them at most every few input events (templates/_lab_parts.html, charts)."""

    number_line: NumberLine
    trajectory: TrajectoryView | None


@dataclass(frozen=True, slots=True)
class LabDetails:
    """The details below the pane, as text: refreshed when the answers pause."""

    mode: str
    lines: Lines  # the written-out lines with the student's numbers
    ranks: tuple[RankRow, ...]
    counts_chart: BarChart
    influence_chart: BarChart


def _item_list(values: Sequence[float]) -> str:
    shown = ", ".join(fmt(v) for v in values[:ITEMS_SHOWN])
    if len(values) > ITEMS_SHOWN:
        return f"{shown}, … ({len(values)} items)"
    return shown or "none"


def _rank_rows(
    result: GradientResult, state: GradientRequest, worked: Lines, counts: tuple[str, ...]
) -> tuple[RankRow, ...]:
    rows = []
    means = column(result.means, printer=worked.printer)
    factors = column(result.scale_factors, exact=True, printer=worked.printer)
    compensated = column(result.compensated_means, printer=worked.printer)
    influence_global = column(result.influence_global, exact=True, printer=worked.printer)
    influence_rank_mean = column(result.influence_rank_mean, exact=True, printer=worked.printer)
    for r in range(result.P):
        items = gradients = ""
        if state.targets is not None:
            ys = state.targets[r]
            items = _item_list(ys)
            gradients = _item_list([result.w - y for y in ys])
            if state.weights is not None:
                items += f" (weights {_item_list(cast(list[float], state.weights[r]))})"
        rows.append(
            RankRow(
                rank=r,
                count=counts[r],
                mean=means[r] if result.counts[r] else "—",
                factor=factors[r],
                factor_formula=worked.factors[r],
                compensated=compensated[r],
                compensated_formula=worked.compensated_means[r],
                influence_global=influence_global[r],
                influence_rank_mean=influence_rank_mean[r],
                empty=result.counts[r] == 0,
                items=items,
                gradients=gradients,
            )
        )
    return tuple(rows)


def _mode(state: GradientRequest) -> str:
    return "items" if state.targets is not None else "means"


def lab_view(result: GradientResult, state: GradientRequest) -> LabView:
    """The results pane's view of one engine result."""
    printer = Printer()
    shown = figures(result, printer)
    return LabView(
        mode=_mode(state),
        N=shown.N,
        global_gradient=shown.global_gradient,
        rank_mean_gradient=shown.rank_mean_gradient,
        w_new=shown.w_new,
        w_new_rank_mean=shown.w_new_rank_mean,
        w_new_difference=shown.w_new_difference,
        agree=result.agreement.agree,
        verdict=verdict(result, printer),
        warnings=tuple(minus_signs(text) for text in result.warnings),
        summary=(
            f"N {shown.N}: g {shown.global_gradient} against the rank mean"
            f" {shown.rank_mean_gradient}; w new {shown.w_new} against {shown.w_new_rank_mean}."
        ),
    )


def lab_charts(result: GradientResult, path: Trajectory | None) -> LabCharts:
    """The pictures' view of one engine result and, when there is one, its SGD paths."""
    return LabCharts(number_line(result, fmt), trajectory_view(path) if path is not None else None)


def lab_details(result: GradientResult, state: GradientRequest) -> LabDetails:
    """The details' view of one engine result: written-out lines, per-rank table, bar charts."""
    worked = lines(result)
    counts = column(result.counts, printer=worked.printer)
    return LabDetails(
        mode=_mode(state),
        lines=worked,
        ranks=_rank_rows(result, state, worked, counts),
        counts_chart=counts_chart(result, counts),
        influence_chart=influence_chart(result),
    )


# ---- chart geometry ----------------------------------------------------------------------------

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
    guide_x="64",
)
# A label's width estimate in viewBox units per character of the 14-unit chart type.
CHAR_WIDTH = 8.0


def _n(value: float) -> str:
    """A coordinate in the SVG viewBox: two decimals are finer than a pixel."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _y(value: float, low: float, high: float) -> float:
    span = high - low or 1.0
    return BOTTOM - (value - low) / span * (BOTTOM - TOP)


def _value_ticks(low: float, high: float) -> tuple[Tick, ...]:
    return tuple(
        Tick(at=_n(_y(v, low, high)), label=fmt(v, 4)) for v in (low, (low + high) / 2, high)
    )


def _rank_ticks(ranks: int) -> tuple[Tick, ...]:
    band = (RIGHT - LEFT) / ranks
    return tuple(
        Tick(at=_n(LEFT + band * (r + 0.5)), label=f"rank {r}" if ranks <= 4 else f"r{r}")
        for r in range(ranks)
    )


def _fitting(text: str, room: float) -> str:
    """``text`` when it fits in ``room`` viewBox units beside its neighbour, else nothing."""
    return text if len(text) * CHAR_WIDTH <= room - 2 else ""


@dataclass(frozen=True, slots=True)
class Column:
    """One kind of bar at the same place in every rank's band: where each bar and its value go.

    A bar is drawn as ``{start[r]}{y}{end}``: from its top-left corner (y) down to the axis.
    ``room`` is the distance from a bar's value to its neighbour's: a wider value is left out.
    """

    offset: float
    width: float
    room: float
    xs: tuple[float, ...]
    starts: tuple[str, ...]
    end: str
    value_xs: tuple[str, ...]

    @classmethod
    def of(cls, ranks: int, offset: float, width: float, room: float) -> "Column":
        """Bars at ``offset`` into each rank's band, ``width`` of it wide, their values ``room``
        of it apart from their neighbours' (all fractions of the band)."""
        band = (RIGHT - LEFT) / ranks
        xs = tuple(LEFT + band * (r + offset) for r in range(ranks))
        return cls(
            offset=offset,
            width=band * width,
            room=band * room,
            xs=xs,
            starts=tuple(f"M{x:.1f} {BOTTOM:g}V" for x in xs),
            end=f"h{band * width:.1f}V{BOTTOM:g}z",
            value_xs=tuple(_n(x + band * width / 2) for x in xs),
        )

    def series(self, kind: str, values: Sequence[float], top: float) -> Series:
        """This column's bars for ``values`` on a value axis from 0 to ``top``, as one path."""
        ys = [_y(value, 0.0, top) for value in values]
        width = self.width
        bars = tuple([Bar(x, y, width, BOTTOM - y) for x, y in zip(self.xs, ys, strict=True)])
        path = "".join(
            f"{start}{y:.1f}{self.end}" for start, y in zip(self.starts, ys, strict=True)
        )
        return Series(kind, bars, path)

    def values(self, series: Series, texts: Sequence[str]) -> tuple[Label, ...]:
        """Each bar's value written just above it, where it fits beside its neighbour's."""
        return tuple(
            Label(x, _n(bar.y - 4), text)
            for x, bar, text in zip(self.value_xs, series.bars, texts, strict=True)
            if _fitting(text, self.room)
        )


@dataclass(frozen=True, slots=True)
class BarLayout:
    """Everything about a bar chart of P ranks that does not depend on the values."""

    counts: Column
    global_: Column
    rank_mean: Column
    rank_labels: tuple[Tick, ...]

    @classmethod
    def of(cls, ranks: int) -> "BarLayout":
        return cls(
            # A count's neighbour is a band away; the paired bars' values are 0.38 of one apart.
            counts=Column.of(ranks, 0.2, 0.6, room=1.0),
            global_=Column.of(ranks, 0.12, 0.38, room=0.38),
            rank_mean=Column.of(ranks, 0.5, 0.38, room=0.38),
            rank_labels=_rank_ticks(ranks),
        )


# Bar positions depend on P alone: laid out once for every P the state model accepts.
BAR_LAYOUTS = {ranks: BarLayout.of(ranks) for ranks in range(1, MAX_RANKS + 1)}


def counts_chart(result: GradientResult, shown: tuple[str, ...] | None = None) -> BarChart:
    """Bars of the valid-item count nᵣ per rank, each with its count above it where it fits.

    ``shown``: the counts as the table prints them (``column(result.counts)``), if at hand.
    """
    layout = BAR_LAYOUTS[result.P]
    top = nice_ceiling(max(result.counts))
    series = layout.counts.series("count", result.counts, top)
    if shown is None:
        shown = column(result.counts)
    listed = ", ".join(f"rank {r} {c}" for r, c in enumerate(shown))
    return BarChart(
        title="Valid items per rank",
        description=f"Bar chart of the count nᵣ per rank: {listed}; N = {fmt(result.N)}.",
        frame=FRAME,
        series=(series,),
        values=layout.counts.values(series, shown),
        ticks=_value_ticks(0.0, top),
        rank_labels=layout.rank_labels,
        legend=(("count", "nᵣ valid items"),),
    )


def influence_chart(result: GradientResult) -> BarChart:
    """Paired bars per rank: one item's weight under the global mean (1/N) and the rank mean.

    Their values are printed above the bars where they fit beside their neighbours'; the
    description lists them all.
    """
    layout = BAR_LAYOUTS[result.P]
    top = nice_ceiling(max(*result.influence_global, *result.influence_rank_mean))
    series = (
        layout.global_.series("global", result.influence_global, top),
        layout.rank_mean.series("rank-mean", result.influence_rank_mean, top),
    )
    # One formatting for all of them (app.lab.worked.column), the P global ones first.
    shown = column((*result.influence_global, *result.influence_rank_mean), exact=True)
    values = layout.global_.values(series[0], shown[: result.P]) + layout.rank_mean.values(
        series[1], shown[result.P :]
    )
    described = "; ".join(f"rank {r}: {shown[r]} vs {shown[result.P + r]}" for r in range(result.P))
    return BarChart(
        title="Weight of one item in the update",
        description=(
            "Paired bars per rank, the weight of one valid item under the global item mean (1/N)"
            f" and under the plain rank mean (1/(P·nᵣ)): {described}."
        ),
        frame=FRAME,
        series=series,
        values=values,
        ticks=_value_ticks(0.0, top),
        rank_labels=layout.rank_labels,
        legend=(("global", "global mean, 1/N"), ("rank-mean", "rank mean, 1/(P·nᵣ)")),
    )


def _x_step(step: int, steps: int) -> float:
    return LEFT + step / max(steps, 1) * (RIGHT - LEFT)


def nice_range(low: float, high: float) -> tuple[float, float, float]:
    """Bounds widened to whole multiples of a round step (about four steps) and that step."""
    if high - low < 1e-9 * max(1.0, abs(high)):
        low, high = low - 1.0, high + 1.0
    step = nice_ceiling((high - low) / 4)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


def _range_ticks(low: float, high: float, step: float) -> tuple[Tick, ...]:
    count = round((high - low) / step)
    span = high - low or 1.0  # as _y
    ticks = []
    for k in range(count + 1):
        value = low + k * step
        at = f"{BOTTOM - (value - low) / span * (BOTTOM - TOP):.2f}".rstrip("0").rstrip(".")  # _n
        ticks.append(Tick(at, fmt(value, 4)))
    return tuple(ticks)


class Box(NamedTuple):
    """A label's box in viewBox units: left and right, text baseline, top and bottom (a named
    tuple, as the chart's other records: two are built on every slider step)."""

    x0: float
    x1: float
    baseline: float

    @property
    def top(self) -> float:
        return self.baseline - 11  # the 14-unit type's ascent

    @property
    def bottom(self) -> float:
        return self.baseline + 3

    def holds(self, x: float, y: float) -> bool:
        return self.x0 - 2 <= x <= self.x1 + 2 and self.top - 2 <= y <= self.bottom + 2

    def meets(self, other: "Box") -> bool:
        return not (
            self.x1 < other.x0
            or other.x1 < self.x0
            or self.bottom < other.top
            or other.bottom < self.top
        )


# A curve is tested at its start and, along each segment, at points evenly spaced no further
# apart (in x) than this, the last at (about) the segment's end: for t = 1 … parts,
# (xa + (xb - xa) * t / parts, ya + (yb - ya) * t / parts), parts = max(1, ⌈(xb - xa) / 3⌉).
SPACING = 3.0
# A tested point lies between its segment's ends but for rounding: far below this for ys in
# viewBox units (a few hundred at most: three roundings of about 1e-14 each).
ROUNDING = 1e-9


class Probes(NamedTuple):
    """The tested points of a curve of a run of ``steps`` steps (the same xs for both curves):
    their xs, left to right; for each, its segment ``k`` (from step k to k + 1; -1 for the
    curve's start); and per segment the index of its first tested point and how many it has
    (``parts``: its t = 1 … parts)."""

    x: list[float]
    segment: list[int]
    first: list[int]
    parts: list[int]


@lru_cache(maxsize=16)
def _probes(steps: int) -> Probes:
    """Geometry, not a result: the same for every run of ``steps`` steps."""
    xs = _step_axis(steps)[0]
    x, segment, first, parts = [xs[0]], [-1], [], []
    for k in range(steps):
        xa, xb = xs[k], xs[k + 1]
        count = max(1, math.ceil((xb - xa) / SPACING))
        first.append(len(x))
        parts.append(count)
        for step in range(1, count + 1):
            x.append(xa + (xb - xa) * step / count)
            segment.append(k)
    # Sorted, so the points between two xs are a slice (bisect).
    assert all(left < right for left, right in pairwise(x))
    return Probes(x, segment, first, parts)


def curve_meets(
    ys: Sequence[float], steps: int, x_range: tuple[float, float], y_range: tuple[float, float]
) -> bool:
    """Whether a tested point of either curve lies in ``x_range`` by ``y_range`` (bounds
    included). ``ys``: both curves' ys at each step, one curve after the other (then
    anything). A segment whose ends are both beyond the y range by more than rounding holds
    none; the others' points are worked out, ``ya + (yb - ya) * t / parts`` as floats."""
    probes = _probes(steps)
    x = probes.x
    begin, end = bisect_left(x, x_range[0]), bisect_right(x, x_range[1])
    if begin >= end:
        return False
    low, high = y_range
    below, above = low - ROUNDING, high + ROUNDING
    first_k, last_k = max(probes.segment[begin], 0), probes.segment[end - 1]
    n = steps + 1
    for start in (0, n):
        # Both ends of every segment in range (or the start alone).
        ends = ys[start + first_k : start + last_k + 2]
        if max(ends) < below or min(ends) > above:
            continue
        if begin == 0 and low <= ys[start] <= high:
            return True
        for k in range(first_k, last_k + 1):
            ya, yb = ys[start + k], ys[start + k + 1]
            if (ya if ya > yb else yb) < below or (yb if ya > yb else ya) > above:
                continue
            first, parts = probes.first[k], probes.parts[k]
            rise = yb - ya
            for index in range(max(begin, first), min(end, first + parts)):
                if low <= rise * (index - first + 1) / parts + ya <= high:
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
    ``steps`` steps (as ``curve_meets``); a curve is clear of a box when ``box.holds`` none of
    its tested points."""
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
            if not curve_meets(ys, steps, (x0 - 2, x1 + 2), (top - 2, bottom + 2)):  # Box.holds
                return Box(x0, x1, baseline)
    baseline, row = rows[0]
    return Box(row[0], row[0] + width, baseline)


@lru_cache(maxsize=16)
def _step_axis(steps: int) -> tuple[tuple[float, ...], tuple[str, ...], str]:
    """Each step's x and its text, and both curves' ``points`` with ``%.2f`` for each step's y
    and a space after it, the curves apart by a line break: the same for every run of
    ``steps`` steps (geometry, not a result)."""
    xs = tuple(_x_step(k, steps) for k in range(steps + 1))
    texts = tuple(_n(x) for x in xs)
    curve = "".join(f"{x},%.2f " for x in texts)
    return xs, texts, f"{curve}\n{curve}"


# Each y is formatted: all of a chart's in one call is quicker in the running app than reading
# texts from a table of every hundredth (some 17,600 strings, out of the processor's caches again
# by the next request).


def _points(template: str, ys: list[float]) -> list[str]:
    """Both curves' ``points`` (each step's x and ``_n`` of its y) from ``_step_axis``'s
    ``%.2f`` template and both curves' ys: one formatting call, then _n's zeros dropped. Only
    a y's text is followed by a space, so "0 " is its last decimal 0: drop it, and then a
    "." left bare ("12.00" → "12.0" → "12"; "12.50" → "12.5"; "100.00" → "100")."""
    text = (template % tuple(ys)).replace("0 ", " ").replace(".0 ", " ")
    return text[:-1].split(" \n")


GUIDE_FROM, GUIDE_TO = _n(LEFT), _n(RIGHT)


@lru_cache(maxsize=16)
def _step_ticks(steps: int) -> tuple[Tick, ...]:
    """Ticks at the first, middle and last step (geometry, the same for every run of ``steps``).

    The last step label ends at the right edge of the plot, so it is never cut off."""
    x_texts = _step_axis(steps)[1]
    return tuple(
        Tick(x_texts[k], str(k), "end" if k == steps and k else "middle")
        for k in sorted({0, steps // 2, steps})
    )


def trajectory_chart(path: Trajectory, words: PathWords | None = None) -> LineChart:
    """w over the SGD steps under both schemes, with each scheme's fixed point as a guide."""
    words = words or path_words(path)
    n = path.steps + 1
    values = (
        *path.w_global,
        *path.w_rank_mean,
        path.fixed_point_global,
        path.fixed_point_rank_mean,
    )
    low, high, step = nice_range(min(values), max(values))
    span = high - low or 1.0
    height = BOTTOM - TOP
    ys = [BOTTOM - (value - low) / span * height for value in values]  # _y of each value
    points_global, points_rank_mean = _points(_step_axis(path.steps)[2], ys[: 2 * n])
    lines = (
        Line(points_global, "global", "global item mean"),
        Line(points_rank_mean, "rank-mean", "plain rank mean"),
    )
    y_global, y_rank_mean = _n(ys[2 * n]), _n(ys[2 * n + 1])
    guides = (
        Line(f"{GUIDE_FROM},{y_global} {GUIDE_TO},{y_global}", "global", ""),
        Line(f"{GUIDE_FROM},{y_rank_mean} {GUIDE_TO},{y_rank_mean}", "rank-mean", ""),
    )
    labels = (words.global_course.label, words.rank_mean_course.label)
    guide_ys = ys[2 * n :]
    placed: list[Box] = []
    for text, guide_y in zip(labels, guide_ys, strict=True):
        placed.append(place_label(text, guide_y, ys[0], ys, path.steps, guide_ys, placed))
    box_global, box_rank_mean = placed
    # Positional: the fields in LineChart's order (a little quicker than by keyword).
    return LineChart(
        "w over the SGD steps",
        words.description,
        FRAME,
        lines,
        guides,
        (
            GuideLabel(_n(box_global.x0), _n(box_global.baseline), labels[0], "global"),
            GuideLabel(_n(box_rank_mean.x0), _n(box_rank_mean.baseline), labels[1], "rank-mean"),
        ),
        _range_ticks(low, high, step),
        _step_ticks(path.steps),
    )


def trajectory_view(path: Trajectory) -> TrajectoryView:
    words = path_words(path)
    global_course, rank_mean_course = words.global_course, words.rank_mean_course
    # Positional: the fields in TrajectoryView's order (a little quicker than by keyword).
    return TrajectoryView(
        str(path.steps),
        words.start,
        global_course.fixed_point,
        rank_mean_course.fixed_point,
        global_course.verb,
        rank_mean_course.verb,
        global_course.clause,
        rank_mean_course.clause,
        words.final_global,
        words.final_rank_mean,
        words.loss_final_global,
        words.loss_final_rank_mean,
        trajectory_chart(path, words),
        tuple(map(minus_signs, path.warnings)),
    )


# ---- ring all-reduce ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RingView:
    time: str
    time_formula: str
    count_time: str
    count_formula: str
    overhead: str
    note: str


def ring_view(cost: RingCost, state: RingRequest) -> RingView:
    """The ring panel: ideal all-reduce time and the one scalar all-reduce that carries N."""
    words = ring_words(cost, state.payload_mb, state.alpha_us, state.bandwidth_gbps)
    return RingView(
        time=words.time,
        time_formula=words.time_formula,
        count_time=words.count_time,
        count_formula=words.count_formula,
        overhead=words.overhead,
        note=words.note,
    )
