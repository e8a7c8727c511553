"""The lab's words and digits: headline figures, written-out lines and explanatory sentences.

Every line here holds as printed (``app.numbers.written``); every sentence is chosen by the
numbers it describes (the engine's verdicts, the contraction factors, the ring's terms).
The view model places these strings; the templates only show them.
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from app.engine import GradientResult, RingCost, Trajectory
from app.numbers import (
    Expr,
    Formula,
    Number,
    Printer,
    Value,
    Whole,
    distinct_digits,
    exact_sum,
    fmt,
    fmt_distinct,
    fmt_exact,
    minus,
    over,
    plus,
    times,
    write,
    written,
)
from app.sentences import lab_verdict

# ---- one update ------------------------------------------------------------------------------

# Exact values (the means before rounding) may need more than 17 digits to show apart.
MOST_DIGITS = 60


@dataclass(frozen=True, slots=True)
class Figures:
    """The headline figures: values shown side by side never print alike unless equal."""

    N: str
    global_gradient: str
    rank_mean_gradient: str
    w_new: str
    w_new_rank_mean: str
    w_new_difference: str


def figures(result: GradientResult) -> Figures:
    """The means from their exact values (never alike unless equal, never 0 unless 0); the
    steps as the floats the engine returns, told apart where they differ, and never a "0"
    where the exact step is not 0."""
    g, rank_mean = result.agreement.counted, result.agreement.plain
    w, eta = Fraction(result.w), Fraction(result.eta)
    shown_g, shown_rank_mean = fmt_distinct((g, rank_mean), most=MOST_DIGITS)
    steps = ((result.w_new, w - eta * g), (result.w_new_rank_mean, w - eta * rank_mean))
    digits = distinct_digits([rounded for rounded, _ in steps])
    w_new, w_new_rank_mean = (
        fmt(exact if rounded == 0 and exact else rounded, digits) for rounded, exact in steps
    )
    return Figures(
        N=fmt(result.N),
        global_gradient=shown_g,
        rank_mean_gradient=shown_rank_mean,
        w_new=w_new,
        w_new_rank_mean=w_new_rank_mean,
        w_new_difference=fmt(eta * (g - rank_mean)),
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


def lines(result: GradientResult) -> Lines:
    """``N = Σ nᵣ``, ``g = Σ nᵣ ḡᵣ / N``, the rank mean, the compensated mean, both steps,
    their difference ``η·(g - rank mean)`` and, per rank, ``P·nᵣ/N`` and ``(P·nᵣ/N)·ḡᵣ``.

    The two means enter as their exact values (``result.agreement``), so each line holds as
    printed even where the floats they round to cannot show their difference. The lines share
    one ``Printer``: an operand that several lines show (a count, g, N) prints once per digits.
    """
    g, rank_mean = result.agreement.counted, result.agreement.plain
    counts, means, ranks = result.counts, result.means, result.P
    total = exact_sum(counts)
    w, eta = Fraction(result.w), Fraction(result.eta)
    printer = Printer()

    def line(form: Formula, value: Number) -> str:
        return str(write(form, value, most=MOST_DIGITS, printer=printer))

    def step(gradient: Fraction) -> str:
        return line(Formula.step(result.w, result.eta, gradient), w - eta * gradient)

    return Lines(
        N=line(Formula.total(counts), total),
        g=line(Formula.weighted_mean(counts, means, total), g),
        rank_mean=line(Formula.mean(means, ranks), rank_mean),
        compensated=line(Formula.mean(result.compensated_means, ranks), g),
        w_new=step(g),
        w_new_rank_mean=step(rank_mean),
        difference=line(Formula.scaled_difference(result.eta, g, rank_mean), eta * (g - rank_mean)),
        factors=tuple(
            line(Formula.share(ranks, n, total), factor)
            for n, factor in zip(counts, result.scale_factors, strict=True)
        ),
        compensated_means=tuple(
            line(Formula.product(factor, m), scaled)
            for factor, m, scaled in zip(
                result.scale_factors, means, result.compensated_means, strict=True
            )
        ),
    )


def column(values: tuple[float, ...], exact: bool = False) -> tuple[str, ...]:
    """A table column: one digit count, the fewest that print different values differently;
    ``exact`` shows small fractions whose decimals do not end as p/q (1/12)."""
    digits = distinct_digits(values)
    return tuple(fmt_exact(v, digits) if exact else fmt(v, digits) for v in values)


def verdict(result: GradientResult) -> str:
    return lab_verdict(result.agreement)


# ---- SGD steps -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Course:
    """Where one scheme's SGD goes: a verb, its fixed point and the step's factor."""

    verb: str
    fixed_point: str
    factor: str
    clause: str
    label: str

    @property
    def converges(self) -> bool:
        return self.verb == "heads to"


def course(scheme: str, point: str, factor: float) -> Course:
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
    return Course(verb=verb, fixed_point=point, factor=by, clause=clause, label=label)


@dataclass(frozen=True, slots=True)
class PathWords:
    """The trajectory's words: each scheme's course, finals and the chart description."""

    global_course: Course
    rank_mean_course: Course
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
    loss_global, loss_rank_mean = fmt_distinct((path.loss_global[-1], path.loss_rank_mean[-1]))
    steps = f"{path.steps} step" + ("" if path.steps == 1 else "s")
    description = (
        f"Line chart of w over {steps} from w = {fmt(path.w_global[0])}: the global item mean"
        f" ends at {final_global} and {global_course.verb} {fixed_global}"
        f" ({global_course.clause}); the plain rank mean ends at {final_rank_mean} and"
        f" {rank_course.verb} {fixed_rank_mean} ({rank_course.clause})."
    )
    return PathWords(
        global_course=global_course,
        rank_mean_course=rank_course,
        final_global=final_global,
        final_rank_mean=final_rank_mean,
        loss_final_global=loss_global,
        loss_final_rank_mean=loss_rank_mean,
        description=description,
    )


# ---- ring all-reduce -------------------------------------------------------------------------

MICRO, MEGA, GIGA = Fraction(1, 10**6), Fraction(10**6), Fraction(10**9)
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


def _ring_line(payload: Expr, cost: RingCost, alpha_us: float, gbps: float, total: float) -> str:
    ranks = Whole(cost.ranks)
    expression = times(
        Whole(2),
        minus(ranks, Whole(1)),
        plus(Value(alpha_us, "µs", MICRO), over(payload, times(ranks, Value(gbps, "GB/s", GIGA)))),
    )
    return str(written(expression, total, unit=seconds_unit(total)))


# Every lab render shows the ring panel, and a class mostly leaves it at its defaults while the
# lab state changes: its two written-out lines (the costliest on the page) repeat, so keep them.
@lru_cache(maxsize=256, typed=True)
def ring_words(cost: RingCost, payload_mb: float, alpha_us: float, gbps: float) -> RingWords:
    """The ring panel: both all-reduce times written out, and a sentence on the count
    all-reduce chosen by which of its terms dominates (start-up latency or transfer)."""
    latency = cost.alpha_s
    transfer = 8 / (cost.ranks * cost.bandwidth_bytes_per_s)
    overhead = f"{fmt(cost.overhead_ratio * 100, 3)} %"
    if cost.ranks == 1:
        note = (
            "With one rank nothing is communicated: neither all-reduce takes any time, and the"
            " count N is the rank's own."
        )
    else:
        share = latency / (latency + transfer)
        if share >= 0.9:
            kind = "almost all start-up latency"
        elif share <= 0.1:
            kind = (
                "almost all transfer time" if latency else "all transfer time (no start-up latency)"
            )
        else:
            kind = f"part start-up latency ({fmt(share * 100, 3)} %), part transfer time"
        note = (
            f"The count all-reduce is {kind}: the bookkeeping that keeps the objective right"
            f" costs {overhead} of the gradient's own all-reduce here."
        )
    return RingWords(
        time=fmt_seconds(cost.time_s),
        time_formula=_ring_line(Value(payload_mb, "MB", MEGA), cost, alpha_us, gbps, cost.time_s),
        count_time=fmt_seconds(cost.count_reduce_time_s),
        count_formula=_ring_line(Value(8, "bytes"), cost, alpha_us, gbps, cost.count_reduce_time_s),
        overhead=overhead,
        note=note,
    )
