"""The lab's bar charts: valid items per rank, and the weight of one item under each scheme.

Each series of bars is one SVG path, however many ranks; the bars' positions depend on P alone
and are laid out once for every P the state model accepts.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from app.engine import GradientResult
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
    nice_ceiling,
    value_ticks,
)
from app.lab.numbers import fmt
from app.lab.state import MAX_RANKS
from app.lab.worked import column


@dataclass(frozen=True, slots=True)
class Series:
    """Bars of one kind, drawn as one SVG path (``d``): one element however many ranks."""

    kind: str
    path: str


# A named tuple rather than a frozen dataclass: a request builds dozens of these small records.
class Label(NamedTuple):
    """A text at (x, y) in viewBox units."""

    x: str
    y: str
    text: str


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


def _rank_ticks(ranks: int) -> tuple[Tick, ...]:
    band = (RIGHT - LEFT) / ranks
    return tuple(
        Tick(at=coordinate(LEFT + band * (r + 0.5)), label=f"rank {r}" if ranks <= 4 else f"r{r}")
        for r in range(ranks)
    )


@dataclass(frozen=True, slots=True)
class Column:
    """One kind of bar at the same place in every rank's band: where each bar and its value go.

    A bar is drawn as ``{start[r]}{y}{end}``: from its top-left corner (y) down to the axis.
    ``room`` is the distance from a bar's value to its neighbour's: a wider value is left out.
    """

    room: float
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
            room=band * room,
            starts=tuple(f"M{x:.1f} {BOTTOM:g}V" for x in xs),
            end=f"h{band * width:.1f}V{BOTTOM:g}z",
            value_xs=tuple(coordinate(x + band * width / 2) for x in xs),
        )

    def draw(
        self, kind: str, values: Sequence[float], texts: Sequence[str], top: float
    ) -> tuple[Series, tuple[Label, ...]]:
        """This column's bars for ``values`` on a value axis from 0 to ``top``, as one path, and
        each bar's value (``texts``) just above it where it fits beside its neighbour's."""
        ys = [along(value, 0.0, top, BOTTOM, TOP) for value in values]
        path = "".join(
            f"{start}{y:.1f}{self.end}" for start, y in zip(self.starts, ys, strict=True)
        )
        labels = tuple(
            Label(x, coordinate(y - 4), text)
            for x, y, text in zip(self.value_xs, ys, texts, strict=True)
            if len(text) * CHAR_WIDTH <= self.room - 2
        )
        return Series(kind, path), labels


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
    if shown is None:
        shown = column(result.counts)
    series, values = layout.counts.draw("count", result.counts, shown, top)
    listed = ", ".join(f"rank {r} {c}" for r, c in enumerate(shown))
    return BarChart(
        title="Valid items per rank",
        description=f"Bar chart of the count nᵣ per rank: {listed}; N = {fmt(result.N)}.",
        frame=FRAME,
        series=(series,),
        values=values,
        ticks=value_ticks((0.0, top / 2, top), 0.0, top),
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
    # One formatting for all of them (app.lab.worked.column), the P global ones first.
    shown = column((*result.influence_global, *result.influence_rank_mean), exact=True)
    global_, global_values = layout.global_.draw(
        "global", result.influence_global, shown[: result.P], top
    )
    rank_mean, rank_mean_values = layout.rank_mean.draw(
        "rank-mean", result.influence_rank_mean, shown[result.P :], top
    )
    described = "; ".join(f"rank {r}: {shown[r]} vs {shown[result.P + r]}" for r in range(result.P))
    return BarChart(
        title="Weight of one item in the update",
        description=(
            "Paired bars per rank, the weight of one valid item under the global item mean (1/N)"
            f" and under the plain rank mean (1/(P·nᵣ)): {described}."
        ),
        frame=FRAME,
        series=(global_, rank_mean),
        values=global_values + rank_mean_values,
        ticks=value_ticks((0.0, top / 2, top), 0.0, top),
        rank_labels=layout.rank_labels,
        legend=(("global", "global mean, 1/N"), ("rank-mean", "rank mean, 1/(P·nᵣ)")),
    )
