# ruff: noqa: RUF002, RUF003 (this module prints and parses − and × on purpose)
"""One rule for every number the app shows. Pure Python: no web, no engine.

- A number has 6 significant digits unless more are needed: a written-out line ("a − b = c",
  "(2×1 + 6×3) / 8 = 2.5") takes, per line, the fewest digits (6 or more) that print its
  distinct operands as distinct strings and make the line true as printed: the exact value of
  the printed expression rounds to the printed result at the result's last printed digit.
- Values shown side by side (g against the rank mean) likewise never print alike unless equal.
- A small exact fraction is shown as one where it is the truth and its decimals do not end
  (1/12, not 0.0833333).
- True minus signs (U+2212) and ×10ⁿ exponents, in numbers and in messages.

``parse`` reads a printed number back (value and half a unit of its last digit): the tests use
it to check every printed line, and ``written`` uses it to check its own.
"""

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

MINUS = "\u2212"
TIMES = "\N{MULTIPLICATION SIGN}"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
DIGITS = 6
MAX_DIGITS = 17
# Denominators up to this are shown as fractions when the decimals do not end.
MAX_DENOMINATOR = 1000

Number = float | int | Fraction
LOG10_2 = math.log10(2)


def _scientific(value: Number, digits: int) -> tuple[int, str, int]:
    """``(sign, mantissa digits, exponent)`` of value rounded to ``digits`` significant digits."""
    if not isinstance(value, float | int):  # a Fraction (float first: the Fraction ABC is slow)
        sign = -1 if value < 0 else 1
        p, q = abs(value.numerator), value.denominator
        # 10**e <= p/q < 10**(e + 1): a guess from the bit lengths, then corrected.
        e = math.floor((p.bit_length() - q.bit_length()) * LOG10_2)
        while (p * 10**-e if e < 0 else p) < (q if e < 0 else q * 10**e):
            e -= 1
        while (p * 10 ** (-e - 1) if e + 1 < 0 else p) >= (q if e + 1 < 0 else q * 10 ** (e + 1)):
            e += 1
        shift = e - digits + 1
        top, bottom = (p, q * 10**shift) if shift >= 0 else (p * 10**-shift, q)
        mantissa, rest = divmod(top, bottom)
        if 2 * rest > bottom or (2 * rest == bottom and mantissa % 2):  # half to even
            mantissa += 1
        if mantissa >= 10**digits:
            mantissa //= 10
            e += 1
        return sign, str(mantissa), e
    head, tail = f"{abs(value):.{digits - 1}e}".split("e")
    return (-1 if value < 0 else 1), head.replace(".", ""), int(tail)


# An exact rational as (numerator, denominator > 0), not reduced: the lines' arithmetic adds and
# multiplies a few decimals, far faster on plain ints than with Fraction's gcd at every step.
Ratio = tuple[int, int]


class Printed(NamedTuple):
    """One number as printed: the text, its exact value and half a unit of its last digit.

    A named tuple, not a frozen dataclass: written-out lines build many, and a tuple is quicker.
    """

    text: str
    value: Ratio
    half: Ratio


@lru_cache(maxsize=65536, typed=True)
def printed(value: Number, digits: int = DIGITS) -> Printed:
    """``value`` to ``digits`` significant digits, ``%g``-style, true minus, ×10ⁿ exponents;
    with the value a reader reads back and half a unit of the last digit shown."""
    if value == 0:
        return Printed("0", (0, 1), (0, 1))
    sign, digits_text, exponent = _scientific(value, digits)
    exact = sign * int(digits_text)
    shift = exponent - len(digits_text) + 1
    ratio = (exact * 10**shift, 1) if shift >= 0 else (exact, 10**-shift)
    mantissa = digits_text.rstrip("0") or "0"
    if -4 <= exponent < digits:
        if exponent >= 0:
            whole = mantissa[: exponent + 1].ljust(exponent + 1, "0")
            rest = mantissa[exponent + 1 :]
        else:
            whole, rest = "0", "0" * (-exponent - 1) + mantissa
        text = f"{whole}.{rest}" if rest else whole
        place = -len(rest)
    else:
        head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        text = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
        place = exponent - (len(mantissa) - 1)
    half = (10**place, 2) if place >= 0 else (1, 2 * 10**-place)
    return Printed((MINUS if sign < 0 else "") + text, ratio, half)


def fmt(value: Number, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits, ``%g``-style, true minus, ×10ⁿ exponents."""
    return printed(value, digits).text


def _shown_ratio(value: Number, digits: int) -> Ratio:
    return printed(value, digits).value


def shown(value: Number, digits: int = DIGITS) -> Fraction:
    """The exact value of ``fmt(value, digits)``: what a reader computes with."""
    return Fraction(*_shown_ratio(value, digits))


@lru_cache(maxsize=16384, typed=True)
def small_fraction(value: Number, digits: int = DIGITS) -> Fraction | None:
    """The fraction p/q (q ≤ 1000, q > 1) that ``value`` is, when its decimals do not end.

    A float counts as that fraction when it is the float nearest to it.
    """
    top, bottom = printed(value, digits).value
    if isinstance(value, float) and top / bottom == value:
        return None  # the printed decimal reads back as that very float (0.5, 0.1, 2.5)
    exact = Fraction(value)
    guess = exact.limit_denominator(MAX_DENOMINATOR)
    if guess.denominator == 1 or (guess != exact and float(guess) != float(value)):
        return None
    q = guess.denominator
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    if q == 1 and shown(guess, digits) == guess:
        return None  # a decimal that ends within the shown digits: 0.125 stays 0.125
    return guess


def fmt_exact(value: Number, digits: int = DIGITS) -> str:
    """Like ``fmt``, but a small exact fraction whose decimals do not end prints as ``p/q``."""
    fraction = small_fraction(value, digits) if value else None
    if fraction is None:
        return fmt(value, digits)
    sign = MINUS if fraction < 0 else ""
    return f"{sign}{abs(fraction.numerator)}/{fraction.denominator}"


_NUMBER = re.compile(
    r"^(?P<sign>[\u2212-])?(?P<int>\d+)(?:\.(?P<frac>\d+))?(?:\u00d710(?P<exp>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?$"
)
_FRACTION = re.compile(r"^(?P<sign>[\u2212-])?(?P<p>\d+)/(?P<q>\d+)$")


def parse(text: str) -> tuple[Fraction, Fraction]:
    """A printed number back: its value and half a unit of its last printed digit.

    ``"0"`` and a fraction ``p/q`` claim to be exact (half-unit 0). Raises ValueError.
    """
    text = text.strip()
    fraction = _FRACTION.match(text)
    if fraction:
        value = Fraction(int(fraction["p"]), int(fraction["q"]))
        return (-value if fraction["sign"] else value), Fraction(0)
    match = _NUMBER.match(text)
    if not match:
        raise ValueError(f"not a printed number: {text!r}")
    decimals = match["frac"] or ""
    exponent = int(match["exp"].translate(FROM_SUPERSCRIPT)) if match["exp"] else 0
    place = exponent - len(decimals)
    digits = int(match["int"] + decimals) * (-1 if match["sign"] else 1)
    if place >= 0:
        value, half = Fraction(digits * 10**place), Fraction(10**place, 2)
    else:
        value, half = Fraction(digits, 10**-place), Fraction(1, 2 * 10**-place)
    return value, (Fraction(0) if value == 0 else half)


def distinct_digits(values: Iterable[Number], start: int = DIGITS, most: int = MAX_DIGITS) -> int:
    """The fewest digits (≥ ``start``) that print different values as different strings
    (``most`` digits at most: 17 tell floats apart; exact fractions may need more)."""
    unique = set(values)
    for digits in range(start, most + 1):
        if len({fmt(v, digits) for v in unique}) == len(unique):
            return digits
    return most


def fmt_distinct(
    values: Sequence[Number], start: int = DIGITS, most: int = MAX_DIGITS
) -> tuple[str, ...]:
    """Values shown together: one digit count for all, the fewest that keeps them distinct."""
    digits = distinct_digits(values, start, most)
    return tuple(fmt(v, digits) for v in values)


_ASCII_MINUS = re.compile(r"(?<![\w)\].])-(?=\.?\d)")


def minus_signs(text: str) -> str:
    """A message with true minus signs before its numbers ("got -1.0" → "got −1.0")."""
    return _ASCII_MINUS.sub(MINUS, text)


# ---- written-out lines -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Value:
    """An operand printed with the line's digits, optionally with a unit after it.

    ``value`` is in that unit; ``scale`` converts it to the line's base unit (1 µs = 10⁻⁶ s).
    """

    value: Number
    unit: str = ""
    scale: Fraction = Fraction(1)


@dataclass(frozen=True, slots=True)
class Whole:
    """An exact whole number printed as it is (P, 2, the 1 of P − 1)."""

    value: int


@dataclass(frozen=True, slots=True)
class Op:
    """``items`` joined by one operator: ``+``, ``-``, ``*`` or ``/`` (printed + − × /)."""

    operator: str
    items: tuple["Expr", ...]


@dataclass(frozen=True, slots=True)
class Group:
    """An expression in parentheses."""

    inner: "Expr"


Expr = Value | Whole | Op | Group

_SPACED = {"+": " + ", "-": f" {MINUS} ", "*": TIMES, "/": " / "}


def plus(*items: Expr) -> Op:
    return Op("+", items)


def minus(a: Expr, b: Expr) -> Op:
    return Op("-", (a, b))


def times(*items: Expr) -> Op:
    return Op("*", items)


def over(a: Expr, b: Expr) -> Op:
    return Op("/", (a, b))


def _values(expr: Expr) -> list[Number]:
    if isinstance(expr, Value):
        return [expr.value]
    if isinstance(expr, Whole):
        return []
    if isinstance(expr, Group):
        return _values(expr.inner)
    return [v for item in expr.items for v in _values(item)]


def _render(expr: Expr, digits: int, first: bool = True) -> str:
    if isinstance(expr, Value):
        text = fmt(expr.value, digits) + (f" {expr.unit}" if expr.unit else "")
        # A negative operand after an operator goes in parentheses: 2×(−1), 3 + (−1).
        return f"({text})" if expr.value < 0 and not first else text
    if isinstance(expr, Whole):
        return str(expr.value).replace("-", MINUS)
    if isinstance(expr, Group):
        return f"({_render(expr.inner, digits)})"
    parts = []
    for index, item in enumerate(expr.items):
        text = _render(item, digits, first and index == 0)
        if isinstance(item, Op) and _needs_parentheses(expr.operator, item.operator, index):
            text = f"({text})"
        parts.append(text)
    return _SPACED[expr.operator].join(parts)


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _needs_parentheses(outer: str, inner: str, index: int) -> bool:
    """An inner operation binds less tightly, or sits right of − or / at the same level."""
    if _PRECEDENCE[inner] != _PRECEDENCE[outer]:
        return _PRECEDENCE[inner] < _PRECEDENCE[outer]
    return index > 0 and outer in "-/"


def _evaluate(expr: Expr, digits: int) -> Ratio:
    """The exact value of the expression as printed (each operand as its printed digits)."""
    if isinstance(expr, Value):
        n, d = _shown_ratio(expr.value, digits)
        return n * expr.scale.numerator, d * expr.scale.denominator
    if isinstance(expr, Whole):
        return expr.value, 1
    if isinstance(expr, Group):
        return _evaluate(expr.inner, digits)
    n, d = _evaluate(expr.items[0], digits)
    for item in expr.items[1:]:
        m, e = _evaluate(item, digits)
        if expr.operator == "+":
            n, d = n * e + m * d, d * e
        elif expr.operator == "-":
            n, d = n * e - m * d, d * e
        elif expr.operator == "*":
            n, d = n * m, d * e
        else:
            n, d = (n * e, d * m) if m > 0 else (-n * e, -d * m)
    return n, d


def holds(expression: Ratio, result: Printed, scale: Fraction = Fraction(1)) -> bool:
    """The printed expression's exact value rounds to ``result`` at its last printed digit.

    ``scale`` converts the result's unit to the expression's (the result "15 ms": 10⁻³).
    """
    n, d = expression
    (vn, vd), (hn, hd) = result.value, result.half
    vn, vd = vn * scale.numerator, vd * scale.denominator
    hn, hd = hn * scale.numerator, hd * scale.denominator
    # |n/d - v| < half, in integers (d > 0); exactly equal also holds (half is 0 for "0").
    gap = abs(n * vd - vn * d)
    return gap == 0 or gap * hd < hn * d * vd


@dataclass(frozen=True, slots=True)
class Line:
    """A written-out line: the expression and its result as printed, and the digits used."""

    expression: str
    result: str
    digits: int

    def __str__(self) -> str:
        return f"{self.expression} = {self.result}"


def written(
    expr: Expr,
    result: Number,
    start: int = DIGITS,
    unit: tuple[str, Fraction] | None = None,
    most: int = MAX_DIGITS,
) -> Line:
    """``expr = result`` printed with the fewest digits (≥ ``start``) that make it hold.

    Per digit count d: the operands print with d digits and must print distinct where they
    differ; the result prints with d digits, and the printed expression's exact value must
    round to it (strictly within half a unit of its last printed digit). If no d ≤ 17 works
    (a difference far smaller than its operands), the result may print with fewer digits than
    the operands (at least 3). If still nothing holds, the result is printed from the printed
    expression itself (it differs from ``result`` by rounding only).

    ``unit`` = (name, scale) prints the result in that unit: ``result / scale`` and the name.
    ``most`` raises the 17-digit limit for exact operands (fractions closer than floats show).
    """
    name, scale = unit if unit is not None else ("", Fraction(1))
    suffix = f" {name}" if name else ""
    shown_result = Fraction(result) / scale if name else result
    unique = set(_values(expr))
    # The result may print like an operand only when it is one (or carries a unit).
    may_repeat = bool(name) or result in unique

    def attempt(digits: int, fewer: bool) -> Line | None:
        shown = {fmt(v, digits) for v in unique}
        if len(shown) < len(unique):
            return None
        value: Ratio | None = None  # evaluated once per digit count, when first needed
        tries = range(digits - 1, min(3, digits) - 1, -1) if fewer else (digits,)
        for result_digits in tries:
            answer = printed(shown_result, result_digits)
            if not may_repeat and answer.text in shown:
                continue
            value = value or _evaluate(expr, digits)
            if holds(value, answer, scale):
                return Line(_render(expr, digits), answer.text + suffix, digits)
        return None

    # First the result with as many digits as the operands; under cancellation (a difference
    # far smaller than its operands) the result may keep fewer.
    for fewer in (False, True):
        for digits in range(start, min(MAX_DIGITS, most) + 1):
            line = attempt(digits, fewer)
            if line is not None:
                return line
    # Exact operands closer than 17 digits show: more digits, the result as short as holds.
    for digits in range(MAX_DIGITS + 1, most + 1):
        line = attempt(digits, False) or attempt(digits, True)
        if line is not None:
            return line
    exact = Fraction(*_evaluate(expr, most)) / scale
    return Line(_render(expr, most), fmt(exact, most) + suffix, most)
