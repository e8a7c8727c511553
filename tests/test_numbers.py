# ruff: noqa: RUF001 (numbers print true minus and multiplication signs)
"""The rule every printed number follows (``app.lab.numbers``), against references in exact
arithmetic: rounding done on Fractions, ``Fraction.limit_denominator``, sums of Fractions."""

import math
import random
from fractions import Fraction

import pytest

from app.engine.decimals import decimal_ratio, ratio_sum
from app.lab.numbers import (
    MINUS,
    Number,
    Printer,
    distinct_digits,
    fmt,
    fmt_distinct,
    minus_signs,
    printed,
)
from app.lab.worked import column
from tests.lab_states import as_written

SUPER = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def reference(value: Number, digits: int) -> tuple[str, Fraction, Fraction]:
    """Text, exact printed value and half a unit of the last digit, from the exact value:
    rounded half to even on Fractions, written as ``%g`` writes (fixed from 10⁻⁴ below 10ᵈ)."""
    exact = Fraction(value)
    if exact == 0:
        return "0", Fraction(0), Fraction(0)
    size = abs(exact)
    e = math.floor(math.log10(size.numerator) - math.log10(size.denominator))
    while size < Fraction(10) ** e:
        e -= 1
    while size >= Fraction(10) ** (e + 1):
        e += 1
    mantissa = round(size / Fraction(10) ** (e - digits + 1))  # half to even
    if mantissa == 10**digits:
        mantissa, e = mantissa // 10, e + 1
    shown = str(mantissa).rstrip("0")
    if -4 <= e < digits:
        if e >= 0:
            whole, rest = shown[: e + 1].ljust(e + 1, "0"), shown[e + 1 :]
        else:
            whole, rest = "0", "0" * (-e - 1) + shown
        text, place = (f"{whole}.{rest}" if rest else whole), -len(rest)
    else:
        head = shown[0] + ("." + shown[1:] if len(shown) > 1 else "")
        text, place = f"{head}×10{str(e).translate(SUPER)}", e - len(shown) + 1
    sign = -1 if exact < 0 else 1
    value_shown = sign * mantissa * Fraction(10) ** (e - digits + 1)
    return (MINUS if sign < 0 else "") + text, value_shown, Fraction(10) ** place / 2


def random_float(rng: random.Random) -> float:
    kind = rng.random()
    if kind < 0.3:  # short decimals, as typed
        return rng.randint(-(10**6), 10**6) / 10 ** rng.randint(0, 6)
    if kind < 0.5:  # near powers of ten and rounding ties
        return rng.choice([9, 99, 999999, 9999995, 1000000, 5, 25, 125]) * 10.0 ** rng.randint(
            -8, 8
        )
    if kind < 0.9:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
    return math.ldexp(rng.random(), rng.randint(-1074, 1023))  # anywhere, subnormals too


def random_fraction(rng: random.Random) -> Fraction:
    """Exact values as the lab's means are: ratios of decimals, some on a rounding tie."""
    if rng.random() < 0.3:  # a tie at the 6th digit: 1.234565, 0.0001234565, …
        return Fraction(rng.randint(10**6, 10**7 - 1) * 10 + 5, 10 ** rng.randint(1, 12))
    top = rng.randint(-(10**12), 10**12) or 1
    return Fraction(top, rng.randint(1, 10**9)) * Fraction(10) ** rng.randint(-40, 40)


def check(form: tuple[str, tuple[int, int], tuple[int, int]], value: Number, digits: int) -> None:
    text, exact, half = reference(value, digits)
    assert (form[0], Fraction(*form[1]), Fraction(*form[2])) == (text, exact, half), (value, digits)


def test_floats_print_as_exact_rounding_prints_them() -> None:
    rng = random.Random(8)
    for _ in range(20_000):
        x = random_float(rng)
        digits = rng.choice([6, 6, 6, 3, 7, 12, 17, 25])
        check(printed(x, digits), x, digits)
        assert fmt(x, digits) == reference(x, digits)[0]


def test_exact_values_print_as_exact_rounding_prints_them() -> None:
    """One printer per value, asked for digit counts in any order (one expansion is reused)."""
    rng = random.Random(9)
    for _ in range(3000):
        value = random_fraction(rng)
        printer = Printer()
        for digits in rng.sample([6, 5, 4, 3, 7, 12, 17, 19, 20, 25, 60], 6):
            check(printer(value, digits), value, digits)
            check(printed(value, digits), value, digits)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.5, "2.5"),
        (-0.05, "−0.05"),
        (1e-5, "1×10⁻⁵"),
        (123456789.0, "1.23457×10⁸"),
        (Fraction(1, 3), "0.333333"),
        (Fraction(-22, 7) * 10**9, "−3.14286×10⁹"),
        (10**20, "1×10²⁰"),
        (0, "0"),
    ],
)
def test_six_digits_true_minus_and_powers_of_ten(value: Number, text: str) -> None:
    assert fmt(value) == text


def test_values_that_differ_print_differently_with_the_fewest_digits() -> None:
    rng = random.Random(10)
    for _ in range(2000):
        a = random_float(rng)
        b = rng.choice([a, math.nextafter(a, math.inf), a * (1 + 1e-7), a + 1e-5, -a, 3 * a])
        exact = rng.choice([True, False])
        values = (Fraction(a), Fraction(b)) if exact else (a, b)
        digits = distinct_digits(values, most=60)
        shown = fmt_distinct(values, most=60)
        assert shown == tuple(reference(v, digits)[0] for v in values)
        assert (shown[0] == shown[1]) == (values[0] == values[1]), values
        if digits > 6:  # one digit fewer prints them alike
            assert reference(values[0], digits - 1)[0] == reference(values[1], digits - 1)[0]


def test_a_column_shows_small_fractions_whose_decimals_do_not_end() -> None:
    rng = random.Random(11)
    values = [1 / 12, 1 / 3, -2 / 7, 0.125, 0.1, 0.5, 1.0, 2.0, 1 / 1001, 4 / 3, 1e-9]
    values += [rng.randint(-999, 999) / rng.randint(2, 1000) for _ in range(300)]
    for value in values:
        (shown,) = column((value,), exact=True)
        nearest = Fraction(value).limit_denominator(1000)
        decimals_end = reference(nearest, 6)[1] == nearest
        if nearest.denominator > 1 and float(nearest) == value and not decimals_end:
            sign = MINUS if nearest < 0 else ""
            assert shown == f"{sign}{abs(nearest.numerator)}/{nearest.denominator}", value
        else:
            assert shown == reference(value, 6)[0], value
    assert column((1 / 12, 0.125, 0.1), exact=True) == ("1/12", "0.125", "0.1")


def test_ratio_sum_is_the_sum_of_the_numbers_as_written() -> None:
    """The N line's total (and the engine's exact means'): floats as written, summed."""
    rng = random.Random(12)
    for _ in range(500):
        values = [random_float(rng) for _ in range(rng.randint(0, 8))]
        values = [v for v in values if abs(v) < 1e300]
        total = Fraction(*ratio_sum(map(decimal_ratio, values)))
        assert total == sum(map(as_written, values), Fraction(0))
    assert Fraction(*ratio_sum(map(decimal_ratio, [0.1, 0.2]))) == Fraction(3, 10)


def test_messages_get_true_minus_signs_before_numbers_only() -> None:
    assert minus_signs("got -1.0 and -.5, not x-1 or a-b") == "got −1.0 and −.5, not x-1 or a-b"


def test_not_a_finite_number_is_refused() -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        fmt(math.inf)
