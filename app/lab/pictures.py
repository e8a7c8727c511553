"""Pictures of the lesson for the lab: the rank means on a number line, and the SGD path that
the counts-and-means form implies under the lesson's loss.

Geometry is in SVG viewBox units and every label is already text; templates only place them.
"""

import math
from typing import NamedTuple

from app.engine import GradientResult, Trajectory, trajectory
from app.engine.decimals import decimal_ratio
from app.lab.axes import CHAR_WIDTH, along, coordinate, nice_ceiling, widened
from app.lab.numbers import fmt
from app.lab.query import DEFAULT_STEPS
from app.lab.state import GradientRequest

LINE_WIDTH, LINE_HEIGHT = 360.0, 150.0
LINE_LEFT, LINE_RIGHT = 24.0, 336.0
AXIS_Y = 78.0
# The largest dot's radius; a dot's area is proportional to its rank's count.
DOT_RADIUS = 20.0


class Dot(NamedTuple):
    """One rank on the number line: centre, radius, its label and what it says."""

    cx: str
    r: str
    label: str
    label_y: str
    title: str
    empty: bool


class Marker(NamedTuple):
    """A vertical mark (g or the plain rank mean) with its label, kept inside the frame."""

    x: str
    label: str
    label_x: str
    label_y: str
    anchor: str
    kind: str


class NumberLine(NamedTuple):
    """The rank means on one axis; dot area = count; g and the plain rank mean marked."""

    title: str
    description: str
    view_box: str
    left: str
    right: str
    axis_y: str
    dots: tuple[Dot, ...]
    markers: tuple[Marker, ...]
    ticks: tuple[tuple[str, str], ...]
    tick_y: str


def _label_x(x: float, text: str) -> tuple[float, str]:
    """Where a label centred on ``x`` goes, and its anchor, so it stays inside the frame."""
    half = len(text) * CHAR_WIDTH / 2
    if x - half < 2:
        return 2.0, "start"
    if x + half > LINE_WIDTH - 2:
        return LINE_WIDTH - 2, "end"
    return x, "middle"


# The number line's fixed text: its frame, the dots' label baseline and the ticks' baseline.
VIEW_BOX = f"0 0 {LINE_WIDTH:g} {LINE_HEIGHT:g}"
DOT_LABEL_Y = f"{AXIS_Y + 5:g}"
TICK_Y = f"{AXIS_Y + DOT_RADIUS + 18:g}"
RANK_MEAN_LABEL_Y = f"{LINE_HEIGHT - 6:g}"
LEFT, RIGHT, AXIS = coordinate(LINE_LEFT), coordinate(LINE_RIGHT), coordinate(AXIS_Y)


def number_line(result: GradientResult) -> NumberLine:
    """Each rank's local mean ḡᵣ as a dot of area ∝ nᵣ, with g and the plain rank mean marked.

    An empty rank is drawn as a ring at 0, the value the plain rank mean counts for it.
    """
    counts = result.counts
    shown = [m if n > 0 else 0.0 for n, m in zip(counts, result.means, strict=True)]
    g, rank_mean = result.global_gradient, result.rank_mean_gradient
    low, high = widened(min(*shown, g, rank_mean), max(*shown, g, rank_mean))
    pad = (high - low) * 0.08
    low, high = low - pad, high + pad
    biggest = max(counts) or 1.0
    dots = []
    for r, (count, mean) in enumerate(zip(counts, shown, strict=True)):
        if count > 0:
            radius = DOT_RADIUS * math.sqrt(count / biggest)
            title = f"rank {r}: local mean {fmt(mean)}, count {fmt(count)}"
        else:
            radius = 5.0
            title = f"rank {r}: empty, counted as 0 by the plain rank mean"
        at = along(mean, low, high, LINE_LEFT, LINE_RIGHT)
        dots.append(Dot(coordinate(at), coordinate(radius), str(r), DOT_LABEL_Y, title, count <= 0))
    shown_g, shown_rank_mean = fmt(g), fmt(rank_mean)
    markers = []
    for value, text, kind, label_y in (
        (g, f"g {shown_g}", "global", "18"),
        (rank_mean, f"rank mean {shown_rank_mean}", "rank-mean", RANK_MEAN_LABEL_Y),
    ):
        at = along(value, low, high, LINE_LEFT, LINE_RIGHT)
        label_x, anchor = _label_x(at, text)
        markers.append(Marker(coordinate(at), text, coordinate(label_x), label_y, anchor, kind))
    # Round values along the axis (about four steps), never the padded ends themselves.
    step = nice_ceiling((high - low) / 4)
    ticks = []
    for k in range(math.ceil(low / step), math.floor(high / step) + 1):
        value = k * step
        ticks.append((coordinate(along(value, low, high, LINE_LEFT, LINE_RIGHT)), fmt(value, 4)))
    dots_text = "; ".join([d.title for d in dots])
    return NumberLine(
        "The rank means on a number line",
        f"Each rank's local mean as a dot whose area is its count: {dots_text}."
        f" The global item mean g is {shown_g}; the plain rank mean is {shown_rank_mean}.",
        VIEW_BOX,
        LEFT,
        RIGHT,
        AXIS,
        tuple(dots),
        tuple(markers),
        tuple(ticks),
        TICK_Y,
    )


def implied_path(state: GradientRequest, steps: int = DEFAULT_STEPS) -> Trajectory:
    """SGD under both schemes for the mean targets the counts-and-means state implies.

    With the lesson's loss ``½(w - y)²`` a rank's mean gradient at w is ``w - ȳᵣ``, so a local
    mean ``ḡᵣ`` at the state's ``w`` means a mean target ``ȳᵣ = w - ḡᵣ``; each rank is one
    target weighted by its count (a count of 0 is an empty rank).
    """
    counts, means = state.counts or [], state.means or []
    w = state.w
    # w - ḡᵣ as written, rounded once (3.7 is 37/10), as the engine's means are:
    # the targets' fixed points are then w - g and w - the rank mean exactly.
    w_top, w_bottom = decimal_ratio(w)
    targets = [
        (w_top * bottom - top * w_bottom) / (w_bottom * bottom)
        for top, bottom in map(decimal_ratio, means)
    ]
    return trajectory(
        [[y] for y in targets], [[n] for n in counts], eta=state.eta, w=w, steps=steps
    )
