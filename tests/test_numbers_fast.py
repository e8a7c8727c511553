# ruff: noqa: RUF001 (the lines print the multiplication sign on purpose)
"""The fast paths of ``app.lab.numbers`` against independent exact references.

``printed``/``fmt`` read Python's ``%g``; the reference below is the former implementation
(exact rounding of the value's exact rational, half to even, in Fractions). ``Formula``'s
shapes are built flat; the reference takes the same expression apart from its ``Expr`` tree.
``small_fraction`` runs the continued fraction on ints; the reference is
``Fraction.limit_denominator``.
"""

import math
import random
from fractions import Fraction

import pytest

from app.engine import GradientResult, from_means
from app.engine.verdicts import Agreement
from app.lab import worked
from app.lab.numbers import (
    MINUS,
    SUPERSCRIPT,
    TIMES,
    Digits,
    Expr,
    Formula,
    Number,
    Printer,
    Value,
    Whole,
    difference_line,
    distinct_digits,
    distinct_pair,
    exact_sum,
    fmt,
    fmt_distinct,
    fmt_exact,
    minus,
    over,
    plus,
    printed,
    small_fraction,
    times,
    write,
    written,
)
from app.lab.sentences import reason
from tests.lab_states import as_written


def reference_printed(value: Number, digits: int) -> tuple[str, Fraction, Fraction]:
    """Text, exact printed value and half a unit of the last digit, all from the exact value."""
    exact = Fraction(value)
    if exact == 0:
        return "0", Fraction(0), Fraction(0)
    sign, p, q = (-1 if exact < 0 else 1), abs(exact.numerator), exact.denominator
    e = math.floor(math.log10(p) - math.log10(q))
    while Fraction(p, q) < Fraction(10) ** e:
        e -= 1
    while Fraction(p, q) >= Fraction(10) ** (e + 1):
        e += 1
    scaled = Fraction(p, q) / Fraction(10) ** (e - digits + 1)
    mantissa = round(scaled)  # half to even
    if mantissa >= 10**digits:
        mantissa //= 10
        e += 1
    text_digits = str(mantissa).rstrip("0") or "0"
    if -4 <= e < digits:
        if e >= 0:
            whole, rest = text_digits[: e + 1].ljust(e + 1, "0"), text_digits[e + 1 :]
        else:
            whole, rest = "0", "0" * (-e - 1) + text_digits
        text = f"{whole}.{rest}" if rest else whole
        place = -len(rest)
    else:
        head = text_digits[0] + ("." + text_digits[1:] if len(text_digits) > 1 else "")
        text = f"{head}{TIMES}10{str(e).translate(SUPERSCRIPT)}"
        place = e - (len(text_digits) - 1)
    value_shown = sign * mantissa * Fraction(10) ** (e - digits + 1)
    return (MINUS if sign < 0 else "") + text, value_shown, Fraction(10) ** place / 2


def random_float(rng: random.Random) -> float:
    kind = rng.random()
    if kind < 0.3:  # short decimals, as typed
        return rng.randint(-(10**6), 10**6) / 10 ** rng.randint(0, 6)
    if kind < 0.5:  # whole numbers, near powers of ten and rounding ties
        return float(
            rng.choice([9, 99, 999999, 9999995, 1000000, 5, 25, 125]) * 10 ** rng.randint(-8, 8)
        ) * rng.choice([1, -1])
    if kind < 0.9:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
    return math.ldexp(rng.random(), rng.randint(-1074, 1023))  # anywhere, subnormals too


def test_printed_and_fmt_match_the_exact_reference_on_random_floats() -> None:
    rng = random.Random(8)
    for _ in range(40_000):
        x = random_float(rng)
        digits = rng.choice([6, 6, 6, 3, 7, 12, 17, 25])
        form = printed(x, digits)
        text, value, half = reference_printed(x, digits)
        assert (form.text, Fraction(*form.value), Fraction(*form.half)) == (text, value, half), (
            x,
            digits,
        )
        assert fmt(x, digits) == text


@pytest.mark.parametrize(
    "value",
    [
        Fraction(220),
        Fraction(-7),
        Fraction(1, 3),
        Fraction(-22, 7) * 10**9,
        Fraction(5, 10**9),
        37,
        10**20,
    ],
)
def test_printed_exact_values_match_the_reference(value: Number) -> None:
    """A whole Fraction (N = 220) reads back as 220, not as its stripped digits 22."""
    for digits in (3, 6, 17, 40):
        form = printed(value, digits)
        assert (form.text, Fraction(*form.value), Fraction(*form.half)) == reference_printed(
            value, digits
        )


def test_printed_exact_fractions_match_the_reference() -> None:
    """Exact values print as the exact reference says: ties, values a hair either side of a
    rounding boundary and of a power of ten, and values beyond the float range."""
    rng = random.Random(13)
    values: list[Fraction] = []
    for _ in range(6000):
        digits = rng.choice([3, 6, 7, 12, 17])
        kind = rng.random()
        if kind < 0.4:
            values.append(Fraction(rng.randint(-(10**12), 10**12), rng.randint(1, 10**9)))
        elif kind < 0.8:  # a rounding tie or a power of ten, nudged by far less than a float ulp
            boundary = Fraction(2 * rng.randint(10 ** (digits - 1), 10**digits) + 1, 2)
            if rng.random() < 0.3:  # 10^d - 1/2 units rounds up to 10...0 only from above
                boundary = rng.choice([Fraction(10**digits), Fraction(2 * 10**digits - 1, 2)])
            nudge = Fraction(rng.choice([-1, 0, 1]), 10 ** rng.randint(17, 40))
            values.append((boundary + nudge) * Fraction(10) ** rng.randint(-30, 30))
        else:  # beyond or at the edges of the float range
            values.append(
                Fraction(rng.randint(1, 10**6), 7) * Fraction(10) ** rng.randint(-330, 330)
            )
    for value in values:
        for digits in (3, 6, 7, 12, 17):
            form = printed(value, digits)
            assert (form.text, Fraction(*form.value), Fraction(*form.half)) == reference_printed(
                value, digits
            ), (value, digits)


def reference_small_fraction(value: float, digits: int = 6) -> Fraction | None:
    top, bottom = printed(value, digits).value
    if top / bottom == value:
        return None
    exact = Fraction(value)
    guess = exact.limit_denominator(1000)
    if guess.denominator == 1 or (guess != exact and float(guess) != value):
        return None
    q = guess.denominator
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    if q == 1 and Fraction(*printed(guess, digits).value) == guess:
        return None
    return guess


def test_small_fraction_matches_limit_denominator() -> None:
    rng = random.Random(9)
    values = [p / q for q in range(1, 1200, 7) for p in range(-40, 41, 3)]
    values += [rng.uniform(-5, 5) for _ in range(3000)] + [1 / 3 + 1e-12, 1 / 7 - 1e-16]
    for x in values:
        assert small_fraction(x) == reference_small_fraction(x), x


def test_printer_exact_is_fmt_exact() -> None:
    """``Printer.exact`` (the table columns' p/q or decimal) says what ``fmt_exact`` says."""
    rng = random.Random(15)
    values = [p / q for q in range(1, 1200, 7) for p in range(-40, 41, 3)]
    values += [random_float(rng) for _ in range(3000)] + [1 / 1024, 1.7976931348623157e308]
    printer = Printer()
    for x in values:
        for digits in (6, 7, 11, 17):
            assert printer.exact(x, digits) == fmt_exact(x, digits), (x, digits)


def test_columns_are_one_digit_count_for_all() -> None:
    """``worked.column`` (each distinct value once, a shared Printer) against its definition:
    the fewest digits (6 to 17) that print different values differently, then ``fmt_exact``."""
    rng = random.Random(16)
    for _ in range(500):
        r = means_result(rng) if rng.random() < 0.5 else close_result(rng)
        printer = worked.lines(r).printer
        for values, exact in [
            (r.counts, False),
            (r.means, False),
            (r.compensated_means, False),
            (r.scale_factors, True),
            (r.influence_rank_mean, True),
            ((*r.influence_global, *r.influence_rank_mean), True),
        ]:
            unique = set(values)
            digits = next(
                (d for d in range(6, 18) if len({fmt(v, d) for v in unique}) == len(unique)), 17
            )
            expected = tuple(fmt_exact(v, digits) if exact else fmt(v, digits) for v in values)
            assert worked.column(values, exact, printer) == expected
            assert worked.column(values, exact) == expected


def test_exact_sum_is_the_fraction_sum_of_the_numbers_as_written() -> None:
    rng = random.Random(10)
    for _ in range(2000):
        values: list[Number] = [random_float(rng) for _ in range(rng.randint(0, 9))]
        if rng.random() < 0.2:
            values.append(Fraction(rng.randint(-9, 9), rng.randint(1, 9)))
        expected = sum(
            (as_written(v) if isinstance(v, float) else Fraction(v) for v in values), Fraction(0)
        )
        assert exact_sum(values) == expected
    assert exact_sum([0.1, 0.2, -0.3]) == 0  # the floats' binary values sum to 2.8e-17


def means_result(rng: random.Random) -> GradientResult:
    p = rng.randint(1, 8)
    counts = [float(rng.choice([0, 1, 2, 7, 64, 1000, 0.5, 2.25])) for _ in range(p)]
    counts[0] = counts[0] or 3.0
    means = [
        rng.choice([rng.randint(-100, 100) / 10, rng.uniform(-1e6, 1e6), 0.0]) for _ in range(p)
    ]
    return from_means(counts, means, eta=rng.randint(1, 200) / 100, w=rng.randint(-40, 40) / 2)


def test_flat_shapes_are_their_trees_as_written() -> None:
    """Each Formula shape prints and checks like ``written`` on the tree it stands for."""
    rng = random.Random(11)
    for _ in range(300):
        r = means_result(rng)
        g, rm = r.agreement.counted, r.agreement.plain
        counts, means, ranks = r.counts, r.means, r.P
        total = sum((Fraction(n) for n in counts), Fraction(0))
        eta, w = r.eta, r.w
        exact_step = Fraction(w) - Fraction(eta) * g
        cases = [
            (Formula.total(counts), plus(*map(Value, counts)), total),
            (
                Formula.weighted_mean(counts, means, total),
                over(
                    plus(*(times(Value(n), Value(m)) for n, m in zip(counts, means, strict=True))),
                    Value(total),
                ),
                g,
            ),
            (Formula.mean(means, ranks), over(plus(*map(Value, means)), Whole(ranks)), rm),
            (Formula.step(w, eta, g), minus(Value(w), times(Value(eta), Value(g))), exact_step),
            (
                Formula.scaled_difference(eta, g, rm),
                times(Value(eta), minus(Value(g), Value(rm))),
                Fraction(eta) * (g - rm),
            ),
            (
                Formula.share(ranks, -counts[0], total),
                over(times(Whole(ranks), Value(-counts[0])), Value(total)),
                -r.scale_factors[0],
            ),
            (
                Formula.product(-means[0], means[-1]),
                times(Value(-means[0]), Value(means[-1])),
                -means[0] * means[-1],
            ),
        ]
        printer = Printer()
        for flat, tree, result in cases:
            whole = Formula(tree)
            assert whole.render(whole.texts(6)) == flat.render(flat.texts(6))
            assert whole.wrapped == flat.wrapped
            expected = written(tree, result, most=60)
            assert write(flat, result, most=60, printer=printer) == expected
            assert write(flat, result, most=60) == expected


def test_a_float_and_the_exact_value_it_reads_as_are_one_operand() -> None:
    """η = 0.35 (a float) and the plain rank mean 7/20 (exact) are one number as written: the
    line prints both as 0.35, not 0.34999999999999998 against 0.35 (its 17 digits tell the
    float's binary value from 7/20). Two numbers that differ still print apart."""
    eta, g = 0.35, Fraction(11, 84)
    line = written(
        times(Value(eta), minus(Value(g), Value(Fraction(7, 20)))),
        as_written(eta) * (g - Fraction(7, 20)),
    )
    assert (line.expression, line.digits) == ("0.35×(0.130952 − 0.35)", 6)
    near = Fraction(7, 20) + Fraction(1, 10**9)
    apart = written(
        times(Value(eta), minus(Value(g), Value(near))), as_written(eta) * (g - near), most=60
    )
    assert (apart.expression, apart.digits) == ("0.35×(0.130952381 − 0.350000001)", 9)


def test_lines_are_written_from_the_trees() -> None:
    """``worked.lines`` (flat shapes, one shared Printer) says what the trees say."""
    rng = random.Random(12)
    for _ in range(200):
        r = means_result(rng)
        lines = worked.lines(r)
        total = sum((Fraction(n) for n in r.counts), Fraction(0))
        g = r.agreement.counted
        tree = over(
            plus(*(times(Value(n), Value(m)) for n, m in zip(r.counts, r.means, strict=True))),
            Value(total),
        )
        assert lines.g == str(written(tree, g, most=60))
        for n, factor, line in zip(r.counts, r.scale_factors, lines.factors, strict=True):
            share = over(times(Whole(r.P), Value(n)), Value(total))
            assert line == str(written(share, factor, most=60))


def close_result(rng: random.Random) -> GradientResult:
    """Means-form states where lines need more digits, fewer digits for the result, or more
    than 17 digits (rank means that differ far below float resolution)."""
    p = rng.randint(2, 8)
    counts = [
        float(rng.choice([0, 1, 3, 7, 64, 10**6, 10**9, rng.randint(1, 99)])) for _ in range(p)
    ]
    counts[0] = counts[0] or 5.0
    base = rng.choice([1.0, 2.5, -3.3, 1e-7, 123456.789, 9.99999949])
    means = [
        rng.choice([base, base + 1e-9, base * (1 + 2**-52), rng.randint(-99, 99) / 10])
        for _ in range(p)
    ]
    return from_means(
        counts, means, eta=rng.choice([1.0, 0.37, 3.5, 1e-3]), w=rng.choice([0.0, 1e6, -7.25, 2.5])
    )


def slider_result(rng: random.Random) -> GradientResult:
    """States the sliders reach: in about 1 of 100 a mean prints like one of its operands,
    which the printed line then states exactly ((2.1 + 4 + ... + 7.1) / 6 = 2.1)."""
    p = rng.randint(2, 8)
    counts = [float(rng.randint(1 if r == 0 else 0, 64)) for r in range(p)]
    means = [rng.randint(-100, 100) / 10 for _ in range(p)]
    return from_means(counts, means, eta=rng.randint(1, 200) / 100, w=rng.randint(-40, 40) / 2)


def test_all_lines_are_the_lines_written_from_the_trees() -> None:
    """Every line of ``worked.lines`` (its quick shapes, 6 to 17 digits and fewer-digit
    results) is the line ``written`` makes of the same tree with the exact result."""
    rng = random.Random(14)
    for index in range(900):
        r = (means_result, close_result, slider_result)[index % 3](rng)
        lines = worked.lines(r)
        counts, means, ranks = r.counts, r.means, r.P
        total = sum((Fraction(n) for n in counts), Fraction(0))
        g, rm = r.agreement.counted, r.agreement.plain
        w, eta = Fraction(r.w), Fraction(r.eta)

        def step(gradient: Fraction, r: GradientResult = r) -> Expr:
            return minus(Value(r.w), times(Value(r.eta), Value(gradient)))

        expected = {
            "N": (plus(*map(Value, counts)), total),
            "g": (
                over(
                    plus(*(times(Value(n), Value(m)) for n, m in zip(counts, means, strict=True))),
                    Value(total),
                ),
                g,
            ),
            "rank_mean": (over(plus(*map(Value, means)), Whole(ranks)), rm),
            "compensated": (over(plus(*map(Value, r.compensated_means)), Whole(ranks)), g),
            "w_new": (step(g), w - eta * g),
            "w_new_rank_mean": (step(rm), w - eta * rm),
            "difference": (times(Value(r.eta), minus(Value(g), Value(rm))), eta * (g - rm)),
        }
        for name, (tree, value) in expected.items():
            assert getattr(lines, name) == str(written(tree, value, most=60)), (name, r)
        for n, f, m, c, share, product in zip(
            counts,
            r.scale_factors,
            means,
            r.compensated_means,
            lines.factors,
            lines.compensated_means,
            strict=True,
        ):
            assert share == str(
                written(over(times(Whole(ranks), Value(n)), Value(total)), f, most=60)
            )
            assert product == str(written(times(Value(f), Value(m)), c, most=60))


@pytest.mark.parametrize(
    ("expr", "result", "line"),
    [
        # The result may not print like an operand it is not (1 + 10⁻⁹ is no "1")...
        (plus(Value(1.0), Value(1e-9)), 1.000000001, "1 + 1×10⁻⁹ = 1.000000001"),
        # ...but it may when it is that operand, or rounds to it where the sum holds.
        (plus(Value(2.0), Value(0.0)), 2.0, "2 + 0 = 2"),
        (plus(Value(2.0), Value(1e-12)), 2.0, "2 + 1×10⁻¹² = 2"),
        # ...or when the printed line is exact: the floats' mean is 2.09999999999999994, the
        # first float 2.10000000000000009 (this line had 17 digits, ~1% of the lab's states).
        (
            over(plus(Value(2.1), Value(1.4), Value(2.8)), Whole(3)),
            (Fraction(2.1) + Fraction(1.4) + Fraction(2.8)) / 3,
            "(2.1 + 1.4 + 2.8) / 3 = 2.1",
        ),
    ],
)
def test_a_result_prints_like_an_operand_only_when_it_is_one(
    expr: Expr, result: float | Fraction, line: str
) -> None:
    assert str(written(expr, result)) == line


# ---- one exact value at many digit counts (the results pane: figures and verdict) -------------


def boundary_fraction(rng: random.Random) -> Fraction:
    """A value at, or a hair either side of, a rounding tie or a power of ten (3 to 17 digits),
    anywhere from 10⁻⁴⁰ to 10⁴⁰; or a plain ratio."""
    if rng.random() < 0.3:
        return Fraction(rng.randint(-(10**12), 10**12) or 1, rng.randint(1, 10**9))
    digits = rng.randint(3, 17)
    boundary = Fraction(2 * rng.randint(10 ** (digits - 1), 10**digits) + 1, 2)
    if rng.random() < 0.3:
        boundary = rng.choice([Fraction(10**digits), Fraction(2 * 10**digits - 1, 2)])
    nudge = Fraction(rng.choice([-1, 0, 1]), 10 ** rng.randint(17, 40))
    return (boundary + nudge) * Fraction(10) ** rng.randint(-40, 25) * rng.choice([1, -1])


def test_digits_round_like_the_exact_reference() -> None:
    """``Digits`` (one expansion, a divmod per digit count) prints what the reference prints."""
    rng = random.Random(17)
    for _ in range(4000):
        value = boundary_fraction(rng)
        expansion = Digits(value.numerator, value.denominator)
        for digits in (3, 6, 7, 12, 16, 17):
            assert expansion.text(digits) == reference_printed(value, digits)[0], (value, digits)


def pane_pairs(rng: random.Random, count: int) -> list[tuple[Fraction, Fraction]]:
    """Pairs of exact means as the results pane sees them (the lab's states, states that need
    more or fewer digits, values a hair from a boundary, the same value printed at 6 and 7
    digits in two notations, a value and its double, near-equal values, zeros)."""
    pairs = []
    for index in range(count):
        kind = index % 6
        if kind < 2:
            r = means_result(rng) if kind else close_result(rng)
            pairs.append((r.agreement.plain, r.agreement.counted))
        elif kind == 2:
            pairs.append((boundary_fraction(rng), boundary_fraction(rng)))
        elif kind == 3:
            a = boundary_fraction(rng)
            pairs.append((a, a * (1 + Fraction(rng.choice([1, -1]), 10 ** rng.randint(3, 70)))))
        elif kind == 4:
            b = Fraction(rng.choice([1, 2, 5, 10, 25]) * 10 ** rng.randint(4, 8))
            b *= rng.choice([1, -1])
            a = 2 * b + Fraction(rng.randint(-9, 9), 10 ** rng.randint(0, 3))
            pairs.append(rng.choice([(a, b), (b, a), (2 * b, b)]))
        else:
            a = boundary_fraction(rng)
            pairs.append(rng.choice([(a, Fraction(0)), (a, a), (a, -a), (Fraction(0), a)]))
    return pairs


def test_difference_line_is_the_line_written() -> None:
    """``difference_line`` (the verdict's "x - y = d" on rounded mantissas) is ``written``'s line
    of the same tree wherever it answers, and it answers wherever ``written`` holds within
    17 digits with nonzero operands."""
    rng = random.Random(18)
    answered = 0
    for a, b in pane_pairs(rng, 6000):
        quick = difference_line(a, b)
        line = written(minus(Value(a), Value(b)), a - b, most=60)
        if quick is None:
            assert not a or not b or a == b or line.digits > 17, (a, b, str(line))
            continue
        answered += 1
        assert quick == (line.digits, fmt(a, line.digits), fmt(b, line.digits), line.result), (
            a,
            b,
        )
    assert answered > 4000


def test_distinct_pair_is_fmt_distinct() -> None:
    rng = random.Random(19)
    for a, b in pane_pairs(rng, 6000):
        quick = distinct_pair(a, b)
        if quick is not None:
            assert quick == fmt_distinct((a, b), most=60), (a, b)
        else:
            assert distinct_digits((a, b), most=60) > 17, (a, b)


def reference_figures(result: GradientResult) -> worked.Figures:
    """``worked.figures`` as it was: every figure from ``fmt``/``fmt_distinct`` and Fractions."""
    g, rank_mean = result.agreement.counted, result.agreement.plain
    w, eta = as_written(result.w), as_written(result.eta)
    shown_g, shown_rank_mean = fmt_distinct((g, rank_mean), most=60)
    steps = ((result.w_new, w - eta * g), (result.w_new_rank_mean, w - eta * rank_mean))
    digits = distinct_digits([rounded for rounded, _ in steps])
    w_new, w_new_rank_mean = (
        fmt(exact if rounded == 0 and exact else rounded, digits) for rounded, exact in steps
    )
    return worked.Figures(
        N=fmt(result.N),
        global_gradient=shown_g,
        rank_mean_gradient=shown_rank_mean,
        w_new=w_new,
        w_new_rank_mean=w_new_rank_mean,
        w_new_difference=fmt(eta * (g - rank_mean)),
    )


def reference_verdict(agreement: Agreement) -> str:
    """``lab_verdict`` as it was: the difference line always from ``written``."""
    if agreement.agree:
        return f"Both schemes agree here: {reason(agreement)}."
    plain, counted = agreement.plain, agreement.counted
    high, low = (plain, counted) if plain > counted else (counted, plain)
    line = written(minus(Value(high), Value(low)), high - low, most=60)
    side = "higher" if plain > counted else "lower"
    shown_plain, shown_counted = fmt(plain, line.digits), fmt(counted, line.digits)
    if shown_plain == shown_counted:
        return (
            f"The plain rank mean gives {fmt(plain)} against g = {fmt(counted)}, alike to"
            f" {line.digits} digits, yet {fmt(high - low)} {side}: {reason(agreement)}."
        )
    return (
        f"The plain rank mean gives {shown_plain} instead of"
        f" {shown_counted} ({line.result} {side}): {reason(agreement)}."
    )


def step_result(rng: random.Random) -> GradientResult:
    """States whose steps land on or a hair from 0 (w = η·g, w = η·rank mean)."""
    r = means_result(rng)
    target = rng.choice([r.global_gradient, r.rank_mean_gradient]) * r.eta
    return from_means(r.counts, r.means, eta=r.eta, w=target if math.isfinite(target) else r.w)


def test_figures_and_verdict_are_the_reference() -> None:
    rng = random.Random(20)
    for index in range(3000):
        r = (means_result, close_result, step_result)[index % 3](rng)
        assert worked.figures(r) == reference_figures(r), r
        assert worked.verdict(r) == reference_verdict(r.agreement), r
