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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

MINUS = "\u2212"
TIMES = "\N{MULTIPLICATION SIGN}"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
DIGITS = 6
MAX_DIGITS = 17
# Denominators up to this are shown as fractions when the decimals do not end.
MAX_DENOMINATOR = 1000

Number = float | int | Fraction


def _scientific(value: Number, digits: int) -> tuple[int, str, int]:
    """``(sign, mantissa digits, exponent)`` of value rounded to ``digits`` significant digits."""
    if isinstance(value, Fraction):
        sign = -1 if value < 0 else 1
        magnitude = abs(value)
        exponent = len(str(magnitude.numerator)) - len(str(magnitude.denominator))
        if Fraction(10) ** exponent > magnitude:
            exponent -= 1
        scaled = magnitude / Fraction(10) ** (exponent - digits + 1)
        mantissa = round(scaled)  # half to even, as float formatting does
        if mantissa >= 10**digits:
            mantissa //= 10
            exponent += 1
        return sign, str(mantissa), exponent
    head, tail = f"{abs(value):.{digits - 1}e}".split("e")
    return (-1 if value < 0 else 1), head.replace(".", ""), int(tail)


@lru_cache(maxsize=8192, typed=True)
def fmt(value: Number, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits, ``%g``-style, true minus, ×10ⁿ exponents."""
    if value == 0:
        return "0"
    sign, mantissa, exponent = _scientific(value, digits)
    mantissa = mantissa.rstrip("0") or "0"
    if -4 <= exponent < digits:
        if exponent >= 0:
            whole = mantissa[: exponent + 1].ljust(exponent + 1, "0")
            rest = mantissa[exponent + 1 :]
        else:
            whole, rest = "0", "0" * (-exponent - 1) + mantissa
        text = f"{whole}.{rest}" if rest else whole
    else:
        head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        text = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
    return (MINUS if sign < 0 else "") + text


def small_fraction(value: Number, digits: int = DIGITS) -> Fraction | None:
    """The fraction p/q (q ≤ 1000, q > 1) that ``value`` is, when its decimals do not end.

    A float counts as that fraction when it is the float nearest to it.
    """
    exact = Fraction(value)
    guess = exact.limit_denominator(MAX_DENOMINATOR)
    if guess.denominator == 1 or (guess != exact and float(guess) != float(value)):
        return None
    q = guess.denominator
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    if q == 1 and parse(fmt(guess, digits))[0] == guess:
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
    value = Fraction(int(match["int"] + decimals)) * Fraction(10) ** (exponent - len(decimals))
    if match["sign"]:
        value = -value
    half = Fraction(10) ** (exponent - len(decimals)) / 2
    return value, (Fraction(0) if value == 0 else half)


def distinct_digits(values: Iterable[Number], start: int = DIGITS) -> int:
    """The fewest digits (≥ ``start``) that print different values as different strings."""
    unique = set(values)
    for digits in range(start, MAX_DIGITS + 1):
        if len({fmt(v, digits) for v in unique}) == len(unique):
            return digits
    return MAX_DIGITS


def fmt_distinct(values: Sequence[Number], start: int = DIGITS) -> tuple[str, ...]:
    """Values shown together: one digit count for all, the fewest that keeps them distinct."""
    digits = distinct_digits(values, start)
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


def _evaluate(expr: Expr, digits: int) -> Fraction:
    """The exact value of the expression as printed (each operand as its printed digits)."""
    if isinstance(expr, Value):
        return parse(fmt(expr.value, digits))[0] * expr.scale
    if isinstance(expr, Whole):
        return Fraction(expr.value)
    if isinstance(expr, Group):
        return _evaluate(expr.inner, digits)
    values = [_evaluate(item, digits) for item in expr.items]
    result = values[0]
    for value in values[1:]:
        if expr.operator == "+":
            result += value
        elif expr.operator == "-":
            result -= value
        elif expr.operator == "*":
            result *= value
        else:
            result /= value
    return result


def holds(printed: Fraction, result: str, scale: Fraction = Fraction(1)) -> bool:
    """The printed expression's exact value rounds to ``result`` at its last printed digit.

    ``scale`` converts the result's unit to the expression's (the result "15 ms": 10⁻³).
    """
    value, half = parse(result)
    value, half = value * scale, half * scale
    # Strictly inside: a printed expression half-way between two roundings holds neither.
    return printed == value or abs(printed - value) < half


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
    operands = _values(expr)
    unique = set(operands)

    def attempt(digits: int, fewer: bool) -> Line | None:
        shown = {fmt(v, digits) for v in unique}
        if len(shown) < len(unique):
            return None
        printed = _evaluate(expr, digits)
        tries = range(digits - 1, min(3, digits) - 1, -1) if fewer else (digits,)
        for result_digits in tries:
            text = fmt(shown_result, result_digits)
            if holds(printed, text, scale) and (result in unique or text not in shown or name):
                return Line(_render(expr, digits), text + suffix, digits)
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
    printed = _evaluate(expr, most) / scale
    return Line(_render(expr, most), fmt(printed, most) + suffix, most)
