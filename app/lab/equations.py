# ruff: noqa: RUF002 (the docstrings show the lines' minus and times signs as printed)
"""Written-out lines: ``expression = result``, true as printed.

A line takes the fewest digits from 6 up at which its operands that differ print differently
and the exact value of the printed expression rounds to the printed result
(``app.lab.numbers`` states the rule). ``Formula`` holds the app's shapes of line; ``write``
prints one.
"""

from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from functools import reduce
from typing import NamedTuple

from app.engine.decimals import same_number
from app.lab.numbers import (
    DIGITS,
    MAX_DIGITS,
    MINUS,
    TIMES,
    Number,
    Printed,
    Printer,
    Ratio,
    apart,
    fmt,
    fraction_printed,
)

# How a formula computes its value from its operands' exact printed values.
Compute = Callable[[list[Ratio]], Ratio]


def _add(a: Ratio, b: Ratio) -> Ratio:
    (n, d), (m, e) = a, b
    return (n + m, d) if d == e else (n * e + m * d, d * e)


def _sum(values: Iterable[Ratio]) -> Ratio:
    return reduce(_add, values)


def _sub(a: Ratio, b: Ratio) -> Ratio:
    (n, d), (m, e) = a, b
    return (n - m, d) if d == e else (n * e - m * d, d * e)


def _mul(a: Ratio, b: Ratio) -> Ratio:
    return a[0] * b[0], a[1] * b[1]


def _div(a: Ratio, b: Ratio) -> Ratio:
    (n, d), (m, e) = a, b
    return (n * e, d * m) if m > 0 else (-n * e, -d * m)  # the denominator stays positive


def _negative(value: Number) -> bool:
    # On the numerator: a Fraction's own comparison is many times slower.
    return value.numerator < 0 if type(value) is Fraction else value < 0


def _whole(n: int) -> str:
    return str(n).replace("-", MINUS)


class Formula:
    """An expression taken apart: its operands, the text around them (``pieces``: a string, or
    the index of the operand printed there) and how it computes its value, so that each digit
    count only prints the operands, adds and multiplies ints, and joins.

    A negative operand after an operator prints in parentheses: 2×(−1), 3 + (−1), (−1 − (−2)).
    """

    __slots__ = ("compute", "pieces", "scales", "units", "values", "wrapped")

    def __init__(
        self,
        values: list[Number],
        pieces: list[str | int],
        compute: Compute,
        opening: tuple[int, ...] = (0,),
        units: tuple[tuple[str, Ratio | None], ...] = (),
    ) -> None:
        """``opening``: the operands that open the line or a parenthesis; ``units``: each operand's
        unit and its scale to the line's base unit (1 µs = 10⁻⁶ s), where operands have one."""
        self.values = values
        self.pieces = pieces
        self.compute = compute
        self.wrapped = [i not in opening and _negative(v) for i, v in enumerate(values)]
        self.units = [f" {name}" for name, _ in units] if units else None
        self.scales = [scale for _, scale in units] if units else None

    @classmethod
    def total(cls, values: Sequence[Number]) -> "Formula":
        """``a + b + …``."""
        pieces: list[str | int] = [0]
        for index in range(1, len(values)):
            pieces += (" + ", index)
        return cls(list(values), pieces, _sum)

    @classmethod
    def mean(cls, values: Sequence[Number], count: int) -> "Formula":
        """``(a + b + …) / P``."""
        form = cls.total(values)
        form.pieces = ["(", *form.pieces, f") / {_whole(count)}"]
        form.compute = lambda v: _div(_sum(v), (count, 1))
        return form

    @classmethod
    def weighted_mean(
        cls, weights: Sequence[Number], values: Sequence[Number], total: Number
    ) -> "Formula":
        """``(n₀×a + n₁×b + …) / N``."""
        operands = [x for pair in zip(weights, values, strict=True) for x in pair]
        pieces: list[str | int] = ["("]
        for index in range(0, len(operands), 2):
            pieces += (" + ", index, TIMES, index + 1) if index else (index, TIMES, index + 1)
        pieces += (") / ", len(operands))

        def compute(v: list[Ratio]) -> Ratio:
            return _div(_sum(map(_mul, v[:-1:2], v[1:-1:2])), v[-1])

        return cls([*operands, total], pieces, compute)

    @classmethod
    def product(cls, a: Number, b: Number) -> "Formula":
        """``a×b``."""
        return cls([a, b], [0, TIMES, 1], lambda v: _mul(v[0], v[1]))

    @classmethod
    def share(cls, count: int, part: Number, total: Number) -> "Formula":
        """``P×n / N``."""
        pieces: list[str | int] = [_whole(count) + TIMES, 0, " / ", 1]
        return cls([part, total], pieces, lambda v: _div(_mul((count, 1), v[0]), v[1]), ())

    @classmethod
    def difference(cls, a: Number, b: Number) -> "Formula":
        """``a − b``."""
        return cls([a, b], [0, f" {MINUS} ", 1], lambda v: _sub(v[0], v[1]))

    @classmethod
    def step(cls, w: Number, eta: Number, gradient: Number) -> "Formula":
        """``w − η×g``."""
        pieces: list[str | int] = [0, f" {MINUS} ", 1, TIMES, 2]
        return cls([w, eta, gradient], pieces, lambda v: _sub(v[0], _mul(v[1], v[2])))

    @classmethod
    def scaled_difference(cls, eta: Number, a: Number, b: Number) -> "Formula":
        """``η×(a − b)``."""
        pieces: list[str | int] = [0, f"{TIMES}(", 1, f" {MINUS} ", 2, ")"]
        return cls([eta, a, b], pieces, lambda v: _mul(v[0], _sub(v[1], v[2])), (0, 1))

    @classmethod
    def ring(
        cls,
        ranks: int,
        alpha_us: Number,
        payload: Number,
        payload_unit: tuple[str, Ratio | None],
        gbps: Number,
    ) -> "Formula":
        """``2×(P − 1)×(α µs + payload / (P×bandwidth GB/s))``: a ring all-reduce's time in
        seconds, the payload in ``payload_unit`` (its name and scale to bytes)."""
        p = _whole(ranks)

        def compute(v: list[Ratio]) -> Ratio:
            steps = _mul((2, 1), _sub((ranks, 1), (1, 1)))
            return _mul(steps, _add(v[0], _div(v[1], _mul((ranks, 1), v[2]))))

        return cls(
            [alpha_us, payload, gbps],
            [f"2{TIMES}({p} {MINUS} 1){TIMES}(", 0, " + ", 1, f" / ({p}{TIMES}", 2, "))"],
            compute,
            units=(("µs", (1, 10**6)), payload_unit, ("GB/s", (10**9, 1))),
        )

    def value(self, forms: list[Printed]) -> Ratio:
        """The exact value of the expression as printed (each operand as its printed digits,
        in the line's base unit)."""
        if self.scales is None:
            return self.compute([form.value for form in forms])
        return self.compute(
            [
                form.value if scale is None else _mul(form.value, scale)
                for form, scale in zip(forms, self.scales, strict=True)
            ]
        )

    def render(self, forms: list[Printed]) -> str:
        units = self.units
        if units is None:
            texts = [form.text for form in forms]
        else:
            texts = [form.text + name for form, name in zip(forms, units, strict=True)]
        for index, wrap in enumerate(self.wrapped):
            if wrap or "/" in forms[index].text or " " in forms[index].text:  # one operand
                texts[index] = f"({texts[index]})"
        return "".join([piece if isinstance(piece, str) else texts[piece] for piece in self.pieces])


def holds(value: Ratio, result: Printed, scale: Ratio | None = None) -> bool:
    """The printed expression's exact ``value`` rounds to the printed ``result``: it lies
    strictly within half a unit of the result's last printed digit, or equals it. ``scale``
    converts the result's unit to the expression's (the result "15 ms": (1, 1000))."""
    n, d = value
    (vn, vd), (hn, hd) = result.value, result.half
    if scale is not None:
        vn, vd = vn * scale[0], vd * scale[1]
        hn, hd = hn * scale[0], hd * scale[1]
    gap = abs(n * vd - vn * d)  # |n/d - v| < half, in integers (d > 0)
    return gap == 0 or gap * hd < hn * d * vd


class Line(NamedTuple):
    """A written-out line: the expression, its operands and its result as printed, and the
    digits the operands took."""

    expression: str
    operands: tuple[str, ...]
    result: str
    digits: int

    def __str__(self) -> str:
        return f"{self.expression} = {self.result}"


def write(
    form: Formula,
    result: Number,
    unit: tuple[str, Fraction] | None = None,
    most: int = MAX_DIGITS,
    printer: Printer | None = None,
) -> Line:
    """``form = result`` printed with the fewest digits (6 up to ``most``) that make it hold.

    Per digit count d: the operands print with d digits and must print distinct where they
    differ; the result prints with d digits or, where that does not hold, with fewer (as many
    as hold, at least 3), and the printed expression's exact value must round to it. So
    operands print as the figures beside the line do wherever that can hold: 1.9087 − 0.975 =
    0.9337, not 1.908695652173913 − 0.975 = 0.933695652173913. If no d up to ``most`` works,
    the result is printed from the printed expression itself (it differs from ``result`` by
    rounding only). ``unit`` = (name, scale) prints the result in that unit (``result /
    scale``). ``printer`` shares printed numbers with the request's other lines and figures.
    """
    show = Printer() if printer is None else printer
    suffix, shown_result, scale = "", result, None
    if unit is not None:
        suffix, shown_result = f" {unit[0]}", Fraction(result) / unit[1]
        scale = (unit[1].numerator, unit[1].denominator)
    values = form.values
    for digits in range(DIGITS, most + 1):
        forms = [show(value, digits) for value in values]
        seen: dict[str, Number] = {}
        for value, operand in zip(values, forms, strict=True):
            other = seen.setdefault(operand.text, value)
            if other is not value and not same_number(other, value):
                break  # two different operands print alike
        else:
            exact = form.value(forms)
            for result_digits in range(digits, 2, -1):
                answer = show(shown_result, result_digits)
                if not holds(exact, answer, scale):
                    continue
                # The result may print like an operand only when it is that operand, carries a
                # unit, or the printed line is exact: (2.1 + 1.4 + 2.8) / 3 = 2.1 (the floats'
                # mean 2.09999999999999994, the first 2.10000000000000009); not 1 + 10⁻⁹ = 1.
                alike = seen.get(answer.text)
                if (
                    alike is None
                    or unit is not None
                    or same_number(alike, result)
                    or holds(exact, answer._replace(half=(0, 1)), scale)
                ):
                    return _line(form, forms, answer.text + suffix, digits)
    # Two kinds of operand no decimal can hold a line with: one whose decimals never end
    # beside an exact result, printed as its fraction (-2 - 1.5*(-4/3) = 0), and different
    # ones that print alike past ``most`` digits, told apart (0.2 and 0.2 + 1.6e-258).
    fixed = {i: f for i, value in enumerate(values) if (f := fraction_printed(value))}
    fixed |= apart(values, [show(value, most) for value in values])
    if fixed:
        for digits in range(DIGITS, most + 1):
            forms = [fixed.get(i) or show(value, digits) for i, value in enumerate(values)]
            exact = form.value(forms)
            for result_digits in range(digits, 2, -1):
                answer = show(shown_result, result_digits)
                if holds(exact, answer, scale):
                    return _line(form, forms, answer.text + suffix, digits)
    forms = [show(value, most) for value in values]
    reached = Fraction(*form.value(forms))
    if unit is not None:
        reached /= unit[1]
    return _line(form, forms, fmt(reached, most) + suffix, most)


def _line(form: Formula, forms: list[Printed], result: str, digits: int) -> Line:
    return Line(form.render(forms), tuple([f.text for f in forms]), result, digits)
