"""The lab's view-model: engine results as display strings, substituted formulas and chart geometry.

Templates only place these strings; every number on the lab is formatted here.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from app.engine import GradientResult, RingCost, Trajectory
from app.lab.state import GradientRequest, RingRequest

MINUS = "\u2212"
TIMES = "\N{MULTIPLICATION SIGN}"
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
ITEMS_SHOWN = 12


# A view formats the same few figures many times over (N, g and the counts sit in several
# formulas): about 80 calls for 27 values in the lesson's example.
@lru_cache(maxsize=4096, typed=True)
def fmt(value: float, digits: int = 6) -> str:
    """A number for reading: ``digits`` significant digits, a true minus sign, x10ⁿ exponents."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        power = str(int(exponent)).translate(SUPERSCRIPT)
        text = f"{mantissa}{TIMES}10{power}"
    return text.replace("-", MINUS)


def term(value: float) -> str:
    """A number as an operand: a negative value goes in parentheses after a times sign."""
    text = fmt(value)
    return f"({text})" if value < 0 else text


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
    steps: str
    fixed_point_global: str
    fixed_point_rank_mean: str
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
    ranks: tuple[RankRow, ...]
    warnings: tuple[str, ...]
    counts_chart: BarChart
    influence_chart: BarChart
    trajectory: TrajectoryView | None
    summary: str


def _sum_formula(values: Sequence[float]) -> str:
    return " + ".join(term(v) for v in values)


def _item_list(values: Sequence[float]) -> str:
    shown = ", ".join(fmt(v) for v in values[:ITEMS_SHOWN])
    if len(values) > ITEMS_SHOWN:
        return f"{shown}, … ({len(values)} items)"
    return shown or "none"


def _rank_rows(result: GradientResult, state: GradientRequest) -> tuple[RankRow, ...]:
    rows = []
    n_text = fmt(result.N)
    for r in range(result.P):
        count, mean = result.counts[r], result.means[r]
        factor = result.scale_factors[r]
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
                count=fmt(count),
                mean=fmt(mean) if count else "—",
                factor=fmt(factor),
                factor_formula=f"{result.P}{TIMES}{term(count)} / {n_text} = {fmt(factor)}",
                compensated=fmt(result.compensated_means[r]),
                compensated_formula=(
                    f"{term(factor)}{TIMES}{term(mean)} = {fmt(result.compensated_means[r])}"
                ),
                influence_global=fmt(result.influence_global[r]),
                influence_rank_mean=fmt(result.influence_rank_mean[r]),
                empty=count == 0,
                items=items,
                gradients=gradients,
            )
        )
    return tuple(rows)


def lab_view(
    result: GradientResult, state: GradientRequest, path: Trajectory | None = None
) -> LabView:
    """The results fragment's view of one engine result (and, in the items form, a trajectory)."""
    products = " + ".join(
        f"{term(n)}{TIMES}{term(m)}" for n, m in zip(result.counts, result.means, strict=True)
    )
    g, rank_mean = result.global_gradient, result.rank_mean_gradient
    eta, w = fmt(result.eta), fmt(result.w)
    return LabView(
        mode="items" if state.targets is not None else "means",
        N=fmt(result.N),
        global_gradient=fmt(g),
        rank_mean_gradient=fmt(rank_mean),
        w_new=fmt(result.w_new),
        w_new_rank_mean=fmt(result.w_new_rank_mean),
        w_new_difference=fmt(result.w_new_difference),
        N_formula=f"{_sum_formula(result.counts)} = {fmt(result.N)}",
        g_formula=f"({products}) / {fmt(result.N)} = {fmt(g)}",
        rank_mean_formula=f"({_sum_formula(result.means)}) / {result.P} = {fmt(rank_mean)}",
        compensated_formula=(f"({_sum_formula(result.compensated_means)}) / {result.P} = {fmt(g)}"),
        w_new_formula=f"{w} {MINUS} {eta}{TIMES}{term(g)} = {fmt(result.w_new)}",
        w_new_rank_mean_formula=(
            f"{w} {MINUS} {eta}{TIMES}{term(rank_mean)} = {fmt(result.w_new_rank_mean)}"
        ),
        difference_formula=(
            f"{fmt(result.w_new_rank_mean)} {MINUS} {term(result.w_new)}"
            f" = {fmt(result.w_new_difference)}"
        ),
        agree=math.isclose(g, rank_mean, rel_tol=1e-12, abs_tol=1e-12),
        ranks=_rank_rows(result, state),
        warnings=result.warnings,
        counts_chart=counts_chart(result),
        influence_chart=influence_chart(result),
        trajectory=trajectory_view(path) if path is not None else None,
        summary=(
            f"N {fmt(result.N)}: g {fmt(g)} against the rank mean {fmt(rank_mean)};"
            f" w new {fmt(result.w_new)} against {fmt(result.w_new_rank_mean)}."
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
                label=f"rank {r}: n{sub(r)} = {fmt(count)}",
                value=fmt(count, 4),
                value_y=_n(y - 4),
                kind="count",
            )
        )
    counts = ", ".join(f"rank {r} {fmt(c)}" for r, c in enumerate(result.counts))
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
    bars = []
    for r in range(result.P):
        for offset, kind, value, name in (
            (0.12, "global", result.influence_global[r], "global mean 1/N"),
            (0.5, "rank-mean", result.influence_rank_mean[r], "rank mean 1/(P·nᵣ)"),
        ):
            y = _y(value, 0.0, top)
            bars.append(
                Bar(
                    x=_n(LEFT + band * (r + offset)),
                    cx=_n(LEFT + band * (r + offset + 0.19)),
                    y=_n(y),
                    width=_n(band * 0.38),
                    height=_n(BOTTOM - y),
                    label=f"rank {r}, {name}: {fmt(value)}",
                    value=fmt(value, 3) if result.P <= 3 else "",
                    value_y=_n(y - 4),
                    kind=kind,
                )
            )
    pairs = "; ".join(
        f"rank {r}: {fmt(a)} vs {fmt(b)}"
        for r, (a, b) in enumerate(
            zip(result.influence_global, result.influence_rank_mean, strict=True)
        )
    )
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
    guide_labels = (
        Tick(_n(y_global - 3), f"global → {fmt(fixed[0])}", "global"),
        Tick(_n(y_rank - 3), f"rank mean → {fmt(fixed[1])}", "rank-mean"),
    )
    middle = path.steps // 2
    step_ticks = tuple(
        Tick(_n(_x_step(k, path.steps)), str(k)) for k in sorted({0, middle, path.steps})
    )
    return LineChart(
        title="w over the SGD steps",
        description=(
            f"Line chart of w over {plural(path.steps, 'step')} from w = {fmt(path.w_global[0])}:"
            f" the global item mean ends at {fmt(path.w_global[-1])} heading to"
            f" {fmt(fixed[0])}; the plain rank mean ends at {fmt(path.w_rank_mean[-1])} heading"
            f" to {fmt(fixed[1])}."
        ),
        frame=FRAME,
        lines=lines,
        guides=guides,
        guide_labels=guide_labels,
        ticks=_range_ticks(low, high, step),
        step_ticks=step_ticks,
    )


def trajectory_view(path: Trajectory) -> TrajectoryView:
    return TrajectoryView(
        steps=str(path.steps),
        fixed_point_global=fmt(path.fixed_point_global),
        fixed_point_rank_mean=fmt(path.fixed_point_rank_mean),
        final_global=fmt(path.w_global[-1]),
        final_rank_mean=fmt(path.w_rank_mean[-1]),
        loss_final_global=fmt(path.loss_global[-1]),
        loss_final_rank_mean=fmt(path.loss_rank_mean[-1]),
        chart=trajectory_chart(path),
        warnings=path.warnings,
    )


# ---- ring all-reduce ---------------------------------------------------------------------------


def fmt_seconds(seconds: float) -> str:
    """A duration with a readable unit: s, ms, µs or ns."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{fmt(seconds / scale, 4)} {unit}"
    return f"{fmt(seconds / 1e-9, 4)} ns"


@dataclass(frozen=True, slots=True)
class RingView:
    time: str
    time_formula: str
    count_time: str
    count_formula: str
    overhead: str


def ring_view(cost: RingCost, state: RingRequest) -> RingView:
    """The ring panel: ideal all-reduce time and the one scalar all-reduce that carries N."""
    p, alpha = state.ranks, f"{fmt(state.alpha_us)} µs"
    bandwidth = f"{fmt(state.bandwidth_gbps)} GB/s"
    return RingView(
        time=fmt_seconds(cost.time_s),
        time_formula=(
            f"2{TIMES}({p} {MINUS} 1){TIMES}({alpha} + {fmt(state.payload_mb)} MB"
            f" / ({p}{TIMES}{bandwidth})) = {fmt_seconds(cost.time_s)}"
        ),
        count_time=fmt_seconds(cost.count_reduce_time_s),
        count_formula=(
            f"2{TIMES}({p} {MINUS} 1){TIMES}({alpha} + 8 bytes / ({p}{TIMES}{bandwidth}))"
            f" = {fmt_seconds(cost.count_reduce_time_s)}"
        ),
        overhead=f"{fmt(cost.overhead_ratio * 100, 3)} %",
    )
