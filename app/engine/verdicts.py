"""Whether two weightings of the same local means agree, and why, decided in exact arithmetic.

Both reductions of the lesson are weighted means of local means ``ḡᵢ`` with weights that sum
to 1: the count-weighted one gives entry i the weight ``nᵢ/N``; the plain one a fixed weight
``cᵢ`` (``1/P`` for the rank mean, ``1/(P·M_r)`` for the naive average of microbatch means).
An entry with count 0 has no mean: both count it as ``ḡᵢ = 0``. Their difference

    plain - counted = Σᵢ (cᵢ - nᵢ/N)·ḡᵢ

is computed here exactly, in integers, from the inputs as written (each float read as
its shortest decimal, ``decimals``: 3.7 is 37/10), so when the two are the same computation
of those numbers it is exactly 0, and the condition that makes them agree is named.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, NamedTuple, get_args

from app.engine.decimals import Ratio, decimal_ratio, ratio_sum

# Why the two weightings agree (the first that holds, in this order) or why they differ.
Agreeing = Literal[
    "one entry",  # a single rank (or a single microbatch): both means are its mean
    "proportional counts",  # nᵢ/N = cᵢ for every entry: equal counts across ranks
    "equal means",  # every entry has items and the same mean
    "zero means",  # some entries are empty, and every non-empty entry's mean is 0
    "coincidence",  # none of the above, yet the two sums are equal
]
Reason = Literal[
    Agreeing,
    "unequal counts",  # they differ: the counts are not in proportion to cᵢ
    "empty entries",  # they differ only because the empty entries count as 0
]
AGREEING: tuple[Reason, ...] = get_args(Agreeing)


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


def ratio_float(ratio: Ratio) -> float:
    """The nearest float to an exact ratio (int / int rounds once); ±inf beyond the range."""
    top, bottom = ratio
    try:
        return top / bottom
    except OverflowError:
        return math.inf if top > 0 else -math.inf


def rounded(value: Fraction) -> float:
    """The nearest float; beyond the float range ±inf (the caller's finiteness check refuses it)."""
    return ratio_float((value.numerator, value.denominator))


class WeightedMeans(NamedTuple):
    """Both weighted means of the local means, exactly, as unreduced ratios (denominators > 0)."""

    total: Ratio  # N = Σ nᵢ
    counted: Ratio  # g = Σ nᵢ ḡᵢ / N
    plain: Ratio  # Σ cᵢ ḡᵢ
    difference: Ratio  # plain - counted
    agreement: Agreement
    counts: tuple[Ratio, ...]  # each nᵢ as written
    products: tuple[Ratio, ...]  # each nᵢ ḡᵢ as written


def weighted_means(
    counts: Sequence[float],
    means: Sequence[float],
    plain_weights: Sequence[Fraction] | None = None,
) -> WeightedMeans:
    """Both weighted means of ``means`` exactly, and which condition makes them agree or not.

    ``counts`` are non-negative floats with a positive sum; ``means`` are 0 where the count is 0;
    ``plain_weights`` are the cᵢ, summing to 1 (None: ``1/P`` each, the plain rank mean).
    """
    entries = len(counts)
    count_ratios = [decimal_ratio(x) for x in counts]
    mean_ratios = [decimal_ratio(y) for y in means]
    products = [(a * b, d * e) for (a, d), (b, e) in zip(count_ratios, mean_ratios, strict=True)]
    n_top, n_den = ratio_sum(count_ratios)
    p_top, p_den = ratio_sum(products)
    counted = (p_top * n_den, p_den * n_top)  # (Σ nᵢ ḡᵢ) / N
    if plain_weights is None:
        m_top, m_den = ratio_sum(mean_ratios)
        plain = (m_top, entries * m_den)
    else:
        weighted = sum(
            (c * Fraction(*y) for c, y in zip(plain_weights, mean_ratios, strict=True)),
            Fraction(0),
        )
        plain = (weighted.numerator, weighted.denominator)
    difference = (plain[0] * counted[1] - counted[0] * plain[1], plain[1] * counted[1])
    empty = tuple(i for i, x in enumerate(counts) if x == 0) if 0.0 in counts else ()

    def in_proportion(kept: Sequence[int]) -> bool:
        """``nᵢ/N = cᵢ/Σc`` over the entries ``kept`` (equal weights: simply equal counts)."""
        if plain_weights is None or len(set(plain_weights)) == 1:
            return len({counts[i] for i in kept}) == 1
        share = sum((plain_weights[i] for i in kept), Fraction(0))
        total = Fraction(n_top, n_den)
        return all(Fraction(*count_ratios[i]) * share == plain_weights[i] * total for i in kept)

    reason: Reason
    if entries == 1:
        reason = "one entry"
    elif in_proportion(range(entries)):
        reason = "proportional counts"
    else:
        kept = [i for i, x in enumerate(counts) if x] if empty else range(entries)
        occupied = {means[i] for i in kept}
        if not empty and len(occupied) == 1:
            reason = "equal means"
        elif empty and not any(occupied):
            reason = "zero means"
        elif difference[0] == 0:
            reason = "coincidence"
        elif empty and (len(occupied) == 1 or in_proportion(kept)):
            reason = "empty entries"
        else:
            reason = "unequal counts"
    agreement = Agreement(
        agree=reason in AGREEING,
        reason=reason,
        difference=ratio_float(difference),
        empty=empty,
        plain=Fraction(*plain),
        counted=Fraction(*counted),
    )
    return WeightedMeans(
        (n_top, n_den), counted, plain, difference, agreement, tuple(count_ratios), tuple(products)
    )
