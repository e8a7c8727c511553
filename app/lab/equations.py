# ruff: noqa: RUF002 (the docstrings show the lines' minus and times signs as printed)
"""Written-out lines: ``expression = result``, true as printed.

A line takes the fewest digits from 6 up at which its operands that differ print differently
and the exact value of the printed expression rounds to the printed result
(``app.lab.numbers`` states the rule). ``Formula`` holds the app's shapes of line; ``write``
prints one.
"""

from collections.abc import Sequence
from fractions import Fraction
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
    fmt,
)

# A step of a Formula's postfix program: (OPERAND, i) pushes operand i, (WHOLE, n) the whole
# number n, (k, operator) folds the last k values with "+", "-", "*" or "/".
OPERAND, WHOLE = -1, -2
Step = tuple[int, int | str]


def _negative(value: Number) -> bool:
    # On the numerator: a Fraction's own comparison is many times slower.
    return value.numerator < 0 if type(value) is Fraction else value < 0


def _whole(n: int) -> str:
    return str(n).replace("-", MINUS)


class Formula:
    """An expression taken apart: its operands, the text around them (``pieces``: a string, or
    the index of the operand printed there) and the postfix ``steps`` that compute its value,
    so that each digit count only prints the operands, adds and multiplies ints, and joins.

    A negative operand after an operator prints in parentheses: 2×(−1), 3 + (−1), (−1 − (−2)).
    """

    __slots__ = ("pieces", "scales", "steps", "units", "values", "wrapped")

    def __init__(
        self,
        values: list[Number],
        pieces: list[str | int],
        steps: list[Step],
        opening: tuple[int, ...] = (0,),
        units: tuple[tuple[str, Ratio | None], ...] = (),
    ) -> None:
        """``opening``: the operands that open the line or a parenthesis; ``units``: each operand's
        unit and its scale to the line's base unit (1 µs = 10⁻⁶ s), where operands have one."""
        self.values = values
        self.pieces = pieces
        self.steps = steps
        self.wrapped = [i not in opening and _negative(v) for i, v in enumerate(values)]
        self.units = [f" {name}" for name, _ in units] if units else None
        self.scales = [scale for _, scale in units] if units else None

    @classmethod
    def total(cls, values: Sequence[Number]) -> "Formula":
        """``a + b + …``."""
        pieces: list[str | int] = [0]
        for index in range(1, len(values)):
            pieces += (" + ", index)
        steps: list[Step] = [(OPERAND, i) for i in range(len(values))]
        steps.append((len(values), "+"))
        return cls(list(values), pieces, steps)

    @classmethod
    def mean(cls, values: Sequence[Number], count: int) -> "Formula":
        """``(a + b + …) / P``."""
        form = cls.total(values)
        form.pieces = ["(", *form.pieces, f") / {_whole(count)}"]
        form.steps += ((WHOLE, count), (2, "/"))
        return form

    @classmethod
    def weighted_mean(
        cls, weights: Sequence[Number], values: Sequence[Number], total: Number
    ) -> "Formula":
        """``(n₀×a + n₁×b + …) / N``."""
        operands: list[Number] = []
        pieces: list[str | int] = ["("]
        steps: list[Step] = []
        for index, (weight, value) in enumerate(zip(weights, values, strict=True)):
            if index:
                pieces.append(" + ")
            pieces += (2 * index, TIMES, 2 * index + 1)
            operands += (weight, value)
            steps += ((OPERAND, 2 * index), (OPERAND, 2 * index + 1), (2, "*"))
        last = len(operands)
        operands.append(total)
        pieces += (") / ", last)
        steps += ((len(weights), "+"), (OPERAND, last), (2, "/"))
        return cls(operands, pieces, steps)

    @classmethod
    def product(cls, a: Number, b: Number) -> "Formula":
        """``a×b``."""
        return cls([a, b], [0, TIMES, 1], [(OPERAND, 0), (OPERAND, 1), (2, "*")])

    @classmethod
    def share(cls, count: int, part: Number, total: Number) -> "Formula":
        """``P×n / N``."""
        return cls(
            [part, total],
            [_whole(count) + TIMES, 0, " / ", 1],
            [(WHOLE, count), (OPERAND, 0), (2, "*"), (OPERAND, 1), (2, "/")],
            opening=(),
        )

    @classmethod
    def difference(cls, a: Number, b: Number) -> "Formula":
        """``a − b``."""
        return cls([a, b], [0, f" {MINUS} ", 1], [(OPERAND, 0), (OPERAND, 1), (2, "-")])

    @classmethod
    def step(cls, w: Number, eta: Number, gradient: Number) -> "Formula":
        """``w − η×g``."""
        return cls(
            [w, eta, gradient],
            [0, f" {MINUS} ", 1, TIMES, 2],
            [(OPERAND, 0), (OPERAND, 1), (OPERAND, 2), (2, "*"), (2, "-")],
        )

    @classmethod
    def scaled_difference(cls, eta: Number, a: Number, b: Number) -> "Formula":
        """``η×(a − b)``."""
        return cls(
            [eta, a, b],
            [0, f"{TIMES}(", 1, f" {MINUS} ", 2, ")"],
            [(OPERAND, 0), (OPERAND, 1), (OPERAND, 2), (2, "-"), (2, "*")],
            opening=(0, 1),
        )

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
        return cls(
            [alpha_us, payload, gbps],
            [f"2{TIMES}({p} {MINUS} 1){TIMES}(", 0, " + ", 1, f" / ({p}{TIMES}", 2, "))"],
            [
                *((WHOLE, 2), (WHOLE, ranks), (WHOLE, 1), (2, "-")),
                *((OPERAND, 0), (OPERAND, 1), (WHOLE, ranks), (OPERAND, 2), (2, "*")),
                *((2, "/"), (2, "+"), (3, "*")),
            ],
            units=(("µs", (1, 10**6)), payload_unit, ("GB/s", (10**9, 1))),
        )

    def value(self, forms: list[Printed]) -> Ratio:
        """The exact value of the expression as printed (each operand as its printed digits,
        in the line's base unit)."""
        stack: list[Ratio] = []
        scales = self.scales
        for kind, item in self.steps:
            if kind == OPERAND:
                n, d = forms[item].value  # type: ignore[index]
                scale = None if scales is None else scales[item]  # type: ignore[index]
                stack.append((n, d) if scale is None else (n * scale[0], d * scale[1]))
            elif kind == WHOLE:
                stack.append((item, 1))  # type: ignore[arg-type]
            else:
                operands = stack[-kind:]
                del stack[-kind:]
                n, d = operands[0]
                for m, e in operands[1:]:
                    if item == "+":
                        n, d = (n + m, d) if d == e else (n * e + m * d, d * e)
                    elif item == "-":
                        n, d = (n - m, d) if d == e else (n * e - m * d, d * e)
                    elif item == "*":
                        n, d = n * m, d * e
                    else:  # keep the denominator positive
                        n, d = (n * e, d * m) if m > 0 else (-n * e, -d * m)
                stack.append((n, d))
        return stack[0]

    def render(self, forms: list[Printed]) -> str:
        units = self.units
        if units is None:
            texts = [form.text for form in forms]
        else:
            texts = [form.text + name for form, name in zip(forms, units, strict=True)]
        for index, wrap in enumerate(self.wrapped):
            if wrap:
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
    forms = [show(value, most) for value in values]
    reached = Fraction(*form.value(forms))
    if unit is not None:
        reached /= unit[1]
    return _line(form, forms, fmt(reached, most) + suffix, most)


def _line(form: Formula, forms: list[Printed], result: str, digits: int) -> Line:
    return Line(form.render(forms), tuple([f.text for f in forms]), result, digits)
