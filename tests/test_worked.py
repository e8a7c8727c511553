# ruff: noqa: RUF001, RUF003 (the lines print the minus and multiplication signs on purpose)
"""The lab's written-out lines, figures and verdict (``app.lab.worked``) against independent
references: the lesson's worked numbers, and every line read back and evaluated in Fractions."""

import random
import re
from fractions import Fraction

import pytest

from app.engine import GradientResult, from_means
from app.lab.equations import Formula, write
from app.lab.numbers import Printer
from app.lab.sentences import lab_verdict
from app.lab.worked import Lines, column, figures, lines
from tests.lab_states import as_written
from tests.test_truth import check_line, read_number

# The lesson's example: ranks with 1 and 3 items of mean gradients 1 and 3, w = 10, η = 0.1.
LESSON = from_means([1, 3], [1.0, 3.0], eta=0.1, w=10.0)


def every_line(worked: Lines) -> list[str]:
    return [
        worked.N,
        worked.g,
        worked.rank_mean,
        worked.compensated,
        worked.w_new,
        worked.w_new_rank_mean,
        worked.difference,
        *worked.factors,
        *worked.compensated_means,
    ]


def test_the_lessons_lines_are_its_worked_numbers() -> None:
    worked = lines(LESSON)
    assert worked.N == "1 + 3 = 4"
    assert worked.g == "(1×1 + 3×3) / 4 = 2.5"
    assert worked.rank_mean == "(1 + 3) / 2 = 2"
    assert worked.factors == ("2×1 / 4 = 0.5", "2×3 / 4 = 1.5")
    assert worked.compensated_means == ("0.5×1 = 0.5", "1.5×3 = 4.5")
    assert worked.compensated == "(0.5 + 4.5) / 2 = 2.5"
    assert worked.w_new == "10 − 0.1×2.5 = 9.75"
    assert worked.w_new_rank_mean == "10 − 0.1×2 = 9.8"
    assert worked.difference == "0.1×(2.5 − 2) = 0.05"


def test_the_lessons_figures_and_verdict() -> None:
    printer = Printer()
    shown = figures(LESSON, printer)
    assert (shown.N, shown.global_gradient, shown.rank_mean_gradient) == ("4", "2.5", "2")
    assert (shown.w_new, shown.w_new_rank_mean, shown.w_new_difference) == ("9.75", "9.8", "0.05")
    assert lab_verdict(LESSON.agreement, printer).startswith(
        "The plain rank mean gives 2 instead of 2.5 (0.5 lower): it weights each rank equally"
    )
    assert column(LESSON.scale_factors, exact=True) == ("0.5", "1.5")


def test_a_negative_gradient_after_an_operator_is_in_parentheses() -> None:
    result = from_means([1, 3], [-1.0, -3.0], eta=0.1, w=10.0)
    worked = lines(result)
    assert worked.g == "(1×(−1) + 3×(−3)) / 4 = −2.5"
    assert worked.w_new == "10 − 0.1×(−2.5) = 10.25"
    assert worked.w_new_rank_mean == "10 − 0.1×(−2) = 10.2"
    assert worked.difference == "0.1×(−2.5 − (−2)) = −0.05"
    assert worked.compensated_means == ("0.5×(−1) = −0.5", "1.5×(−3) = −4.5")
    # A negative first operand opens the line bare.
    assert write(Formula.step(-1.0, 0.5, 2.0), Fraction(-2)).expression == "−1 − 0.5×2"


def test_a_step_to_exactly_zero_prints_its_repeating_gradient_as_a_fraction() -> None:
    # g = (1×(−3) + 2×2 + 3×(−3)) / 6 = −4/3 and w − η·g = −2 + 1.5×4/3 = 0 exactly: no decimal
    # of −4/3 makes the line hold with its true result 0 (it printed "= −5×10⁻⁶⁰").
    result = from_means([1, 2, 3], [-3.0, 2.0, -3.0], eta=1.5, w=-2.0)
    worked = lines(result)
    assert worked.w_new == "−2 − 1.5×(−4/3) = 0"
    assert worked.w_new_rank_mean == "−2 − 1.5×(−4/3) = 0"
    # A positive fraction is bracketed too, so that it never reads as a division of the line.
    step = write(Formula.step(Fraction(1), Fraction(3, 2), Fraction(2, 3)), Fraction(0))
    assert str(step) == "1 − 1.5×(2/3) = 0"
    check_line(str(step))


def test_means_apart_past_sixty_digits_print_beside_their_difference() -> None:
    # Found by hypothesis: 1e-257 items of gradient 0 beside whole ranks make g differ from the
    # rank mean 1/5 by about 1.6e-258; the figures printed both as 0.2 and the difference line
    # read "η×(0.2 − 0.2) = 0".
    result = from_means([2.0457989640115977e-257, 0, 0.5, 2, 0], [0, 0, 1.0, 0, 0], eta=1e-9, w=0)
    g, rank_mean = result.agreement.counted, result.agreement.plain
    shown = figures(result, Printer())
    assert shown.rank_mean_gradient == "0.2"
    assert shown.global_gradient == "0.2 − 1.63664×10⁻²⁵⁸"
    assert round(float((rank_mean - g) * 10**258), 5) == 1.63664
    worked = lines(result)
    assert worked.difference == "1×10⁻⁹×((0.2 − 1.63664×10⁻²⁵⁸) − 0.2) = −1.63664×10⁻²⁶⁷"
    check_line(worked.difference)
    # A learning rate of more digits: the line still tells the means apart.
    result = from_means(result.counts, result.means, eta=0.0207491395, w=0)
    assert lines(result).difference == "0.0207491×((0.2 − 1.63664×10⁻²⁵⁸) − 0.2) = −3.3959×10⁻²⁶⁰"
    # Neither mean is the 60 digits they share: g, nearer that text, keeps it, and the rank
    # mean 1/6 prints beside its exact difference from g.
    result = from_means([1, 2, 1e-250], [0.1, 0.2, 0.2], eta=1e-9, w=0)
    shown = figures(result, Printer())
    sixth = "0." + "1" + "6" * 58 + "7"
    assert shown.global_gradient == sixth
    assert shown.rank_mean_gradient == f"{sixth} − 1.11111×10⁻²⁵²"
    check_line(lines(result).difference)


# A minus sign right after an operator, with no parenthesis of its own: "0.1×−2.5", "3 + −1".
BARE_NEGATIVE = re.compile(r"[×/+]\s?−|\s−\s−")


def random_result(rng: random.Random) -> GradientResult:
    ranks = rng.randint(1, 8)
    counts = [float(rng.choice([0, 1, 2, 3, 7, 64, 0.5, 1e-3, 12.25])) for _ in range(ranks)]
    counts[0] = counts[0] or 1.0
    base = rng.uniform(-50, 50)
    means = [
        rng.choice([round(rng.uniform(-50, 50), rng.randint(0, 4)), base, base + 1e-9, -base])
        for _ in range(ranks)
    ]
    eta = rng.choice([0.1, 0.35, 1e-3, 1.5, 0.123456789])
    w = rng.choice([10.0, -3.5, 0.0, 1e6, 123.456])
    return from_means(counts, means, eta=eta, w=w)


def test_every_line_holds_as_printed_in_fractions() -> None:
    """Each line read back: the printed expression's exact value rounds to the printed
    result, no negative operand goes unbracketed, and the results are the exact values."""
    rng = random.Random(30)
    for _ in range(300):
        result = random_result(rng)
        worked = lines(result)
        for line in every_line(worked):
            assert not BARE_NEGATIVE.search(line), line
            check_line(line)
        g, rank_mean = result.agreement.counted, result.agreement.plain
        w, eta = as_written(result.w), as_written(result.eta)
        for line, truth in (
            (worked.N, sum(map(as_written, result.counts), Fraction(0))),
            (worked.g, g),
            (worked.rank_mean, rank_mean),
            (worked.w_new, w - eta * g),
            (worked.w_new_rank_mean, w - eta * rank_mean),
            (worked.difference, eta * (g - rank_mean)),
        ):
            shown, half = read_number(line.rsplit(" = ", 1)[1])
            assert abs(shown - truth) <= half, (line, truth)  # rounded, ties included


@pytest.mark.parametrize(
    ("a", "b", "line"),
    [
        # Operands that differ print apart: 7 digits where 6 print them alike.
        (Fraction(1000001, 10**6), Fraction(1), "1.000001 − 1 = 1×10⁻⁶"),
        # The result takes fewer digits where its own would not hold.
        (Fraction(2, 3), Fraction(1, 7), "0.666667 − 0.142857 = 0.52381"),
        # Exact values closer than floats show: more than 17 digits.
        (Fraction(1) + Fraction(1, 10**20), Fraction(1), "1.00000000000000000001 − 1 = 1×10⁻²⁰"),
    ],
)
def test_a_line_takes_the_fewest_digits_that_hold(a: Fraction, b: Fraction, line: str) -> None:
    written = write(Formula.difference(a, b), a - b, most=60)
    assert str(written) == line
    check_line(line)
