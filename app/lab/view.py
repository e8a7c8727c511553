"""The lab's view model: engine results as display strings and substituted formulas.

Templates only place these strings; every number on the lab is formatted here or in the chart
modules it calls (``bar_charts``, ``path_chart``, ``pictures``).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from app.engine import GradientResult, RingCost, Trajectory
from app.lab.bar_charts import BarChart, counts_chart, influence_chart
from app.lab.numbers import Printer, fmt, minus_signs
from app.lab.path_chart import TrajectoryView, trajectory_view
from app.lab.pictures import NumberLine, number_line
from app.lab.sentences import lab_verdict
from app.lab.state import GradientRequest, RingRequest
from app.lab.worked import (
    Lines,
    RingWords,
    column,
    figures,
    lines,
    ring_words,
)

ITEMS_SHOWN = 12

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


class LabView(NamedTuple):
    """The results pane, as text: what a drag refreshes on every input event."""

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
    """The pictures below the figures: the rank means on a number line and the SGD paths (block
    lab_charts of templates/_lab.html, refreshed every few input events of a drag)."""

    number_line: NumberLine
    trajectory: TrajectoryView


@dataclass(frozen=True, slots=True)
class LabDetails:
    """The details below the pane, as text: refreshed when the answers pause."""

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


def lab_view(result: GradientResult) -> LabView:
    """The results pane's view of one engine result."""
    printer = Printer()
    shown = figures(result, printer)
    return LabView(
        **shown._asdict(),
        agree=result.agreement.agree,
        verdict=lab_verdict(result.agreement, printer),
        warnings=tuple(minus_signs(text) for text in result.warnings),
        summary=(
            f"N {shown.N}: g {shown.global_gradient} against the rank mean"
            f" {shown.rank_mean_gradient}; w new {shown.w_new} against {shown.w_new_rank_mean}."
        ),
    )


def lab_charts(result: GradientResult, path: Trajectory) -> LabCharts:
    """The pictures' view of one engine result and its SGD paths."""
    return LabCharts(number_line(result), trajectory_view(path))


def lab_details(result: GradientResult, state: GradientRequest) -> LabDetails:
    """The details' view of one engine result: written-out lines, per-rank table, bar charts."""
    worked = lines(result)
    counts = column(result.counts, printer=worked.printer)
    return LabDetails(
        lines=worked,
        ranks=_rank_rows(result, state, worked, counts),
        counts_chart=counts_chart(result, counts),
        influence_chart=influence_chart(result),
    )


# ---- ring all-reduce ---------------------------------------------------------------------------


def ring_view(cost: RingCost, state: RingRequest) -> RingWords:
    """The ring panel: ideal all-reduce time and the one scalar all-reduce that carries N."""
    return ring_words(cost, state.payload_mb, state.alpha_us, state.bandwidth_gbps)
