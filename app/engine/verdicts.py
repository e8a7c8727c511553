"""Whether two weightings of the same local means agree, and why, decided in exact arithmetic.

Both reductions of the lesson are weighted means of local means ``ḡᵢ`` with weights that sum
to 1: the count-weighted one gives entry i the weight ``nᵢ/N``; the plain one a fixed weight
``cᵢ`` (``1/P`` for the rank mean, ``1/(P·M_r)`` for the naive average of microbatch means).
An entry with count 0 has no mean: both count it as ``ḡᵢ = 0``. Their difference

    plain - counted = Σᵢ (cᵢ - nᵢ/N)·ḡᵢ

is computed here from the floats' exact rational values (``fractions.Fraction``), so when the
two are the same computation it is exactly 0, and the condition that makes them agree is named.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

# Why the two weightings agree (the first that holds, in this order) or why they differ.
Reason = Literal[
    "one entry",  # a single rank (or a single microbatch): both means are its mean
    "proportional counts",  # nᵢ/N = cᵢ for every entry: equal counts across ranks
    "equal means",  # every entry has items and the same mean
    "zero means",  # some entries are empty, and every non-empty entry's mean is 0
    "coincidence",  # none of the above, yet the two sums are equal
    "unequal counts",  # they differ: the counts are not in proportion to cᵢ
    "empty entries",  # they differ only because the empty entries count as 0
]
AGREEING: tuple[Reason, ...] = (
    "one entry",
    "proportional counts",
    "equal means",
    "zero means",
    "coincidence",
)


@dataclass(frozen=True, slots=True)
class Exact:
    """The two weighted means as exact fractions, with the inputs they came from."""

    counts: tuple[Fraction, ...]
    means: tuple[Fraction, ...]
    plain_weights: tuple[Fraction, ...]
    total: Fraction
    counted: Fraction
    plain: Fraction

    @property
    def difference(self) -> Fraction:
        """``plain - counted``, exactly."""
        return self.plain - self.counted


@dataclass(frozen=True, slots=True)
class Agreement:
    """The verdict on one comparison; ``difference`` is ``plain - counted`` rounded once.

    ``plain`` and ``counted`` are the two means exactly: they may differ by less than the
    floats they round to can show.
    """

    agree: bool
    reason: Reason
    difference: float
    empty: tuple[int, ...]
    plain: Fraction
    counted: Fraction


def exact_means(
    counts: Sequence[float], means: Sequence[float], plain_weights: Sequence[Fraction]
) -> Exact:
    """Both weighted means of ``means`` exactly; an entry with count 0 has mean 0.

    ``counts`` are non-negative with a positive sum; ``plain_weights`` sum to 1.
    """
    n = tuple(Fraction(x) for x in counts)
    m = tuple(Fraction(y) if x else Fraction(0) for x, y in zip(n, means, strict=True))
    c = tuple(plain_weights)
    total = sum(n, Fraction(0))
    counted = sum((x * y for x, y in zip(n, m, strict=True)), Fraction(0)) / total
    plain = sum((x * y for x, y in zip(c, m, strict=True)), Fraction(0))
    return Exact(n, m, c, total, counted, plain)


def rounded(value: Fraction) -> float:
    """The nearest float; beyond the float range ±inf (the caller's finiteness check refuses it)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def rank_weights(ranks: int) -> tuple[Fraction, ...]:
    """The plain rank mean's weights: ``1/P`` each."""
    return (Fraction(1, ranks),) * ranks


def decide(exact: Exact) -> Agreement:
    """Name the first condition that makes the two means equal, or why they differ."""
    empty = tuple(i for i, n in enumerate(exact.counts) if n == 0)
    occupied = [m for n, m in zip(exact.counts, exact.means, strict=True) if n]
    reason: Reason
    if len(exact.counts) == 1:
        reason = "one entry"
    elif all(n / exact.total == c for n, c in zip(exact.counts, exact.plain_weights, strict=True)):
        reason = "proportional counts"
    elif not empty and len(set(occupied)) == 1:
        reason = "equal means"
    elif empty and not any(occupied):
        reason = "zero means"
    elif exact.difference == 0:
        reason = "coincidence"
    elif empty and _only_empties(exact, empty):
        reason = "empty entries"
    else:
        reason = "unequal counts"
    return Agreement(
        agree=reason in AGREEING,
        reason=reason,
        difference=rounded(exact.difference),
        empty=empty,
        plain=exact.plain,
        counted=exact.counted,
    )


def _only_empties(exact: Exact, empty: tuple[int, ...]) -> bool:
    """Without the empty entries (their plain weight spread over the rest) the two would agree."""
    kept = [i for i in range(len(exact.counts)) if i not in empty]
    share = sum((exact.plain_weights[i] for i in kept), Fraction(0))
    return all(exact.counts[i] / exact.total == exact.plain_weights[i] / share for i in kept) or (
        len({exact.means[i] for i in kept}) == 1
    )
