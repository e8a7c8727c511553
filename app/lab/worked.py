# ruff: noqa: RUF002 (the docstrings show the lines' minus and times signs as printed)
"""The lab's words and digits: headline figures, written-out lines and explanatory sentences.

Every line here holds as printed (``app.lab.numbers.written``); every sentence is chosen by the
numbers it describes (the engine's verdicts, the contraction factors, the ring's terms).
The view model places these strings; the templates only show them.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from app.engine import GradientResult, RingCost, Trajectory
from app.engine.decimals import as_decimal, decimal_ratio, same_number
from app.lab.numbers import (
    DIGITS,
    MAX_DIGITS,
    MINUS,
    TIMES,
    Digits,
    Expr,
    Formula,
    Number,
    Printed,
    Printer,
    Ratio,
    Value,
    Whole,
    distinct_digits,
    distinct_pair,
    exact_sum,
    exactly_ratio,
    expanded,
    fmt,
    fmt_distinct,
    holds_ratio,
    minus,
    over,
    plus,
    times,
    write,
    written,
)
from app.lab.sentences import lab_verdict

# ---- one update ------------------------------------------------------------------------------

# Exact values (the means before rounding) may need more than 17 digits to show apart.
MOST_DIGITS = 60


class Figures(NamedTuple):
    """The headline figures: values shown side by side never print alike unless equal (a
    named tuple: built on every drag)."""

    N: str
    global_gradient: str
    rank_mean_gradient: str
    w_new: str
    w_new_rank_mean: str
    w_new_difference: str


def figures(
    result: GradientResult, g_digits: Digits | None = None, rank_mean_digits: Digits | None = None
) -> Figures:
    """The means from their exact values (never alike unless equal, never 0 unless 0); the
    steps as the floats the engine returns, told apart where they differ, and never a "0"
    where the exact step is not 0. ``g_digits`` and ``rank_mean_digits``: the two means'
    expansions, when the caller has them."""
    g, rank_mean = result.agreement.counted, result.agreement.plain
    shown = distinct_pair(g, rank_mean, g_digits, rank_mean_digits)
    shown_g, shown_rank_mean = (
        fmt_distinct((g, rank_mean), most=MOST_DIGITS) if shown is None else shown
    )
    w_new, w_new_rank_mean = result.w_new, result.w_new_rank_mean
    if w_new and w_new_rank_mean:
        shown_w_new, shown_w_new_rank_mean = fmt(w_new), fmt(w_new_rank_mean)
        if shown_w_new == shown_w_new_rank_mean and w_new != w_new_rank_mean:
            shown_w_new, shown_w_new_rank_mean = fmt_distinct((w_new, w_new_rank_mean))
    else:  # a step that rounds to 0 shows its exact value where that is not 0
        w, eta = as_decimal(result.w), as_decimal(result.eta)
        steps = ((w_new, w - eta * g), (w_new_rank_mean, w - eta * rank_mean))
        digits = distinct_digits([rounded for rounded, _ in steps])
        shown_w_new, shown_w_new_rank_mean = (
            fmt(exact if rounded == 0 and exact else rounded, digits) for rounded, exact in steps
        )
    # η·(g - rank mean) as a ratio, unreduced: printing it needs no gcd.
    eta_top, eta_bottom = decimal_ratio(result.eta)
    top = eta_top * (g.numerator * rank_mean.denominator - rank_mean.numerator * g.denominator)
    difference = (
        Digits(top, eta_bottom * g.denominator * rank_mean.denominator).text(DIGITS) if top else "0"
    )
    return Figures(
        N=fmt(result.N),
        global_gradient=shown_g,
        rank_mean_gradient=shown_rank_mean,
        w_new=shown_w_new,
        w_new_rank_mean=shown_w_new_rank_mean,
        w_new_difference=difference,
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

    Each line is first tried by ``_Quick`` (its shape's arithmetic on ints, 6 to 17 digits);
    only a line that none of those digit counts makes hold goes to ``app.lab.numbers.write``.
    """
    g, rank_mean = result.agreement.counted, result.agreement.plain
    counts, means, ranks = result.counts, result.means, result.P
    factors, compensated = result.scale_factors, result.compensated_means
    total = exact_sum(counts)
    w, eta = as_decimal(result.w), as_decimal(result.eta)
    printer = Printer()
    quick = _Quick(printer, result, total)

    def line(attempt: Attempt, form: Callable[[], Formula], value: Number) -> str:
        for digits in range(DIGITS, MAX_DIGITS + 1):
            text = attempt(digits)
            if text is not None:
                return text
        return str(write(form(), value, most=MOST_DIGITS, printer=printer))

    def step(gradient: Fraction) -> str:
        exact = w - eta * gradient
        return line(
            lambda digits: quick.step(digits, gradient, exact),
            lambda: Formula.step(result.w, result.eta, gradient),
            exact,
        )

    def share(r: int) -> str:
        return line(
            lambda digits: quick.share(digits, r),
            lambda: Formula.share(ranks, counts[r], total),
            factors[r],
        )

    def product(r: int) -> str:
        return line(
            lambda digits: quick.product(digits, r),
            lambda: Formula.product(factors[r], means[r]),
            compensated[r],
        )

    difference = eta * (g - rank_mean)
    return Lines(
        N=line(quick.total, lambda: Formula.total(counts), total),
        g=line(
            lambda digits: quick.weighted_mean(digits, g),
            lambda: Formula.weighted_mean(counts, means, total),
            g,
        ),
        rank_mean=line(
            lambda digits: quick.mean(digits, means, rank_mean),
            lambda: Formula.mean(means, ranks),
            rank_mean,
        ),
        compensated=line(
            lambda digits: quick.mean(digits, compensated, g),
            lambda: Formula.mean(compensated, ranks),
            g,
        ),
        w_new=step(g),
        w_new_rank_mean=step(rank_mean),
        difference=line(
            lambda digits: quick.difference(digits, g, rank_mean, difference),
            lambda: Formula.scaled_difference(result.eta, g, rank_mean),
            difference,
        ),
        factors=tuple(map(share, range(ranks))),
        compensated_means=tuple(map(product, range(ranks))),
        printer=printer,
    )


# One attempt at a line: digits → the line as printed, or None.
Attempt = Callable[[int], str | None]


class _Quick:
    """The lines of ``lines``, one digit count at a time, each shape's arithmetic on plain
    ints: the line as printed, or None where that digit count does not make it hold.

    ``write`` tries the same digit counts in the same order with the same three checks, so the
    first line this returns is the line ``write`` returns: (1) the operands print distinct
    where they differ; (2) the result prints like an operand only when it equals it or the
    printed line is exact; (3) the printed expression's exact value (every printed operand is
    an int over a power of ten, so the value is a ratio of ints) lies strictly within half a
    unit of the printed result's last digit, or equals it (``holds_ratio``, by
    cross-multiplication). A negative operand after an operator prints in parentheses, as
    ``Formula`` wraps it. Lines that need more than 17 digits (exact means closer than floats
    show) are rare: ``write`` writes those.
    """

    __slots__ = ("N", "r", "show")

    def __init__(self, printer: Printer, result: GradientResult, total: Fraction) -> None:
        self.show, self.r, self.N = printer, result, total

    def _end(
        self,
        digits: int,
        value: Ratio,
        result: Number,
        operands: Sequence[Number],
        forms: list[Printed],
    ) -> str | None:
        """`` = result`` as printed when checks (1) to (3) hold: the result with as many
        digits as the operands or, where that does not hold, fewer (as many as hold)."""
        seen: dict[str, Number] = {}
        for operand, form in zip(operands, forms, strict=True):
            other = seen.setdefault(form.text, operand)
            if other is not operand and not same_number(other, operand):
                return None
        for result_digits in range(digits, 2, -1):
            answer = self.show(result, result_digits)
            if not holds_ratio(value, answer, None):
                continue
            other = seen.get(answer.text, result)
            if other is result or same_number(other, result) or exactly_ratio(value, answer):
                return f" = {answer.text}"
        return None

    def total(self, digits: int) -> str | None:
        """``n₀ + n₁ + …``: the printed operands' sum."""
        counts = self.r.counts
        forms = self.show.all(list(counts), digits)
        end = self._end(digits, _sum([form.value for form in forms]), self.N, counts, forms)
        return None if end is None else _joined(counts, forms) + end

    def weighted_mean(self, digits: int, g: Fraction) -> str | None:
        """``(n₀×m₀ + …) / N``: products, their sum, over the printed N."""
        r, total = self.r, self.N
        counts = self.show.all(list(r.counts), digits)
        means = self.show.all(list(r.means), digits)
        shown = self.show(total, digits)
        n, d = shown.value
        if n <= 0:
            return None
        top, bottom = _sum(
            [
                (a * b, c * e)
                for (a, c), (b, e) in zip(
                    [f.value for f in counts], [f.value for f in means], strict=True
                )
            ]
        )
        operands: list[Number] = [v for pair in zip(r.counts, r.means, strict=True) for v in pair]
        forms = [f for pair in zip(counts, means, strict=True) for f in pair]
        end = self._end(digits, (top * d, bottom * n), g, [*operands, total], [*forms, shown])
        if end is None:
            return None
        terms = " + ".join(
            [
                f"{_wrap(a.text, count, i)}{TIMES}{_wrap(b.text, mean, 1)}"
                for i, (count, mean, a, b) in enumerate(
                    zip(r.counts, r.means, counts, means, strict=True)
                )
            ]
        )
        return f"({terms}) / {_wrap(shown.text, n, 1)}{end}"

    def mean(self, digits: int, values: Sequence[float], mean: Fraction) -> str | None:
        """``(a + b + …) / P``."""
        forms = self.show.all(list(values), digits)
        top, bottom = _sum([form.value for form in forms])
        end = self._end(digits, (top, bottom * self.r.P), mean, values, forms)
        return None if end is None else f"({_joined(values, forms)}) / {self.r.P}{end}"

    def step(self, digits: int, gradient: Fraction, exact: Fraction) -> str | None:
        """``w − η×g``."""
        r, show = self.r, self.show
        w, eta, g = show(r.w, digits), show(r.eta, digits), show(gradient, digits)
        (wn, wd), (en, ed), (gn, gd) = w.value, eta.value, g.value
        value = (wn * ed * gd - en * gn * wd, wd * ed * gd)
        end = self._end(digits, value, exact, (r.w, r.eta, gradient), [w, eta, g])
        if end is None:
            return None
        return f"{w.text} {MINUS} {_wrap(eta.text, en, 1)}{TIMES}{_wrap(g.text, gn, 1)}{end}"

    def difference(
        self, digits: int, g: Fraction, rank_mean: Fraction, exact: Fraction
    ) -> str | None:
        """``η×(g − rank mean)``."""
        show = self.show
        eta, a, b = show(self.r.eta, digits), show(g, digits), show(rank_mean, digits)
        (en, ed), (an, ad), (bn, bd) = eta.value, a.value, b.value
        value = (en * (an * bd - bn * ad), ed * ad * bd)
        end = self._end(digits, value, exact, (self.r.eta, g, rank_mean), [eta, a, b])
        if end is None:
            return None
        return f"{eta.text}{TIMES}({_wrap(a.text, an, 1)} {MINUS} {_wrap(b.text, bn, 1)}){end}"

    def share(self, digits: int, rank: int) -> str | None:
        """``P×nᵣ / N``: every operand follows an operator."""
        r, total = self.r, self.N
        count, shown = self.show(r.counts[rank], digits), self.show(total, digits)
        (cn, cd), (n, d) = count.value, shown.value
        if n == 0:
            return None
        top, bottom = r.P * cn * d, cd * n
        value = (top, bottom) if bottom > 0 else (-top, -bottom)
        end = self._end(
            digits, value, r.scale_factors[rank], (r.counts[rank], total), [count, shown]
        )
        if end is None:
            return None
        return f"{r.P}{TIMES}{_wrap(count.text, cn, 1)} / {_wrap(shown.text, n, 1)}{end}"

    def product(self, digits: int, rank: int) -> str | None:
        """``factorᵣ×mᵣ``."""
        r = self.r
        a, b = r.scale_factors[rank], r.means[rank]
        factor, mean = self.show(a, digits), self.show(b, digits)
        (an, ad), (bn, bd) = factor.value, mean.value
        end = self._end(
            digits, (an * bn, ad * bd), r.compensated_means[rank], (a, b), [factor, mean]
        )
        if end is None:
            return None
        return f"{factor.text}{TIMES}{_wrap(mean.text, bn, 1)}{end}"


def _sum(ratios: list[Ratio]) -> Ratio:
    """The exact sum of ratios over powers of ten (one divides the other)."""
    top, bottom = 0, 1
    for n, d in ratios:
        if d == bottom:
            top += n
        elif d < bottom:
            top += n * (bottom // d)
        else:
            top, bottom = top * (d // bottom) + n, d
    return top, bottom


def _wrap(text: str, value: Number, index: int) -> str:
    """A negative operand after an operator (``index`` > 0) prints in parentheses."""
    return f"({text})" if index and value < 0 else text


def _joined(values: Sequence[Number], forms: list[Printed]) -> str:
    return " + ".join(
        [_wrap(form.text, v, i) for i, (v, form) in enumerate(zip(values, forms, strict=True))]
    )


def _distinct(
    values: Sequence[Number], printer: Printer, most: int = MAX_DIGITS
) -> tuple[int, dict[Number, str]]:
    """``distinct_digits`` and the texts with those digits, each distinct value printed once
    per digit count: the fewest digits (6 to ``most``) that print different values
    differently (``most`` if none does), and value → text."""
    unique = set(values)
    for digits in range(DIGITS, most + 1):
        texts = {value: printer(value, digits).text for value in unique}
        if len(set(texts.values())) == len(texts):
            break
    return digits, texts


def column(
    values: tuple[float, ...], exact: bool = False, printer: Printer | None = None
) -> tuple[str, ...]:
    """A table column: one digit count, the fewest that print different values differently;
    ``exact`` shows small fractions whose decimals do not end as p/q (1/12). Each distinct
    value prints once; ``printer`` shares the forms other columns and lines printed."""
    show = Printer() if printer is None else printer
    digits, texts = _distinct(values, show)
    if exact:
        texts = {value: show.exact(value, digits) for value in set(values)}
    return tuple([texts[value] for value in values])


def verdict(
    result: GradientResult, g_digits: Digits | None = None, rank_mean_digits: Digits | None = None
) -> str:
    return lab_verdict(result.agreement, rank_mean_digits, g_digits)


def expansions(result: GradientResult) -> tuple[Digits | None, Digits | None]:
    """The expansions of g and the rank mean where ``figures`` and ``verdict`` both need them
    (the results pane shows both on every drag): when they differ and neither is 0."""
    agreement = result.agreement
    g, rank_mean = agreement.counted, agreement.plain
    if agreement.agree or not g or not rank_mean:
        # Equal (the schemes agree exactly when the means are equal), or a 0 prints apart.
        return None, None
    return expanded(g), expanded(rank_mean)


# ---- SGD steps -------------------------------------------------------------------------------


# Named tuples rather than frozen dataclasses: built on every slider step, a tuple is quicker.
class Course(NamedTuple):
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
    return Course(verb, point, by, clause, label)


class PathWords(NamedTuple):
    """The trajectory's words: each scheme's course, finals and the chart description."""

    global_course: Course
    rank_mean_course: Course
    start: str  # the first iterate, w
    final_global: str
    final_rank_mean: str
    loss_final_global: str
    loss_final_rank_mean: str
    description: str


def _distinct_pair(first: float, second: float) -> tuple[str, str]:
    """``fmt_distinct((first, second))``, most often from two ``fmt`` calls: six digits tell
    two different values apart when their texts differ, and equal values print alike."""
    texts = fmt(first), fmt(second)
    if texts[0] != texts[1] or first == second:
        return texts
    shown = fmt_distinct((first, second))
    return shown[0], shown[1]


def path_words(path: Trajectory) -> PathWords:
    fixed_global, fixed_rank_mean = _distinct_pair(
        path.fixed_point_global, path.fixed_point_rank_mean
    )
    # Both fixed points printed with the digits that tell them apart.
    global_course = course("global", fixed_global, path.contraction_global)
    rank_course = course("rank mean", fixed_rank_mean, path.contraction_rank_mean)
    final_global, final_rank_mean = _distinct_pair(path.w_global[-1], path.w_rank_mean[-1])
    loss_global, loss_rank_mean = _distinct_pair(path.loss_final_global, path.loss_final_rank_mean)
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
