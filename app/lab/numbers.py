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
from typing import NamedTuple

from app.engine.decimals import decimal_ratio, same_number

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


# Powers of ten the printed forms use (a list index is quicker than ``10**k`` each time).
_POWERS = [10**k for k in range(400)]
# ``%g`` with ``d`` significant digits is this module's rule: the exponent of the rounded value
# picks fixed (-4 ≤ e < d) or scientific notation, and trailing zeros go. Python's float
# formatting rounds the exact binary value correctly (half to even), as ``_scientific`` does.
_G = [f".{d}g" for d in range(128)]
_ZERO = Printed("0", (0, 1), (0, 1))
_ONE = Fraction(1)


def _power(k: int) -> int:
    return _POWERS[k] if k < 400 else int(10**k)


def _float_text(value: float | int, digits: int) -> str:
    """``%g`` with ``digits`` digits as this module prints it: true minus, ×10ⁿ exponents."""
    text = format(value, _G[digits] if digits < 128 else f".{digits}g")
    e = text.find("e")
    if e >= 0:
        exponent = str(int(text[e + 1 :])).translate(SUPERSCRIPT)
        text = f"{text[:e]}{TIMES}10{exponent}"
    elif text[-1] in "fn":  # inf, nan: no digits to print
        raise ValueError(f"not a finite number: {value!r}")
    return MINUS + text[1:] if text[0] == "-" else text


# Half a unit of the k-th decimal: (1, 2×10ᵏ).
_HALVES = [(1, 2 * 10**k) for k in range(400)]


def _float_printed(value: float | int, digits: int) -> Printed:
    text = format(value, _G[digits] if digits < 128 else f".{digits}g")
    if "e" not in text and text[-1] not in "fn":  # fixed notation, the common case
        point = text.find(".")
        if point < 0:
            whole = int(text)
            return Printed(MINUS + text[1:] if whole < 0 else text, (whole, 1), (1, 2))
        mantissa = int(text.replace(".", "", 1))
        shown = MINUS + text[1:] if text[0] == "-" else text
        return Printed(
            shown, (mantissa, _POWERS[len(text) - point - 1]), _HALVES[len(text) - point - 1]
        )
    e = text.find("e")
    if e >= 0:
        head, exponent = text[:e], int(text[e + 1 :])
        shown = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
    elif text[-1] in "fn":  # inf, nan: no digits to print
        raise ValueError(f"not a finite number: {value!r}")
    else:
        head, exponent, shown = text, 0, text
    point = head.find(".")
    if point >= 0:
        mantissa = int(head[:point] + head[point + 1 :])
        place = exponent - (len(head) - point - 1)
    else:
        mantissa, place = int(head), exponent
    if shown[0] == "-":
        shown = MINUS + shown[1:]
    if place >= 0:
        unit = _power(place)
        return Printed(shown, (mantissa * unit, 1), (unit, 2))
    unit = _power(-place)
    return Printed(shown, (mantissa, unit), (1, 2 * unit))


def _exact_printed(value: Number, digits: int) -> Printed:
    sign, digits_text, exponent = _scientific(value, digits)
    text, exact, place = _decimal(sign, digits_text, exponent, digits)
    if place >= 0:
        unit = _power(place)
        ratio, half = (exact * unit, 1), (unit, 2)
    else:
        unit = _power(-place)
        ratio, half = (exact, unit), (1, 2 * unit)
    return Printed(text, ratio, half)


def _decimal(sign: int, digits_text: str, exponent: int, digits: int) -> tuple[str, int, int]:
    """The text of ``sign × 0.digits_text × 10^(exponent + 1)`` rounded to ``digits`` digits
    (``_scientific``'s output), and its value as ``exact × 10^place`` (place: the last digit
    printed)."""
    mantissa = digits_text.rstrip("0") or "0"
    if -4 <= exponent < digits:
        if exponent >= 0:
            whole = mantissa[: exponent + 1].ljust(exponent + 1, "0")
            rest = mantissa[exponent + 1 :]
        else:
            whole, rest = "0", "0" * (-exponent - 1) + mantissa
        text = f"{whole}.{rest}" if rest else whole
        exact, place = sign * int(whole + rest), -len(rest)
    else:
        head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        text = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
        exact, place = sign * int(mantissa), exponent - (len(mantissa) - 1)
    return (MINUS if sign < 0 else "") + text, exact, place


def printed(value: Number, digits: int = DIGITS) -> Printed:
    """``value`` to ``digits`` significant digits, ``%g``-style, true minus, ×10ⁿ exponents;
    with the value a reader reads back and half a unit of the last digit shown."""
    if not value:
        return _ZERO
    if isinstance(value, float | int):
        return _float_printed(value, digits)
    return _exact_printed(value, digits)


def fmt(value: Number, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits, ``%g``-style, true minus, ×10ⁿ exponents."""
    if type(value) is float and value:  # the common case inline: fixed notation, finite
        text = format(value, _G[digits] if digits < 128 else f".{digits}g")
        if "e" not in text and text[-1] not in "fn":
            return MINUS + text[1:] if text[0] == "-" else text
        return _float_text(value, digits)
    if not value:
        return "0"
    if isinstance(value, float | int):
        return _float_text(value, digits)
    return _exact_printed(value, digits).text


# ---- one exact value at many digit counts ------------------------------------------------------

# Digits an expansion keeps: it rounds to at most KEPT - 1 digits (one guard digit, then sticky).
KEPT = 20


class Digits:
    """A nonzero exact value ``top/bottom`` (bottom > 0) expanded once to ``KEPT`` significant
    digits (truncated, with a flag for any remainder), so that rounding it to any digit count up
    to ``MAX_DIGITS`` is one ``divmod`` on a small int: what ``_scientific`` computes, without
    finding the exponent and dividing the big ratio again for every digit count.

    ``rounded(d)`` is ``(mantissa, exponent)``: the value rounded half to even to d digits is
    ``±mantissa × 10^(exponent - d + 1)`` with ``10^(d-1) ≤ mantissa < 10^d``.
    """

    __slots__ = ("exponent", "head", "negative", "sticky")

    def __init__(self, top: int, bottom: int) -> None:
        self.negative = top < 0
        p = -top if top < 0 else top
        # 10**e <= p/q < 10**(e + 1): a guess from the bit lengths. Mostly right: then the head
        # it gives has KEPT digits, and one divmod is all the work.
        e = math.floor((p.bit_length() - bottom.bit_length()) * LOG10_2)
        shift = KEPT - 1 - e
        if shift >= 0:
            head, rest = divmod(p * _power(shift), bottom)
        else:
            head, rest = divmod(p, bottom * _power(-shift))
        if _POWERS[KEPT - 1] <= head < _POWERS[KEPT]:
            self.exponent, self.head, self.sticky = e, head, rest != 0
            return
        # Else corrected:
        while (p * _power(-e) if e < 0 else p) < (bottom if e < 0 else bottom * _power(e)):
            e -= 1
        while (p * _power(-e - 1) if e + 1 < 0 else p) >= (
            bottom if e + 1 < 0 else bottom * _power(e + 1)
        ):
            e += 1
        shift = KEPT - 1 - e  # head = floor(p/q × 10^shift) has KEPT digits
        if shift >= 0:
            head, rest = divmod(p * _power(shift), bottom)
        else:
            head, rest = divmod(p, bottom * _power(-shift))
        self.exponent, self.head, self.sticky = e, head, rest != 0

    def rounded(self, digits: int) -> tuple[int, int]:
        unit = _POWERS[KEPT - digits]
        mantissa, rest = divmod(self.head, unit)
        twice = 2 * rest
        if twice > unit or (twice == unit and (self.sticky or mantissa & 1)):
            mantissa += 1
            if mantissa == _POWERS[digits]:
                return _POWERS[digits - 1], self.exponent + 1
        return mantissa, self.exponent

    def text(self, digits: int) -> str:
        """``fmt(value, digits)``."""
        mantissa, exponent = self.rounded(digits)
        sign = -1 if self.negative else 1
        return _decimal(sign, str(mantissa), exponent, digits)[0]


def expanded(value: Fraction) -> Digits:
    """``Digits`` of a nonzero Fraction."""
    return Digits(value.numerator, value.denominator)


def distinct_pair(
    a: Fraction, b: Fraction, x: Digits | None = None, y: Digits | None = None
) -> tuple[str, str] | None:
    """``fmt_distinct((a, b), most=m)`` for any m ≥ ``MAX_DIGITS`` when a = b or some digit count
    up to ``MAX_DIGITS`` prints them apart (else None): each value expanded once (``x`` and
    ``y``, the expansions of a and b, when the caller has them)."""
    an, bn = a.numerator, b.numerator
    if not an or not bn:
        return fmt(a), fmt(b)  # "0" tells them apart at 6 digits, or both are 0
    if x is None or y is None:
        x, y = expanded(a), expanded(b)
    if (an < 0) != (bn < 0) or (an == bn and a.denominator == b.denominator):
        # A sign tells them apart at 6 digits, or they are equal (Fractions are reduced):
        # ``fmt`` of each, from its expansion.
        return x.text(DIGITS), y.text(DIGITS)
    for digits in range(DIGITS, MAX_DIGITS + 1):
        if x.rounded(digits) != y.rounded(digits):
            return x.text(digits), y.text(digits)
    return None


def _place(mantissa: int, exponent: int, digits: int) -> int:
    """The place of the last digit ``_decimal`` prints for the rounded ``mantissa``: its last
    nonzero digit, and in fixed notation at most the units (a whole number prints every digit)."""
    place = exponent - digits + 1
    while mantissa % 10 == 0:
        mantissa //= 10
        place += 1
    if -4 <= exponent < digits and place > 0:
        return 0
    return place


def difference_line(
    a: Fraction, b: Fraction, x: Digits | None = None, y: Digits | None = None
) -> tuple[int, str, str, str] | None:
    """``written(minus(Value(a), Value(b)), a - b, most=m)`` wherever its passes up to
    ``MAX_DIGITS`` digits hold: ``(digits, a, b, a - b)`` as printed (the operands with
    ``digits`` digits, the result with as many or, where that does not hold, fewer). None where no
    such pass holds or an operand or the result is 0: ``written`` then writes the line itself.

    ``written``'s checks, on rounded mantissas, each value expanded once: (1) a and b print
    apart; (3) the printed a − b lies strictly within half a unit of the printed result's last
    digit, or equals it; (2) the result prints like an operand only when it equals it or the
    printed line is exact. ``x`` and ``y``: the expansions of a and b, when the caller has
    them."""
    (an, ad), (bn, bd) = (a.numerator, a.denominator), (b.numerator, b.denominator)
    rn, rd = an * bd - bn * ad, ad * bd  # r = a - b, unreduced: no gcd
    if not an or not bn or not rn:
        return None
    if x is None or y is None:
        x, y = Digits(an, ad), Digits(bn, bd)
    z = Digits(rn, rd)
    sx, sy, sz = x.negative, y.negative, z.negative
    for digits in range(DIGITS, MAX_DIGITS + 1):
        (mx, ex), (my, ey) = x.rounded(digits), y.rounded(digits)
        if sx == sy and mx == my and ex == ey:
            continue  # a and b differ (r is not 0) yet print alike
        kx, ky = ex - digits + 1, ey - digits + 1
        for shown in range(digits, 2, -1):
            mz, ez = z.rounded(shown)
            kz = ez - shown + 1
            if kz < kx and kz < ky and mz % 10:
                # The printed a − b is a multiple of 10^(kz + 1); the printed r's last digit
                # (at 10^kz) is not 0, so they differ by at least a unit of it, more than
                # half a unit: the line does not hold, whatever else is checked below.
                continue
            # Printed a − b − printed r in units of 10^base, against half a unit of the
            # printed r's last digit.
            base = min(kx, ky, kz)
            gap = (
                (-mx if sx else mx) * _power(kx - base)
                - (-my if sy else my) * _power(ky - base)
                - (-mz if sz else mz) * _power(kz - base)
            )
            if gap and 2 * abs(gap) >= _power(_place(mz, ez, shown) - base):
                continue
            # The result prints like a or b only where it is that operand or the line is exact.
            if gap and sz == sx and _alike(mz, ez, shown, mx, ex, digits):
                continue  # the result prints like a, which it is not (b is not 0)
            if gap and sz == sy and _alike(mz, ez, shown, my, ey, digits) and rn * bd != bn * rd:
                continue
            return (
                digits,
                _decimal(-1 if sx else 1, str(mx), ex, digits)[0],
                _decimal(-1 if sy else 1, str(my), ey, digits)[0],
                _decimal(-1 if sz else 1, str(mz), ez, shown)[0],
            )
    return None


def _alike(m: int, e: int, digits: int, n: int, f: int, n_digits: int) -> bool:
    """Whether two rounded values of one sign print as the same text: the same value, printed
    in the same notation (1000000 and 1×10⁶ are one value, printed with 7 and 6 digits)."""
    if e != f:
        return False
    if digits == n_digits:
        return m == n
    if m * _POWERS[n_digits] != n * _POWERS[digits]:
        return False
    return _decimal(1, str(m), e, digits)[0] == _decimal(1, str(n), f, n_digits)[0]


def _shown_ratio(value: Number, digits: int) -> Ratio:
    return printed(value, digits).value


def shown(value: Number, digits: int = DIGITS) -> Fraction:
    """The exact value of ``fmt(value, digits)``: what a reader computes with."""
    return Fraction(*_shown_ratio(value, digits))


def _limit_denominator(top: int, bottom: int, most: int) -> Ratio:
    """``Fraction(top, bottom).limit_denominator(most)`` on ints (bottom > 0, reduced):
    the same steps, without a Fraction per step."""
    if bottom <= most:
        return top, bottom
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = top, bottom
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > most:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (most - q0) // q1
    p2, q2 = p0 + k * p1, q0 + k * q1
    # |p1/q1 - top/bottom| <= |p2/q2 - top/bottom|: the convergent, else the semiconvergent.
    if abs(p1 * bottom - top * q1) * q2 <= abs(p2 * bottom - top * q2) * q1:
        return p1, q1
    return p2, q2


def exact_sum(values: Iterable[Number]) -> Fraction:
    """The exact sum, each float as written (``sum(map(Fraction, map(repr, floats)))`` and the
    rest as they are): floats add as ints over a common power-of-ten denominator, one Fraction
    at the end."""
    top, bottom = 0, 1
    rest = Fraction(0)
    for value in values:
        if isinstance(value, float):
            n, d = decimal_ratio(value)  # d is a power of ten
            if d == bottom:
                top += n
            elif d < bottom:
                top += n * (bottom // d)
            else:
                top, bottom = top * (d // bottom) + n, d
        else:
            rest += Fraction(value)
    return Fraction(top, bottom) + rest if rest else Fraction(top, bottom)


def small_fraction(value: Number, digits: int = DIGITS) -> Fraction | None:
    """The fraction p/q (q ≤ 1000, q > 1) that ``value`` is, when its decimals do not end.

    A float counts as that fraction when it is the float nearest to it.
    """
    if isinstance(value, float):
        spec = _G[digits] if digits < 128 else f".{digits}g"
        if not value or float(format(value, spec)) == value:
            return None  # the printed decimal reads back as that very float (0.5, 0.1, 2.5)
        top, bottom = value.as_integer_ratio()
    elif isinstance(value, int):
        return None  # a whole number is no fraction
    else:
        top, bottom = value.numerator, value.denominator
    ratio = _small_ratio(top, bottom, digits)
    return None if ratio is None else Fraction(*ratio)


def _small_ratio(top: int, bottom: int, digits: int) -> Ratio | None:
    """``small_fraction`` of the value top/bottom (reduced, bottom > 0) as (p, q), reduced."""
    p, q = _limit_denominator(top, bottom, MAX_DENOMINATOR)
    if q == 1 or (p * bottom != top * q and p / q != top / bottom):
        return None
    rest = q
    while rest % 2 == 0:
        rest //= 2
    while rest % 5 == 0:
        rest //= 5
    if rest == 1 and _shown_ratio(Fraction(p, q), digits) == (p, q):
        return None  # a decimal that ends within the shown digits: 0.125 stays 0.125
    return p, q


def fmt_exact(value: Number, digits: int = DIGITS) -> str:
    """Like ``fmt``, but a small exact fraction whose decimals do not end prints as ``p/q``."""
    fraction = small_fraction(value, digits) if value else None
    if fraction is None:
        return fmt(value, digits)
    return _fraction_text(fraction)


def _fraction_text(fraction: Fraction) -> str:
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


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _needs_parentheses(outer: str, inner: str, index: int) -> bool:
    """An inner operation binds less tightly, or sits right of − or / at the same level."""
    if _PRECEDENCE[inner] != _PRECEDENCE[outer]:
        return _PRECEDENCE[inner] < _PRECEDENCE[outer]
    return index > 0 and outer in "-/"


class Printer:
    """The printed forms of one request's numbers: its lines share operands (a count appears
    in N, g and its factor), so each prints once per digit count. Made per call, never kept:
    no state carries over, and an exact operand is held (and known) by its identity."""

    __slots__ = ("_exact", "_floats", "_fractions")

    def __init__(self) -> None:
        self._floats: dict[int, dict[float, Printed]] = {}
        self._exact: dict[tuple[int, int], tuple[Number, Printed]] = {}
        self._fractions: dict[tuple[float, int], str] = {}

    def exact(self, value: float, digits: int) -> str:
        """``fmt_exact(value, digits)`` of a float: p/q where it is a small fraction whose
        decimals do not end, else its printed decimal."""
        key = (value, digits)
        text = self._fractions.get(key)
        if text is None:
            form = self(value, digits)
            n, d = form.value
            # As small_fraction: a decimal that reads back as the very float stays a decimal
            # (the int division rounds correctly, as float() of the printed text does).
            try:
                ratio = (
                    None
                    if not value or n / d == value
                    else _small_ratio(*value.as_integer_ratio(), digits)
                )
            except OverflowError:  # the printed decimal rounds beyond the largest float
                ratio = _small_ratio(*value.as_integer_ratio(), digits)
            text = (
                form.text
                if ratio is None
                else f"{MINUS if ratio[0] < 0 else ''}{abs(ratio[0])}/{ratio[1]}"
            )
            self._fractions[key] = text
        return text

    def __call__(self, value: Number, digits: int) -> Printed:
        if type(value) is float:
            forms = self._floats.get(digits)
            if forms is None:
                forms = self._floats[digits] = {}
            form = forms.get(value)
            if form is None:
                form = forms[value] = _float_printed(value, digits) if value else _ZERO
            return form
        key = (id(value), digits)
        entry = self._exact.get(key)
        if entry is None:  # the entry keeps value alive: no other object gets its id meanwhile
            entry = self._exact[key] = (value, printed(value, digits))
        return entry[1]

    def all(self, values: list[Number], digits: int) -> list[Printed]:
        """``[self(v, digits) for v in values]``, the float lookups inline."""
        forms = self._floats.get(digits)
        if forms is None:
            forms = self._floats[digits] = {}
        out = []
        for value in values:
            form = forms.get(value) if type(value) is float else None
            out.append(self(value, digits) if form is None else form)
        return out


class Formula:
    """An expression taken apart once: its operands in order, the text around them and the
    steps that compute its value (postfix), so that each digit count only prints the operands,
    adds and multiplies ints, and joins strings. ``Formula(expr)`` takes an ``Expr`` apart;
    the class methods build the app's common shapes directly (no tree to walk).

    ``pieces`` is the printed line with an int where operand i goes; ``steps`` are ``(-1, i)``
    (operand i), ``(-2, n)`` (the whole number n) or ``(k, operator)`` (fold the last k).
    ``wrapped[i]``: operand i is negative after an operator and prints in parentheses.
    """

    __slots__ = ("pieces", "scales", "steps", "units", "values", "wrapped")

    def __init__(self, expr: Expr | None = None) -> None:
        self.values: list[Number] = []
        self.scales: list[Ratio | None] = []
        self.units: list[str] = []
        self.wrapped: list[bool] = []
        self.pieces: list[str | int] = []
        self.steps: list[tuple[int, int | str]] = []
        if expr is not None:
            self._take(expr, True)

    @classmethod
    def _flat(
        cls,
        values: list[Number],
        pieces: list[str | int],
        steps: list[tuple[int, int | str]],
        first: int = 0,
    ) -> "Formula":
        """Plain operands (no unit, scale 1); operand ``first`` opens the line."""
        form = cls.__new__(cls)
        form.values = values
        form.scales = [None] * len(values)
        form.units = [""] * len(values)
        form.wrapped = [v < 0 and i != first for i, v in enumerate(values)]
        form.pieces = pieces
        form.steps = steps
        return form

    @classmethod
    def total(cls, values: Sequence[Number]) -> "Formula":
        """``a + b + …``: ``plus(*map(Value, values))``."""
        pieces: list[str | int] = [0]
        for index in range(1, len(values)):
            pieces += (" + ", index)
        steps: list[tuple[int, int | str]] = [(-1, i) for i in range(len(values))]
        steps.append((len(values), "+"))
        return cls._flat(list(values), pieces, steps)

    @classmethod
    def mean(cls, values: Sequence[Number], count: int) -> "Formula":
        """``(a + b + …) / P``: ``over(plus(*map(Value, values)), Whole(count))``."""
        form = cls.total(values)
        form.pieces = ["(", *form.pieces, ") / ", str(count).replace("-", MINUS)]
        form.steps += ((-2, count), (2, "/"))
        return form

    @classmethod
    def weighted_mean(
        cls, weights: Sequence[Number], values: Sequence[Number], total: Number
    ) -> "Formula":
        """``(n₀×a + n₁×b + …) / N``: ``over(plus(*(times(Value(n), Value(v)) …)), Value(N))``."""
        operands: list[Number] = []
        pieces: list[str | int] = ["("]
        steps: list[tuple[int, int | str]] = []
        for index, (weight, value) in enumerate(zip(weights, values, strict=True)):
            if index:
                pieces.append(" + ")
            pieces += (2 * index, TIMES, 2 * index + 1)
            operands += (weight, value)
            steps += ((-1, 2 * index), (-1, 2 * index + 1), (2, "*"))
        last = len(operands)
        operands.append(total)
        pieces += (") / ", last)
        steps += ((len(weights), "+"), (-1, last), (2, "/"))
        return cls._flat(operands, pieces, steps)

    @classmethod
    def product(cls, a: Number, b: Number) -> "Formula":
        """``a×b``: ``times(Value(a), Value(b))``."""
        return cls._flat([a, b], [0, TIMES, 1], [(-1, 0), (-1, 1), (2, "*")])

    @classmethod
    def share(cls, count: int, part: Number, total: Number) -> "Formula":
        """``P×n / N``: ``over(times(Whole(count), Value(part)), Value(total))``."""
        return cls._flat(
            [part, total],
            [str(count).replace("-", MINUS), TIMES, 0, " / ", 1],
            [(-2, count), (-1, 0), (2, "*"), (-1, 1), (2, "/")],
            first=-1,
        )

    @classmethod
    def step(cls, w: Number, eta: Number, gradient: Number) -> "Formula":
        """``w − η×g``: ``minus(Value(w), times(Value(eta), Value(gradient)))``."""
        return cls._flat(
            [w, eta, gradient],
            [0, f" {MINUS} ", 1, TIMES, 2],
            [(-1, 0), (-1, 1), (-1, 2), (2, "*"), (2, "-")],
        )

    @classmethod
    def scaled_difference(cls, eta: Number, a: Number, b: Number) -> "Formula":
        """``η×(a − b)``: ``times(Value(eta), minus(Value(a), Value(b)))``."""
        return cls._flat(
            [eta, a, b],
            [0, TIMES, "(", 1, f" {MINUS} ", 2, ")"],
            [(-1, 0), (-1, 1), (-1, 2), (2, "-"), (2, "*")],
        )

    def _take(self, expr: Expr, first: bool) -> None:
        pieces = self.pieces
        if isinstance(expr, Value):
            index = len(self.values)
            self.values.append(expr.value)
            scale = expr.scale
            self.scales.append(None if scale == 1 else (scale.numerator, scale.denominator))
            self.units.append(f" {expr.unit}" if expr.unit else "")
            # A negative operand after an operator goes in parentheses: 2×(−1), 3 + (−1).
            self.wrapped.append(expr.value < 0 and not first)
            pieces.append(index)
            self.steps.append((-1, index))
        elif isinstance(expr, Whole):
            pieces.append(str(expr.value).replace("-", MINUS))
            self.steps.append((-2, expr.value))
        elif isinstance(expr, Group):
            pieces.append("(")
            self._take(expr.inner, True)
            pieces.append(")")
        else:
            spaced = _SPACED[expr.operator]
            for index, item in enumerate(expr.items):
                if index:
                    pieces.append(spaced)
                wrap = isinstance(item, Op) and _needs_parentheses(
                    expr.operator, item.operator, index
                )
                if wrap:
                    pieces.append("(")
                self._take(item, first and index == 0)
                if wrap:
                    pieces.append(")")
            self.steps.append((len(expr.items), expr.operator))

    def texts(self, digits: int, printer: Printer | None = None) -> list[Printed]:
        if printer is None:
            return [printed(v, digits) for v in self.values]
        return printer.all(self.values, digits)

    def distinct(self, forms: list[Printed]) -> dict[str, Number] | None:
        """Text → value of the printed operands; None if two different values print alike (a
        float and an exact value are one number when the float's decimal is that value)."""
        seen: dict[str, Number] = {}
        for value, form in zip(self.values, forms, strict=True):
            other = seen.setdefault(form.text, value)
            if other is not value and not same_number(other, value):
                return None
        return seen

    def evaluate(self, forms: list[Printed]) -> Ratio:
        """The exact value of the expression as printed (each operand as its printed digits)."""
        stack: list[Ratio] = []
        scales = self.scales
        for kind, item in self.steps:
            if kind == -1:
                n, d = forms[item].value  # type: ignore[index]
                scale = scales[item]  # type: ignore[index]
                stack.append((n, d) if scale is None else (n * scale[0], d * scale[1]))
            elif kind == -2:
                stack.append((item, 1))  # type: ignore[arg-type]
            else:
                operands = stack[-kind:]
                del stack[-kind:]
                n, d = operands[0]
                if item == "+":
                    for m, e in operands[1:]:
                        n, d = (n + m, d) if d == e else (n * e + m * d, d * e)
                elif item == "-":
                    for m, e in operands[1:]:
                        n, d = (n - m, d) if d == e else (n * e - m * d, d * e)
                elif item == "*":
                    for m, e in operands[1:]:
                        n, d = n * m, d * e
                else:
                    for m, e in operands[1:]:
                        n, d = (n * e, d * m) if m > 0 else (-n * e, -d * m)
                stack.append((n, d))
        return stack[0]

    def render(self, forms: list[Printed]) -> str:
        texts = [
            f"({form.text}{unit})" if wrap else form.text + unit
            for form, unit, wrap in zip(forms, self.units, self.wrapped, strict=True)
        ]
        return "".join([piece if isinstance(piece, str) else texts[piece] for piece in self.pieces])


def _render(expr: Expr, digits: int) -> str:
    form = Formula(expr)
    return form.render(form.texts(digits))


def _evaluate(expr: Expr, digits: int) -> Ratio:
    """The exact value of the expression as printed (each operand as its printed digits)."""
    form = Formula(expr)
    return form.evaluate(form.texts(digits))


def holds(expression: Ratio, result: Printed, scale: Fraction = Fraction(1)) -> bool:
    """The printed expression's exact value rounds to ``result`` at its last printed digit.

    ``scale`` converts the result's unit to the expression's (the result "15 ms": 10⁻³).
    """
    return holds_ratio(
        expression, result, None if scale == 1 else (scale.numerator, scale.denominator)
    )


def holds_ratio(expression: Ratio, result: Printed, scale: Ratio | None = None) -> bool:
    """``holds`` on ints: the expression's value and the scale as (numerator, denominator)."""
    n, d = expression
    (vn, vd), (hn, hd) = result.value, result.half
    if scale is not None:
        vn, vd = vn * scale[0], vd * scale[1]
        hn, hd = hn * scale[0], hd * scale[1]
    # |n/d - v| < half, in integers (d > 0); exactly equal also holds (half is 0 for "0").
    gap = abs(n * vd - vn * d)
    return gap == 0 or gap * hd < hn * d * vd


def exactly_ratio(expression: Ratio, result: Printed, scale: Ratio | None = None) -> bool:
    """Whether the expression's value is exactly the printed result (``holds_ratio`` with no
    half a unit of room)."""
    return holds_ratio(expression, result._replace(half=(0, 1)), scale)


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
    differ; the result prints with d digits or, where that does not hold, with fewer (as many
    as hold, at least 3), and the printed expression's exact value must round to it (strictly
    within half a unit of its last printed digit). So operands print as the figures beside the
    line do wherever that can hold: 1.9087 − 0.975 = 0.9337, not 1.908695652173913 − 0.975 =
    0.933695652173913 (the 0.975 being 0.9750000000000000333 exactly). If no d up to ``most``
    works, the result is printed from the printed expression itself (it differs from
    ``result`` by rounding only).

    ``unit`` = (name, scale) prints the result in that unit: ``result / scale`` and the name.
    ``most`` raises the 17-digit limit for exact operands (fractions closer than floats show).
    """
    return write(Formula(expr), result, start, unit, most)


def write(
    form: Formula,
    result: Number,
    start: int = DIGITS,
    unit: tuple[str, Fraction] | None = None,
    most: int = MAX_DIGITS,
    printer: Printer | None = None,
) -> Line:
    """``written`` for an expression already taken apart; ``printer`` shares printed operands
    (and results) with the other lines of the same request."""
    if unit is None:
        name, scale, suffix, shown_result, to_base = "", _ONE, "", result, None
    else:
        name, scale = unit
        suffix = f" {name}" if name else ""
        shown_result = Fraction(result) / scale if name else result
        to_base = None if scale == 1 else (scale.numerator, scale.denominator)
    show = printed if printer is None else printer

    def attempt(digits: int) -> Line | None:
        forms = form.texts(digits, printer)
        seen = form.distinct(forms)
        if seen is None:
            return None
        value: Ratio | None = None  # evaluated once per digit count, when first needed
        for result_digits in range(digits, min(3, digits) - 1, -1):
            answer = show(shown_result, result_digits)
            value = value or form.evaluate(forms)
            if not holds_ratio(value, answer, to_base):
                continue
            # The result may print like an operand only when it is one (or carries a unit), or
            # when the printed line is exact: (2.1 + 1.4 + 2.8) / 3 = 2.1, the floats' mean
            # being 2.09999999999999994 and the first 2.10000000000000009; not 1 + 10⁻⁹ = 1.
            if (
                name
                or answer.text not in seen
                or same_number(seen[answer.text], result)
                or exactly_ratio(value, answer, to_base)
            ):
                return Line(form.render(forms), answer.text + suffix, digits)
        return None

    # The operands with the fewest digits that make the line hold, the result first with as
    # many, then with fewer (as many as hold).
    for digits in range(start, most + 1):
        line = attempt(digits)
        if line is not None:
            return line
    forms = form.texts(most, printer)
    exact = Fraction(*form.evaluate(forms)) / scale
    return Line(form.render(forms), fmt(exact, most) + suffix, most)
