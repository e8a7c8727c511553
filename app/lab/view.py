"""The lab's view-model: engine results as display strings, substituted formulas and chart geometry.

Templates only place these strings; every number on the lab is formatted here.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from app.engine import GradientResult, RingCost, Trajectory
from app.lab.state import GradientRequest, RingRequest
from app.lab.worked import Lines, column, figures, lines, path_words, ring_words, verdict
from app.numbers import fmt, minus_signs

SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
ITEMS_SHOWN = 12


def sub(r: int) -> str:
    """Subscript digits for a rank index: ``n₁``."""
    return str(r).translate(SUBSCRIPT)


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


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar; ``value`` is printed above it unless empty (paired bars get crowded)."""

    x: str
    cx: str
    y: str
    width: str
    height: str
    label: str
    value: str
    value_y: str
    kind: str


@dataclass(frozen=True, slots=True)
class Tick:
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
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    rank_labels: tuple[Tick, ...]
    legend: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Line:
    points: str
    kind: str
    label: str


@dataclass(frozen=True, slots=True)
class LineChart:
    title: str
    description: str
    frame: Frame
    lines: tuple[Line, ...]
    guides: tuple[Line, ...]
    guide_labels: tuple[Tick, ...]
    ticks: tuple[Tick, ...]
    step_ticks: tuple[Tick, ...]


@dataclass(frozen=True, slots=True)
class TrajectoryView:
    """The SGD paths' text: per scheme a verb (heads to, oscillates around, diverges from),
    its fixed point and a clause with the step's contraction factor."""

    steps: str
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


@dataclass(frozen=True, slots=True)
class LabView:
    """Everything the results fragment shows, as text."""

    mode: str
    N: str
    global_gradient: str
    rank_mean_gradient: str
    w_new: str
    w_new_rank_mean: str
    w_new_difference: str
    N_formula: str
    g_formula: str
    rank_mean_formula: str
    compensated_formula: str
    w_new_formula: str
    w_new_rank_mean_formula: str
    difference_formula: str
    agree: bool
    verdict: str
    ranks: tuple[RankRow, ...]
    warnings: tuple[str, ...]
    counts_chart: BarChart
    influence_chart: BarChart
    trajectory: TrajectoryView | None
    summary: str


def _item_list(values: Sequence[float]) -> str:
    shown = ", ".join(fmt(v) for v in values[:ITEMS_SHOWN])
    if len(values) > ITEMS_SHOWN:
        return f"{shown}, … ({len(values)} items)"
    return shown or "none"


def _rank_rows(
    result: GradientResult, state: GradientRequest, worked: Lines
) -> tuple[RankRow, ...]:
    rows = []
    counts = column(result.counts)
    means = column(result.means)
    factors = column(result.scale_factors, exact=True)
    compensated = column(result.compensated_means)
    influence_global = column(result.influence_global, exact=True)
    influence_rank_mean = column(result.influence_rank_mean, exact=True)
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


def lab_view(
    result: GradientResult, state: GradientRequest, path: Trajectory | None = None
) -> LabView:
    """The results fragment's view of one engine result (and, in the items form, a trajectory)."""
    shown = figures(result)
    worked = lines(result)
    return LabView(
        mode="items" if state.targets is not None else "means",
        N=shown.N,
        global_gradient=shown.global_gradient,
        rank_mean_gradient=shown.rank_mean_gradient,
        w_new=shown.w_new,
        w_new_rank_mean=shown.w_new_rank_mean,
        w_new_difference=shown.w_new_difference,
        N_formula=worked.N,
        g_formula=worked.g,
        rank_mean_formula=worked.rank_mean,
        compensated_formula=worked.compensated,
        w_new_formula=worked.w_new,
        w_new_rank_mean_formula=worked.w_new_rank_mean,
        difference_formula=worked.difference,
        agree=result.agreement.agree,
        verdict=verdict(result),
        ranks=_rank_rows(result, state, worked),
        warnings=tuple(minus_signs(text) for text in result.warnings),
        counts_chart=counts_chart(result),
        influence_chart=influence_chart(result),
        trajectory=trajectory_view(path) if path is not None else None,
        summary=(
            f"N {shown.N}: g {shown.global_gradient} against the rank mean"
            f" {shown.rank_mean_gradient}; w new {shown.w_new} against {shown.w_new_rank_mean}."
        ),
    )


# ---- chart geometry ----------------------------------------------------------------------------

WIDTH, HEIGHT = 360.0, 220.0
LEFT, RIGHT, TOP, BOTTOM = 44.0, 350.0, 24.0, 190.0
FRAME = Frame(
    view_box=f"0 0 {WIDTH:g} {HEIGHT:g}",
    left="44",
    right="350",
    bottom="190",
    tick_x="38",
    label_y="206",
    guide_x="50",
)


def _n(value: float) -> str:
    """A coordinate in the SVG viewBox: two decimals are finer than a pixel."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times 10ᵏ at or above ``value`` (1 when ``value`` ≤ 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power


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


def counts_chart(result: GradientResult) -> BarChart:
    """Bars of the valid-item count nᵣ per rank."""
    top = nice_ceiling(max(result.counts))
    band = (RIGHT - LEFT) / result.P
    shown = column(result.counts)
    bars = []
    for r, count in enumerate(result.counts):
        y = _y(count, 0.0, top)
        bars.append(
            Bar(
                x=_n(LEFT + band * (r + 0.2)),
                cx=_n(LEFT + band * (r + 0.5)),
                y=_n(y),
                width=_n(band * 0.6),
                height=_n(BOTTOM - y),
                label=f"rank {r}: n{sub(r)} = {shown[r]}",
                value=shown[r],
                value_y=_n(y - 4),
                kind="count",
            )
        )
    counts = ", ".join(f"rank {r} {shown[r]}" for r in range(result.P))
    return BarChart(
        title="Valid items per rank",
        description=f"Bar chart of the count nᵣ per rank: {counts}; N = {fmt(result.N)}.",
        frame=FRAME,
        bars=tuple(bars),
        ticks=_value_ticks(0.0, top),
        rank_labels=_rank_ticks(result.P),
        legend=(("count", "nᵣ valid items"),),
    )


def influence_chart(result: GradientResult) -> BarChart:
    """Paired bars per rank: one item's weight under the global mean (1/N) and the rank mean."""
    top = nice_ceiling(max((*result.influence_global, *result.influence_rank_mean)))
    band = (RIGHT - LEFT) / result.P
    shown = column((*result.influence_global, *result.influence_rank_mean), exact=True)
    bars = []
    for r in range(result.P):
        for offset, kind, value, name, text in (
            (0.12, "global", result.influence_global[r], "global mean 1/N", shown[r]),
            (
                0.5,
                "rank-mean",
                result.influence_rank_mean[r],
                "rank mean 1/(P·nᵣ)",
                shown[result.P + r],
            ),
        ):
            y = _y(value, 0.0, top)
            bars.append(
                Bar(
                    x=_n(LEFT + band * (r + offset)),
                    cx=_n(LEFT + band * (r + offset + 0.19)),
                    y=_n(y),
                    width=_n(band * 0.38),
                    height=_n(BOTTOM - y),
                    label=f"rank {r}, {name}: {text}",
                    value=text if result.P <= 3 else "",
                    value_y=_n(y - 4),
                    kind=kind,
                )
            )
    pairs = "; ".join(f"rank {r}: {shown[r]} vs {shown[result.P + r]}" for r in range(result.P))
    return BarChart(
        title="Weight of one item in the update",
        description=(
            "Paired bars per rank, the weight of one valid item under the global item mean (1/N)"
            f" and under the plain rank mean (1/(P·nᵣ)): {pairs}."
        ),
        frame=FRAME,
        bars=tuple(bars),
        ticks=_value_ticks(0.0, top),
        rank_labels=_rank_ticks(result.P),
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
    return tuple(
        Tick(at=_n(_y(low + k * step, low, high)), label=fmt(low + k * step, 4))
        for k in range(count + 1)
    )


def trajectory_chart(path: Trajectory) -> LineChart:
    """w over the SGD steps under both schemes, with each scheme's fixed point as a guide."""
    fixed = (path.fixed_point_global, path.fixed_point_rank_mean)
    values = (*path.w_global, *path.w_rank_mean, *fixed)
    low, high, step = nice_range(min(values), max(values))

    def points(ws: Sequence[float]) -> str:
        return " ".join(
            f"{_n(_x_step(k, path.steps))},{_n(_y(v, low, high))}" for k, v in enumerate(ws)
        )

    lines = (
        Line(points(path.w_global), "global", "global item mean"),
        Line(points(path.w_rank_mean), "rank-mean", "plain rank mean"),
    )
    guides = tuple(
        Line(f"{_n(LEFT)},{_n(_y(v, low, high))} {_n(RIGHT)},{_n(_y(v, low, high))}", kind, "")
        for v, kind in zip(fixed, ("global", "rank-mean"), strict=True)
    )
    # The fixed-point labels sit at the left end, where both curves are still at the start
    # value; two close fixed points get their labels pushed apart.
    y_global, y_rank = _y(fixed[0], low, high), _y(fixed[1], low, high)
    if abs(y_global - y_rank) < 12:
        nudge = 6 if y_global > y_rank else -6
        y_global, y_rank = y_global + nudge, y_rank - nudge
    words = path_words(path)
    guide_labels = (
        Tick(_n(y_global - 3), words.global_course.label, "global"),
        Tick(_n(y_rank - 3), words.rank_mean_course.label, "rank-mean"),
    )
    middle = path.steps // 2
    step_ticks = tuple(
        Tick(_n(_x_step(k, path.steps)), str(k)) for k in sorted({0, middle, path.steps})
    )
    return LineChart(
        title="w over the SGD steps",
        description=words.description,
        frame=FRAME,
        lines=lines,
        guides=guides,
        guide_labels=guide_labels,
        ticks=_range_ticks(low, high, step),
        step_ticks=step_ticks,
    )


def trajectory_view(path: Trajectory) -> TrajectoryView:
    words = path_words(path)
    return TrajectoryView(
        steps=str(path.steps),
        fixed_point_global=words.global_course.fixed_point,
        fixed_point_rank_mean=words.rank_mean_course.fixed_point,
        global_verb=words.global_course.verb,
        rank_mean_verb=words.rank_mean_course.verb,
        global_clause=words.global_course.clause,
        rank_mean_clause=words.rank_mean_course.clause,
        final_global=words.final_global,
        final_rank_mean=words.final_rank_mean,
        loss_final_global=words.loss_final_global,
        loss_final_rank_mean=words.loss_final_rank_mean,
        chart=trajectory_chart(path),
        warnings=tuple(minus_signs(text) for text in path.warnings),
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
