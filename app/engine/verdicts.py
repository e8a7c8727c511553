"""Whether two weightings of the same local means agree, and why, decided in exact arithmetic.

Both reductions of the lesson are weighted means of local means ``ḡᵢ`` with weights that sum
to 1: the count-weighted one gives entry i the weight ``nᵢ/N``; the plain one a fixed weight
``cᵢ`` (``1/P`` for the rank mean, ``1/(P·M_r)`` for the naive average of microbatch means).
An entry with count 0 has no mean: both count it as ``ḡᵢ = 0``. Their difference

    plain - counted = Σᵢ (cᵢ - nᵢ/N)·ḡᵢ

is computed here exactly (``fractions.Fraction``) from the inputs as written (each float read as
its shortest decimal, ``decimals``: 3.7 is 37/10), so when the two are the same computation
of those numbers it is exactly 0, and the condition that makes them agree is named.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, NamedTuple

from app.engine.decimals import decimal_ratio, decimal_sum

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

    counts: tuple[float, ...]
    means: tuple[float, ...]
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
    n = tuple(float(x) for x in counts)
    m = tuple(float(y) if x else 0.0 for x, y in zip(n, means, strict=True))
    n_ratios = [decimal_ratio(x) for x in n]
    m_ratios = [decimal_ratio(y) for y in m]
    total = decimal_sum(n_ratios)
    products = ((a * c, b * d) for (a, b), (c, d) in zip(n_ratios, m_ratios, strict=True))
    counted = decimal_sum(products) / total
    groups: dict[Fraction, list[tuple[int, int]]] = {}
    for weight, ratio in zip(plain_weights, m_ratios, strict=True):
        groups.setdefault(weight, []).append(ratio)
    plain = sum((weight * decimal_sum(group) for weight, group in groups.items()), Fraction(0))
    return Exact(n, m, tuple(plain_weights), total, counted, plain)


def rounded(value: Fraction) -> float:
    """The nearest float; beyond the float range ±inf (the caller's finiteness check refuses it)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def decide(exact: Exact) -> Agreement:
    """Name the first condition that makes the two means equal, or why they differ."""
    empty = tuple(i for i, n in enumerate(exact.counts) if n == 0)
    occupied = [m for n, m in zip(exact.counts, exact.means, strict=True) if n]
    reason: Reason
    if len(exact.counts) == 1:
        reason = "one entry"
    elif _proportional(exact):
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


# ---- the plain rank mean (every weight 1/P), in integers -------------------------------------
# Every input as written is an integer over a power of ten (``decimal_ratio``): sums of them are
# exact as plain integers over the largest denominator. The lab asks for this comparison on every
# request, and plain integers spare it Fraction's gcd at every step; ``exact_means`` and ``decide``
# stay the reference (and serve any other weights).

Ratio = tuple[int, int]


class RankMeans(NamedTuple):
    """Both means of per-rank means, exactly, as unreduced ratios (denominators > 0); a named
    tuple, built on every lab request at a fraction of a frozen dataclass's cost."""

    total: Ratio  # N = Σ nᵣ
    counted: Ratio  # g = Σ nᵣ ḡᵣ / N
    plain: Ratio  # (1/P) Σ ḡᵣ
    difference: Ratio  # plain - counted
    agreement: Agreement
    counts: tuple[Ratio, ...]  # each nᵣ as written
    products: tuple[Ratio, ...]  # each nᵣ ḡᵣ as written


def ratio_float(ratio: Ratio) -> float:
    """The nearest float to an exact ratio (int / int rounds once); ±inf beyond the range."""
    top, bottom = ratio
    try:
        return top / bottom
    except OverflowError:
        return math.inf if top > 0 else -math.inf


def rank_means(counts: Sequence[float], means: Sequence[float]) -> RankMeans:
    """``exact_means(counts, means, (1/P,) * P)`` and its ``decide``, in integers.

    ``counts`` are non-negative floats with a positive sum; ``means`` are 0 where the count is 0.
    """
    ranks = len(counts)
    # One pass: Σ nᵣ = n_top / n_den, Σ ḡᵣ = m_top / m_den and Σ nᵣ ḡᵣ = p_top / (n_den · m_den)
    # over the largest denominators so far (powers of ten: the larger is a multiple of the
    # smaller, so the sums so far scale up exactly when a larger one comes).
    n_top = m_top = p_top = 0
    n_den = m_den = 1
    count_ratios: list[Ratio] = []
    products: list[Ratio] = []
    for x, y in zip(counts, means, strict=True):
        a, d = decimal_ratio(x)
        b, e = decimal_ratio(y)
        count_ratios.append((a, d))
        products.append((a * b, d * e))
        if d != n_den:
            if d > n_den:
                k = d // n_den
                n_top *= k
                p_top *= k
                n_den = d
            else:
                a *= n_den // d
        if e != m_den:
            if e > m_den:
                k = e // m_den
                m_top *= k
                p_top *= k
                m_den = e
            else:
                b *= m_den // e
        n_top += a
        m_top += b
        p_top += a * b
    # counted = (p_top / (n_den · m_den)) / (n_top / n_den); plain = m_top / (P · m_den)
    counted = (p_top, m_den * n_top)
    plain = (m_top, ranks * m_den)
    difference = (m_top * counted[1] - counted[0] * plain[1], plain[1] * counted[1])
    empty = tuple(i for i, x in enumerate(counts) if x == 0) if 0.0 in counts else ()
    reason: Reason
    if ranks == 1:
        reason = "one entry"
    elif len(set(counts)) == 1:
        reason = "proportional counts"
    else:
        occupied = {m for x, m in zip(counts, means, strict=True) if x} if empty else set(means)
        if not empty and len(occupied) == 1:
            reason = "equal means"
        elif empty and not any(occupied):
            reason = "zero means"
        elif difference[0] == 0:
            reason = "coincidence"
        elif empty and (len({x for x in counts if x}) == 1 or len(occupied) == 1):
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
    return RankMeans(
        (n_top, n_den), counted, plain, difference, agreement, tuple(count_ratios), tuple(products)
    )


def _proportional(exact: Exact) -> bool:
    """``nᵢ/N = cᵢ`` for every entry; with equal weights, simply equal counts."""
    if len(set(exact.plain_weights)) == 1:
        return len(set(exact.counts)) == 1
    return all(
        _as_written(n) == c * exact.total
        for n, c in zip(exact.counts, exact.plain_weights, strict=True)
    )


def _only_empties(exact: Exact, empty: tuple[int, ...]) -> bool:
    """Without the empty entries (their plain weight spread over the rest) the two would agree."""
    kept = [i for i in range(len(exact.counts)) if i not in empty]
    share = sum((exact.plain_weights[i] for i in kept), Fraction(0))
    return (
        all(
            _as_written(exact.counts[i]) * share == exact.plain_weights[i] * exact.total
            for i in kept
        )
        or len({exact.means[i] for i in kept}) == 1
    )


def _as_written(count: float) -> Fraction:
    """A count as the decimal it prints as: the value ``total`` sums, not the binary float."""
    return Fraction(*decimal_ratio(count))
