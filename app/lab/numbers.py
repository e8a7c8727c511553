# ruff: noqa: RUF002, RUF003 (this module prints − and × on purpose)
"""Every number the app shows, printed by one rule.

A number prints like ``%g`` (a true minus sign, ×10ⁿ exponents) with the fewest significant
digits, from 6 up, at which values shown together that differ print differently and a
written-out line (``app.lab.equations``) holds as printed. A column of exact values prints a
small fraction whose decimals do not end as that fraction (1/12, not 0.0833333).
"""

import math
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import NamedTuple

MINUS = "\u2212"
TIMES = "\N{MULTIPLICATION SIGN}"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
DIGITS = 6
# 17 digits tell any two floats apart.
MAX_DIGITS = 17
# Exact values (the means before rounding) may differ far below float resolution (1 against
# 1 + 5e-19): lines and figures of such values may take this many digits.
MOST_DIGITS = 60
# Denominators up to this are shown as fractions when the decimals do not end.
MAX_DENOMINATOR = 1000

Number = float | int | Fraction
# An exact rational as (numerator, denominator > 0), not reduced: a line's arithmetic adds and
# multiplies a few decimals, on plain ints without Fraction's gcd at every step.
Ratio = tuple[int, int]
LOG10_2 = math.log10(2)


class Printed(NamedTuple):
    """One number as printed: the text, its exact value and half a unit of its last digit."""

    text: str
    value: Ratio
    half: Ratio


_POWERS = [10**k for k in range(400)]
# ``%g`` with d significant digits is the rule: the exponent of the rounded value picks fixed
# (-4 ≤ e < d) or scientific notation, and trailing zeros go. Python rounds a float's exact
# binary value correctly (half to even), as ``_exact_printed`` rounds an exact one.
_G = [f".{d}g" for d in range(128)]
_ZERO = Printed("0", (0, 1), (0, 1))
# Whole numbers below this are floats exactly, so %g prints them right.
_EXACT_INT = 2**53


def _power(k: int) -> int:
    return _POWERS[k] if k < 400 else int(10**k)


class _Expansion(NamedTuple):
    """A nonzero exact value |p|/q cut to ``kept`` significant digits: ``head`` (``kept``
    digits), the exponent e (10ᵉ ≤ |p|/q < 10ᵉ⁺¹) and whether anything was cut (``sticky``).
    Rounding it to fewer digits is one divmod: a line prints its exact result at several digit
    counts, from one expansion."""

    negative: bool
    head: int
    exponent: int
    sticky: bool
    kept: int


# Digits an expansion keeps: it rounds to at most KEPT - 1 digits (one guard digit, then sticky).
KEPT = 20


def _expand(value: Fraction | int, kept: int) -> _Expansion:
    p, q = value.numerator, value.denominator
    negative = p < 0  # on the int: a Fraction's own comparison is many times slower
    if negative:
        p = -p
    # 10**e <= p/q < 10**(e + 1): a guess from the bit lengths, corrected by at most one.
    e = math.floor((p.bit_length() - q.bit_length()) * LOG10_2)
    while True:
        shift = kept - 1 - e
        head, rest = divmod(p * _power(shift), q) if shift >= 0 else divmod(p, q * _power(-shift))
        if head < _power(kept - 1):
            e -= 1
        elif head >= _power(kept):
            e += 1
        else:
            return _Expansion(negative, head, e, rest != 0, kept)


def _exact_printed(x: _Expansion, digits: int) -> Printed:
    """The expansion ``x`` (``x.kept`` > digits) rounded half to even to ``digits`` digits."""
    unit = _power(x.kept - digits)
    mantissa, rest = divmod(x.head, unit)
    exponent = x.exponent
    if 2 * rest > unit or (2 * rest == unit and (x.sticky or mantissa & 1)):
        mantissa += 1
        if mantissa == _power(digits):
            mantissa, exponent = _power(digits - 1), exponent + 1
    shown = str(mantissa).rstrip("0")  # the significant digits: 0.shown × 10^(exponent + 1)
    size = len(shown)
    exact, place = mantissa // _power(digits - size), exponent - size + 1  # exact × 10^place
    if -4 <= exponent < digits:  # fixed notation, as %g: a whole number prints every digit
        if place >= 0:
            text, exact, place = shown + "0" * place, exact * _power(place), 0
        elif exponent >= 0:
            text = f"{shown[: exponent + 1]}.{shown[exponent + 1 :]}"
        else:
            text = f"0.{'0' * (-exponent - 1)}{shown}"
    else:
        head = shown[0] + ("." + shown[1:] if size > 1 else "")
        text = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
    if x.negative:
        text, exact = MINUS + text, -exact
    if place >= 0:
        unit = _power(place)
        return Printed(text, (exact * unit, 1), (unit, 2))
    unit = _power(-place)
    return Printed(text, (exact, unit), (1, 2 * unit))


def _float_printed(value: float | int, digits: int) -> Printed:
    text = format(value, _G[digits] if digits < 128 else f".{digits}g")
    e = text.find("e")
    if e < 0:
        if text[-1] in "fn":  # inf, nan
            raise ValueError(f"not a finite number: {value!r}")
        head, exponent, shown = text, 0, text
    else:
        head, exponent = text[:e], int(text[e + 1 :])
        shown = f"{head}{TIMES}10{str(exponent).translate(SUPERSCRIPT)}"
    if shown[0] == "-":
        shown = MINUS + shown[1:]
    point = head.find(".")
    if point < 0:
        mantissa, place = int(head), exponent
    else:
        mantissa, place = int(head[:point] + head[point + 1 :]), exponent - (len(head) - point - 1)
    if place >= 0:
        unit = _power(place)
        return Printed(shown, (mantissa * unit, 1), (unit, 2))
    unit = _power(-place)
    return Printed(shown, (mantissa, unit), (1, 2 * unit))


def printed(value: Number, digits: int = DIGITS) -> Printed:
    """``value`` to ``digits`` significant digits by the rule; with the value a reader reads
    back and half a unit of the last digit shown."""
    # A Fraction's own truth test is slow Python: its numerator's is not.
    if not (value.numerator if type(value) is Fraction else value):
        return _ZERO
    if isinstance(value, float) or (isinstance(value, int) and -_EXACT_INT < value < _EXACT_INT):
        return _float_printed(value, digits)  # %g reads them exactly
    return _exact_printed(_expand(value, max(KEPT, digits + 1)), digits)


def fmt(value: Number, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits by the rule."""
    if type(value) is float and value:  # the common case inline: a finite float, fixed notation
        text = format(value, _G[digits] if digits < 128 else f".{digits}g")
        if "e" not in text and text[-1] not in "fn":
            return MINUS + text[1:] if text[0] == "-" else text
    return printed(value, digits).text


def _limit_denominator(top: int, bottom: int, most: int) -> Ratio:
    """``Fraction(top, bottom).limit_denominator(most)`` on ints (bottom > 0, reduced), without
    a Fraction per step: a column prints every value of every request through it."""
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
    # The convergent p1/q1 where it is at least as close as the semiconvergent.
    if abs(p1 * bottom - top * q1) * q2 <= abs(p2 * bottom - top * q2) * q1:
        return p1, q1
    return p2, q2


def _small_fraction(value: float) -> Ratio | None:
    """The fraction p/q (1 < q ≤ 1000) that the float ``value`` is, or is the nearest to; else
    None. Asked only where the printed decimal does not read back as ``value``: a fraction
    whose decimal ends within the digits shown never comes here (0.125 stays 0.125)."""
    top, bottom = value.as_integer_ratio()
    p, q = _limit_denominator(top, bottom, MAX_DENOMINATOR)
    if q == 1 or (p * bottom != top * q and p / q != value):
        return None
    return p, q


def apart(values: Sequence[Number], forms: Sequence[Printed]) -> dict[int, Printed]:
    """Different ``values`` whose ``forms`` print alike (they differ past the digits shown),
    told apart, by index: in each such group the value nearest the shared text keeps it, and
    every other prints as that text and its exact difference from that value (0.2 and
    0.2 + 1.63664×10⁻²⁵⁸). Values that print apart are not in the result."""
    groups: dict[str, list[int]] = {}
    for index, form in enumerate(forms):
        groups.setdefault(form.text, []).append(index)
    told: dict[int, Printed] = {}
    for text, members in groups.items():
        exact = [Fraction(values[i]) for i in members]
        if len(set(exact)) < 2:
            continue
        shared = Fraction(*forms[members[0]].value)
        base = min(range(len(members)), key=lambda k: abs(exact[k] - shared))
        rests = [value - exact[base] for value in exact]
        digits = distinct_digits(rests, MOST_DIGITS)
        (n, q), (hn, hq) = forms[members[base]].value, forms[members[base]].half
        for index, rest in zip(members, rests, strict=True):
            told[index] = forms[members[base]]
            if rest:
                d = printed(abs(rest), digits)
                (dn, dq), (dhn, dhq), sign = d.value, d.half, 1 if rest > 0 else -1
                told[index] = Printed(
                    f"{text} {'+' if sign > 0 else MINUS} {d.text}",
                    (n * dq + sign * dn * q, q * dq),
                    (hn * dhq + dhn * hq, hq * dhq),
                )
    return told


def fraction_printed(value: Number) -> Printed | None:
    """An exact value as p/q (−4/3) when its denominator is at most MAX_DENOMINATOR and its
    decimals never end; else None. Only such an operand can keep a line from holding in
    decimals: −2 − 1.5×(−4/3) = 0 holds, −2 − 1.5×(−1.33333) = 0 does not at any length."""
    if type(value) is not Fraction or value.denominator > MAX_DENOMINATOR:
        return None
    rest = value.denominator
    for prime in (2, 5):
        while rest % prime == 0:
            rest //= prime
    if rest == 1:
        return None
    p, q = value.numerator, value.denominator
    return Printed(f"{MINUS if p < 0 else ''}{abs(p)}/{q}", (p, q), (0, 1))


class Printer:
    """The printed forms of one request's numbers: its lines, figures and columns share
    operands (a count appears in N, g and its factor), so each prints once per digit count.
    Made per request, never kept: an exact value is held (and known) by its identity."""

    __slots__ = ("_exact", "_expansions", "_floats", "_fractions")

    def __init__(self) -> None:
        self._floats: dict[int, dict[float, Printed]] = {}
        self._exact: dict[tuple[int, int], tuple[Number, Printed]] = {}
        # By id, as _exact (whose entries keep the values alive).
        self._expansions: dict[int, _Expansion] = {}
        self._fractions: dict[tuple[float, int], str] = {}

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
        if entry is None:  # the entry keeps value alive: no other object takes its id meanwhile
            entry = self._exact[key] = (value, self._exact_form(value, digits))
        return entry[1]

    def _exact_form(self, value: Number, digits: int) -> Printed:
        if type(value) is not Fraction or not value.numerator:
            return printed(value, digits)
        expansion = self._expansions.get(id(value))
        if expansion is None or expansion.kept <= digits:
            # Room for the digit counts a line tries next, so that it expands once more at most.
            expansion = self._expansions[id(value)] = _expand(value, digits + KEPT)
        return _exact_printed(expansion, digits)

    def text(self, value: Number, digits: int) -> str:
        """``fmt(value, digits)``: a float's text directly (quicker than its whole form), an
        exact value's from its expansion."""
        return fmt(value, digits) if type(value) is float else self(value, digits).text

    def exact(self, value: float, digits: int) -> str:
        """A float printed with ``digits`` digits, or as p/q where it is the float nearest to
        a small fraction whose decimals do not end."""
        key = (value, digits)
        text = self._fractions.get(key)
        if text is None:
            form = self(value, digits)
            n, d = form.value
            try:  # a decimal that reads back as the very float stays a decimal (0.5, 0.1)
                ratio = None if not value or n / d == value else _small_fraction(value)
            except OverflowError:  # the printed decimal rounds beyond the largest float
                ratio = _small_fraction(value)
            text = self._fractions[key] = (
                form.text
                if ratio is None
                else f"{MINUS if ratio[0] < 0 else ''}{abs(ratio[0])}/{ratio[1]}"
            )
        return text


def distinct_digits(
    values: Iterable[Number], most: int = MAX_DIGITS, printer: Printer | None = None
) -> int:
    """The fewest digits (6 up to ``most``) that print different values differently (``most``
    where none does)."""
    text = fmt if printer is None else printer.text
    values = list(values)
    for digits in range(DIGITS, most + 1):
        seen: dict[str, Number] = {}
        for value in values:  # by text: hashing a Fraction costs more than printing it
            other = seen.setdefault(text(value, digits), value)
            if other is not value and other != value:
                break
        else:
            return digits
    return most


def fmt_distinct(
    values: Sequence[Number], most: int = MAX_DIGITS, printer: Printer | None = None
) -> tuple[str, ...]:
    """Values shown together: one digit count for all, the fewest that keeps them distinct."""
    text = fmt if printer is None else printer.text
    digits = distinct_digits(values, most, printer)
    return tuple([text(v, digits) for v in values])


_ASCII_MINUS = re.compile(r"(?<![\w)\].])-(?=\.?\d)")


def minus_signs(text: str) -> str:
    """A message with true minus signs before its numbers ("got -1.0" → "got −1.0")."""
    return _ASCII_MINUS.sub(MINUS, text)
