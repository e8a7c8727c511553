"""The lab's words and digits: headline figures, written-out lines and explanatory sentences.

Every line here holds as printed (``app.lab.equations.write``); every sentence is chosen by the
numbers it describes (the engine's verdicts, the contraction factors, the ring's terms).
The view model places these strings; the templates only show them.
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from app.engine import GradientResult, RingCost, Trajectory
from app.lab.equations import Formula, write
from app.lab.numbers import MOST_DIGITS, Printer, distinct_digits, fmt, fmt_distinct
from app.lab.sentences import lab_verdict

# ---- one update ------------------------------------------------------------------------------


class Figures(NamedTuple):
    """The headline figures: values shown side by side never print alike unless equal (a
    named tuple: built on every drag)."""

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
    w_new, w_new_rank_mean = result.w_new, result.w_new_rank_mean
    if w_new and w_new_rank_mean:
        shown_w_new, shown_w_new_rank_mean = fmt_distinct((w_new, w_new_rank_mean))
    else:  # a step that rounds to 0 shows its exact value where that is not 0
        steps = ((w_new, result.exact.w_new), (w_new_rank_mean, result.exact.w_new_rank_mean))
        digits = distinct_digits([rounded for rounded, _ in steps])
        shown_w_new, shown_w_new_rank_mean = (
            fmt(exact if rounded == 0 and exact else rounded, digits) for rounded, exact in steps
        )
    return Figures(
        N=fmt(result.N),
        global_gradient=shown_g,
        rank_mean_gradient=shown_rank_mean,
        w_new=shown_w_new,
        w_new_rank_mean=shown_w_new_rank_mean,
        w_new_difference=fmt(result.exact.w_new_difference),
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
    exact = result.exact
    total = exact.N
    printer = Printer()

    def line(form: Formula, value: Fraction | float) -> str:
        return str(write(form, value, most=MOST_DIGITS, printer=printer))

    return Lines(
        N=line(Formula.total(counts), total),
        g=line(Formula.weighted_mean(counts, means, total), g),
        rank_mean=line(Formula.mean(means, ranks), rank_mean),
        compensated=line(Formula.mean(compensated, ranks), g),
        w_new=line(Formula.step(result.w, result.eta, g), exact.w_new),
        w_new_rank_mean=line(Formula.step(result.w, result.eta, rank_mean), exact.w_new_rank_mean),
        difference=line(
            Formula.scaled_difference(result.eta, g, rank_mean), exact.w_new_difference
        ),
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
    show = Printer() if printer is None else printer
    digits = distinct_digits(values, printer=show)
    if exact:
        return tuple([show.exact(value, digits) for value in values])
    return tuple([show(value, digits).text for value in values])


def verdict(result: GradientResult, printer: Printer) -> str:
    """The verdict, its means printed by the request's ``printer`` (as the figures)."""
    return lab_verdict(result.agreement, printer)


# ---- SGD steps -------------------------------------------------------------------------------


# Named tuples rather than frozen dataclasses: built on every slider step, a tuple is quicker.
class SgdCourse(NamedTuple):
    """Where one scheme's SGD goes: a verb, its fixed point and the step's factor."""

    verb: str
    fixed_point: str
    factor: str
    clause: str
    label: str

    @property
    def converges(self) -> bool:
        return self.verb == "heads to"


def course(scheme: str, point: str, factor: float) -> SgdCourse:
    """``heads to`` the fixed point (printed as ``point``) only when ``|factor| < 1``; else
    oscillates or diverges."""
    by = fmt(factor)
    if abs(factor) < 1:
        verb = "heads to"
        clause = f"each step multiplies the distance to it by {by}"
        label = f"{scheme} → {point}"
    elif abs(factor) == 1:
        verb = "oscillates around"
        clause = f"each step multiplies the distance to it by {by}, so it never gets closer"
        label = f"{scheme}: oscillates around {point}"
    else:
        verb = "diverges from"
        clause = f"each step multiplies the distance to it by {by}, so it grows without bound"
        label = f"{scheme}: diverges from {point}"
    return SgdCourse(verb, point, by, clause, label)


class PathWords(NamedTuple):
    """The trajectory's words: each scheme's course, finals and the chart description."""

    global_course: SgdCourse
    rank_mean_course: SgdCourse
    start: str  # the first iterate, w
    final_global: str
    final_rank_mean: str
    loss_final_global: str
    loss_final_rank_mean: str
    description: str


def path_words(path: Trajectory) -> PathWords:
    fixed_global, fixed_rank_mean = fmt_distinct(
        (path.fixed_point_global, path.fixed_point_rank_mean)
    )
    # Both fixed points printed with the digits that tell them apart.
    global_course = course("global", fixed_global, path.contraction_global)
    rank_course = course("rank mean", fixed_rank_mean, path.contraction_rank_mean)
    final_global, final_rank_mean = fmt_distinct((path.w_global[-1], path.w_rank_mean[-1]))
    loss_global, loss_rank_mean = fmt_distinct((path.loss_final_global, path.loss_final_rank_mean))
    start = fmt(path.w_global[0])
    steps = f"{path.steps} step" + ("" if path.steps == 1 else "s")
    description = (
        f"Line chart of w over {steps} from w = {start}: the global item mean"
        f" ends at {final_global} and {global_course.verb} {fixed_global}"
        f" ({global_course.clause}); the plain rank mean ends at {final_rank_mean} and"
        f" {rank_course.verb} {fixed_rank_mean} ({rank_course.clause})."
    )
    return PathWords(
        global_course,
        rank_course,
        start,
        final_global,
        final_rank_mean,
        loss_global,
        loss_rank_mean,
        description,
    )


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
