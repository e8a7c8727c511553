"""The lab's words and digits: headline figures, written-out lines and explanatory sentences.

Every line here holds as printed (``app.lab.equations.write``); every sentence is chosen by the
numbers it describes (the engine's verdicts, the contraction factors, the ring's terms).
The view model places these strings; the templates only show them.
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from app.engine import GradientResult, RingCost
from app.lab.equations import Formula, write
from app.lab.numbers import (
    MOST_DIGITS,
    Printer,
    apart,
    distinct_digits,
    fmt,
    fmt_distinct,
)

# ---- one update ------------------------------------------------------------------------------


class Figures(NamedTuple):
    """The headline figures: values shown side by side never print alike unless equal."""

    N: str
    global_gradient: str
    rank_mean_gradient: str
    w_new: str
    w_new_rank_mean: str
    w_new_difference: str


def figures(result: GradientResult, printer: Printer) -> Figures:
    """The means from their exact values (never alike unless equal, never 0 unless 0); the
    steps as the floats the engine returns, told apart where they differ, and never a "0"
    where the exact step is not 0. ``printer``: the request's, shared with the verdict."""
    g, rank_mean = result.agreement.counted, result.agreement.plain
    shown_g, shown_rank_mean = fmt_distinct((g, rank_mean), MOST_DIGITS, printer)
    if shown_g == shown_rank_mean and g != rank_mean:
        # They differ past MOST_DIGITS digits (a count of 1e-250 items beside whole ones).
        means = (g, rank_mean)
        told = apart(means, [printer(value, MOST_DIGITS) for value in means])
        shown_g, shown_rank_mean = told[0].text, told[1].text
    exact = result.exact
    steps = ((result.w_new, exact.w_new), (result.w_new_rank_mean, exact.w_new_rank_mean))
    digits = distinct_digits([rounded for rounded, _ in steps])
    # A step that rounds to 0 shows its exact value where that is not 0.
    shown_w_new, shown_w_new_rank_mean = (
        fmt(Fraction(*value) if rounded == 0 and value[0] else rounded, digits)
        for rounded, value in steps
    )
    return Figures(
        N=fmt(result.N),
        global_gradient=shown_g,
        rank_mean_gradient=shown_rank_mean,
        w_new=shown_w_new,
        w_new_rank_mean=shown_w_new_rank_mean,
        w_new_difference=fmt(Fraction(*exact.w_new_difference)),
    )


@dataclass(frozen=True, slots=True)
class Lines:
    """The written-out lines of one update, each ``expression = result`` true as printed."""

    N: str
    g: str
    rank_mean: str
    compensated: str
    w_new: str
    w_new_rank_mean: str
    difference: str
    factors: tuple[str, ...]
    compensated_means: tuple[str, ...]
    # The forms the lines printed: the request's table columns print with it too (``column``).
    printer: Printer


def lines(result: GradientResult) -> Lines:
    """``N = Σ nᵣ``, ``g = Σ nᵣ ḡᵣ / N``, the rank mean, the compensated mean, both steps,
    their difference ``η·(g - rank mean)`` and, per rank, ``P·nᵣ/N`` and ``(P·nᵣ/N)·ḡᵣ``.

    The two means enter as their exact values (``result.agreement``), so each line holds as
    printed even where the floats they round to cannot show their difference. The lines share
    one ``Printer``: an operand that several lines show (a count, g, N) prints once per digits.
    """
    g, rank_mean = result.agreement.counted, result.agreement.plain
    counts, means, ranks = list(result.counts), list(result.means), result.P
    factors, compensated = result.scale_factors, result.compensated_means
    total, w_new, w_new_rank_mean, difference = (Fraction(*ratio) for ratio in result.exact)
    printer = Printer()

    def line(form: Formula, value: Fraction | float) -> str:
        return str(write(form, value, most=MOST_DIGITS, printer=printer))

    return Lines(
        N=line(Formula.total(counts), total),
        g=line(Formula.weighted_mean(counts, means, total), g),
        rank_mean=line(Formula.mean(means, ranks), rank_mean),
        compensated=line(Formula.mean(compensated, ranks), g),
        w_new=line(Formula.step(result.w, result.eta, g), w_new),
        w_new_rank_mean=line(Formula.step(result.w, result.eta, rank_mean), w_new_rank_mean),
        difference=line(Formula.scaled_difference(result.eta, g, rank_mean), difference),
        factors=tuple(
            [line(Formula.share(ranks, counts[r], total), factors[r]) for r in range(ranks)]
        ),
        compensated_means=tuple(
            [line(Formula.product(factors[r], means[r]), compensated[r]) for r in range(ranks)]
        ),
        printer=printer,
    )


def column(
    values: tuple[float, ...], exact: bool = False, printer: Printer | None = None
) -> tuple[str, ...]:
    """A table column: one digit count, the fewest that print different values differently;
    ``exact`` shows small fractions whose decimals do not end as p/q (1/12). ``printer``
    shares the forms other columns and lines printed."""
    if not exact:
        return fmt_distinct(values, printer=printer)
    show = Printer() if printer is None else printer
    digits = distinct_digits(values, printer=show)
    return tuple([show.exact(value, digits) for value in values])


# ---- ring all-reduce -------------------------------------------------------------------------

MICRO = Fraction(1, 10**6)
# A payload's unit in a ring line: its name and its scale to bytes.
PayloadUnit = tuple[str, tuple[int, int] | None]
MEGABYTES: PayloadUnit = ("MB", (10**6, 1))
SECONDS = (("s", Fraction(1)), ("ms", Fraction(1, 1000)), ("µs", MICRO), ("ns", MICRO / 1000))


def seconds_unit(seconds: float) -> tuple[str, Fraction]:
    """The unit a duration reads best in: s, ms, µs or ns."""
    for unit, scale in SECONDS[:-1]:
        if abs(seconds) >= scale:
            return unit, scale
    return SECONDS[-1]


def fmt_seconds(seconds: float) -> str:
    unit, scale = seconds_unit(seconds)
    return f"{fmt(Fraction(seconds) / scale)} {unit}"


@dataclass(frozen=True, slots=True)
class RingWords:
    time: str
    time_formula: str
    count_time: str
    count_formula: str
    overhead: str
    note: str


def _ring_line(
    cost: RingCost, alpha_us: float, gbps: float, payload: float, unit: PayloadUnit, time: float
) -> str:
    form = Formula.ring(cost.ranks, alpha_us, payload, unit, gbps)
    return str(write(form, time, unit=seconds_unit(time)))


# Every lab render shows the ring panel, and a class mostly leaves it at its defaults while the
# lab state changes: its two written-out lines (the costliest on the page) repeat, so keep them.
@lru_cache(maxsize=256, typed=True)
def ring_words(cost: RingCost, payload_mb: float, alpha_us: float, gbps: float) -> RingWords:
    """The ring panel: both all-reduce times written out, and a sentence on the count
    all-reduce chosen by which of its terms dominates (start-up latency or transfer)."""
    overhead = f"{fmt(cost.overhead_ratio * 100, 3)} %"
    if cost.ranks == 1:
        note = (
            "With one rank nothing is communicated: neither all-reduce takes any time, and the"
            " count N is the rank's own."
        )
    else:
        share = cost.count_latency_share
        if share >= 0.9:
            kind = "almost all start-up latency"
        elif share <= 0.1:
            kind = (
                "almost all transfer time"
                if cost.alpha_s
                else "all transfer time (no start-up latency)"
            )
        else:
            kind = f"part start-up latency ({fmt(share * 100, 3)} %), part transfer time"
        note = (
            f"The count all-reduce is {kind}: the bookkeeping that keeps the objective right"
            f" costs {overhead} of the gradient's own all-reduce here."
        )
    return RingWords(
        time=fmt_seconds(cost.time_s),
        time_formula=_ring_line(cost, alpha_us, gbps, payload_mb, MEGABYTES, cost.time_s),
        count_time=fmt_seconds(cost.count_reduce_time_s),
        count_formula=_ring_line(
            cost, alpha_us, gbps, 8, ("bytes", None), cost.count_reduce_time_s
        ),
        overhead=overhead,
        note=note,
    )
