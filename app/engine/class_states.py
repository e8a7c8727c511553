"""A class's lab states as one picture: where the students' ``w_new`` sits under each reduction.

Each student's state is one update the engine has reduced (a :class:`GradientResult`). The class
picture counts the states, those whose ranks hold unequal valid counts (where the plain rank
mean misses ``g``), and bins every state's two new weights on one shared axis:

    w_new           = w - η g,               g = (1/N) Σᵣ nᵣ ḡᵣ   (the global item mean)
    w_new_rank_mean = w - η (1/P) Σᵣ ḡᵣ                          (DDP's default, the rank mean)

Binning is exact: each new weight is the engine's exact ratio (``GradientResult.exact``), the
axis runs from the smallest to the largest of both rules' values in ``BINS`` equal bins (the
last one closed), so a value on an edge falls in the bin it starts. Pure Python, no web.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from app.engine.results import GradientResult

BINS = 8


@dataclass(frozen=True, slots=True)
class ClassStates:
    """The class's states: how many, how many with unequal counts, and the two distributions.

    ``edges`` has ``len(global_counts) + 1`` entries (exact); bin ``k`` holds the values ``v``
    with ``edges[k] ≤ v < edges[k + 1]``, the last bin also its upper edge. With one distinct
    value there is one bin, of width 0. ``medians``: the lower median of each rule's values.
    """

    states: int
    unequal: int
    edges: tuple[Fraction, ...]
    global_counts: tuple[int, ...]
    rank_mean_counts: tuple[int, ...]
    median_global: Fraction | None
    median_rank_mean: Fraction | None


def _exact(ratio: tuple[int, int]) -> Fraction:
    return Fraction(*ratio)


def unequal_counts(result: GradientResult) -> bool:
    """Whether the ranks' valid counts nᵣ are not all equal (empty ranks included)."""
    return len(set(result.counts)) > 1


def _bin_counts(values: Sequence[Fraction], low: Fraction, width: Fraction, bins: int) -> list[int]:
    counts = [0] * bins
    for value in values:
        index = bins - 1 if width == 0 else min(bins - 1, int((value - low) * bins // width))
        counts[index] += 1
    return counts


def _lower_median(values: Sequence[Fraction]) -> Fraction | None:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2] if ordered else None


def class_states(results: Sequence[GradientResult], bins: int = BINS) -> ClassStates:
    """The class picture of ``results``, one per student with a state (any order).

    Returns the count of states, of states with unequal counts, the shared exact bin edges from
    the smallest to the largest new weight under either rule (``bins`` equal bins; one bin when
    every value is the same; none without states) and each rule's count per bin.
    """
    if bins < 1:
        raise ValueError("bins must be at least 1")
    by_g = [_exact(result.exact.w_new) for result in results]
    by_rank_mean = [_exact(result.exact.w_new_rank_mean) for result in results]
    everything = by_g + by_rank_mean
    if not everything:
        return ClassStates(0, 0, (), (), (), None, None)
    low, high = min(everything), max(everything)
    used = 1 if low == high else bins
    width = high - low
    edges = tuple(low + width * k / used for k in range(used + 1))
    return ClassStates(
        states=len(results),
        unequal=sum(1 for result in results if unequal_counts(result)),
        edges=edges,
        global_counts=tuple(_bin_counts(by_g, low, width, used)),
        rank_mean_counts=tuple(_bin_counts(by_rank_mean, low, width, used)),
        median_global=_lower_median(by_g),
        median_rank_mean=_lower_median(by_rank_mean),
    )
