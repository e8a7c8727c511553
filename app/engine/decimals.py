"""A number as it was written: each float read as the shortest decimal that reads back as it.

The lab's inputs arrive as decimal text and become floats: 3.7 is stored as 3.700000000000000177….
Exact arithmetic on those binary values gives means typed to sum to 0 (3.7, -2.3, 8.8, -2.7,
-6.6, -3.9, 3) a plain mean of 1.9e-16; read as written (``repr``: the shortest decimal that
reads back as the same float) they sum to exactly 0, and every exact result is of the numbers
the reader sees, rounded once. A float computed from others (0.30000000000000004) reads as its
shortest decimal too: the float nearest to a result is the same either way but for ties past
its 17th digit. Pure Python, for the engine and for ``app.lab`` (whether two numbers are one).
"""

from collections.abc import Iterable
from fractions import Fraction

Ratio = tuple[int, int]

# Whole floats below this are exact integers and print as themselves (repr of 1e16 is "1e+16").
_EXACT_WHOLE = 2.0**53
# repr writes at most 17 significant digits in fixed notation (from 1e-4 up to 1e16).
_POWERS = [10**k for k in range(24)]
# The quick search for a short decimal: up to 6 places, below 1e9 (a slider's 3.7, η's 0.35).
_FEW_PLACES_BELOW = 1e9
_SCALES = [(10.0**k, 10**k) for k in range(1, 7)]


def decimal_ratio(value: float) -> Ratio:
    """``value`` as written, ``(top, 10**k)``, unreduced: the denominators of any two share the
    larger as a multiple of the smaller, so sums stay plain integers over the largest one."""
    if -_EXACT_WHOLE < value < _EXACT_WHOLE and value.is_integer():
        return int(value), 1
    if -_FEW_PLACES_BELOW < value < _FEW_PLACES_BELOW:
        # A decimal of k ≤ 6 places that reads back as value is what repr writes: below 1e9 a
        # float's spacing is under 10⁻⁶, so at most one such decimal has k places, and none with
        # fewer was found. value·10ᵏ is within 0.2 of its integer, so round() finds it, and the
        # int division (rounded once) checks it.
        for scale, power in _SCALES:
            top = round(value * scale)
            if top / power == value:
                return top, power
    text = repr(value)
    if "e" not in text:  # fixed notation, the common case: "-3.7"
        point = text.find(".")
        return int(text[:point] + text[point + 1 :]), _POWERS[len(text) - point - 1]
    mantissa, _, exponent = text.partition("e")
    point = mantissa.find(".")
    if point < 0:
        digits, places = mantissa, 0
    else:
        digits, places = mantissa[:point] + mantissa[point + 1 :], len(mantissa) - point - 1
    places -= int(exponent)
    top = int(digits)
    if places >= 0:
        return top, 10**places
    return top * 10**-places, 1


def as_decimal(value: float) -> Fraction:
    """``value`` as written, exactly (``Fraction(repr(value))``, without parsing a string)."""
    return Fraction(*decimal_ratio(value))


def same_number(a: float | Fraction | int, b: float | Fraction | int) -> bool:
    """Whether two numbers are one number as written: a float and an exact value compare by
    the float's decimal (0.35 is 7/20), two floats or two exact values as they are."""
    if a == b:
        return True
    if (type(a) is float) is (type(b) is float):
        return False
    return (as_decimal(a) if type(a) is float else a) == (as_decimal(b) if type(b) is float else b)


def ratio_sum(ratios: Iterable[Ratio]) -> Ratio:
    """The exact sum of ratios ``(top, bottom)``, ``bottom > 0``, as one unreduced ratio.

    Where one denominator divides the other (powers of ten, as ``decimal_ratio`` gives, or of
    two, as ``float.as_integer_ratio`` does) the sum stays over the larger one: plain integer
    arithmetic, with none of Fraction's gcd at each step.
    """
    top, bottom = 0, 1
    for p, q in ratios:
        if q == bottom:
            top += p
        elif bottom % q == 0:
            top += p * (bottom // q)
        elif q % bottom == 0:
            top, bottom = top * (q // bottom) + p, q
        else:
            top, bottom = top * q + p * bottom, bottom * q
    return top, bottom
