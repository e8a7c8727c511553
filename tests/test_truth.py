"""Every sentence and number the lab shows holds for its inputs: properties over generated states.

Each rendered line ("(2×1 + 6×3) / 8 = 2.5", "0.1×(2.5 − 2) = 0.05", the ring's times) and each
sentence (the verdict, the SGD courses, the ring note) is parsed back with a parser written here,
apart from the app, and checked against exact ``Fraction`` arithmetic on the inputs:

1. a line holds as printed: its expression's exact value rounds to its printed result;
2. every printed number is its true value rounded at its last printed digit;
3. different values shown side by side never print alike;
4. the verdict names the condition that holds, exactly (one rank, equal counts, equal means,
   zero means, a coincidence, or that they differ and by how much);
5. exact zeros: equal gradients give a difference of exactly 0 in the engine, API and page;
6. a scheme is said to head to its fixed point only when |contraction| < 1;
7. the ring's sentence names the term that dominates, or that neither does;
8. subnormal counts and weights are refused the same way in every form and endpoint.

The number of generated states is printed at the end of the module (run with ``-s``).
"""

# The lab writes true minus and times signs; so do the expected strings here.
# ruff: noqa: RUF001, RUF002, RUF003

import random
import re
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from app.engine import EngineError, accumulate, from_items, from_means, ring_allreduce, trajectory
from app.lab.compute import compute
from app.lab.numbers import fmt
from app.lab.state import GradientRequest, RingRequest
from app.lab.view import lab_charts, lab_details, lab_view, ring_view
from tests.lab_states import as_written, means_state, ring_state

STATES: Counter[str] = Counter()
MINUS, TIMES = "\u2212", "\u00d7"
SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
UNITS = {
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "ns": Fraction(1, 10**9),
    "s": Fraction(1),
    "MB": Fraction(10**6),
    "GB/s": Fraction(10**9),
    "bytes": Fraction(1),
}


@pytest.fixture(scope="module", autouse=True)
def count_states() -> Iterator[None]:
    yield
    total = STATES["means"] + STATES["items"] + STATES["ring"]
    print(f"\nproperties ran over {total} generated states: {dict(STATES)}")


# ---- an independent reader of printed numbers and lines ------------------------------------------

NUMBER = r"−?\d+(?:\.\d+)?(?:×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?"
TOKEN = re.compile(
    rf"\s*(?:(?P<num>{NUMBER})(?:\s(?P<unit>µs|ms|ns|s|MB|GB/s|bytes)\b)?|(?P<op>[-+−×/()]))"
)


def read_number(text: str) -> tuple[Fraction, Fraction]:
    """A printed number: its value and half a unit of its last digit (0 for "0" and p/q); a
    figure beside one it differs from only past 60 digits is "x ± d": x exactly, then d."""
    text = text.strip()
    beside = re.fullmatch(r"(\S+) ([+−]) (\S+)", text)
    if beside:
        base, sign, rest = beside.groups()
        (value, base_half), (difference, half) = read_number(base), read_number(rest)
        return value + (difference if sign == "+" else -difference), base_half + half
    if re.fullmatch(r"−?\d+/\d+", text):
        p, q = text.lstrip("−").split("/")
        value = Fraction(int(p), int(q))
        return (-value if text.startswith("−") else value), Fraction(0)
    match = re.fullmatch(r"(−)?(\d+)(?:\.(\d+))?(?:×10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?", text)
    assert match, f"not a number as the lab prints them: {text!r}"
    sign, whole, decimals, power = match.groups()
    decimals = decimals or ""
    exponent = int(power.translate(SUPER)) if power else 0
    unit = Fraction(10) ** (exponent - len(decimals))
    value = int(whole + decimals) * unit * (-1 if sign else 1)
    return value, (Fraction(0) if value == 0 else unit / 2)


def read_quantity(text: str) -> tuple[Fraction, Fraction]:
    """A printed number with an optional unit, in base units (seconds, bytes)."""
    parts = text.strip().split(" ")
    if len(parts) == 3:  # "x ± d"
        return read_number(text)
    value, half = read_number(parts[0])
    scale = UNITS[parts[1]] if len(parts) > 1 else Fraction(1)
    return value * scale, half * scale


class Expression:
    """Recursive descent over + − × / and parentheses, numbers with units, exactly."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text):
            match = TOKEN.match(text, position)
            assert match, f"cannot read {text[position:]!r} in {text!r}"
            assert match.end() > position, text
            if match["num"] is not None:
                value, _ = read_number(match["num"])
                if match["unit"]:
                    value *= UNITS[match["unit"]]
                self.tokens.append(("num", str(value)))
            else:
                self.tokens.append(("op", match["op"]))
            position = match.end()
        self.at = 0

    def value(self) -> Fraction:
        result = self.sum()
        assert self.at == len(self.tokens), self.tokens[self.at :]
        return result

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def sum(self) -> Fraction:
        result = self.product()
        while self.peek() in ("+", "−"):
            operator = self.tokens[self.at][1]
            self.at += 1
            right = self.product()
            result = result + right if operator == "+" else result - right
        return result

    def product(self) -> Fraction:
        result = self.atom()
        while self.peek() in ("×", "/"):
            operator = self.tokens[self.at][1]
            self.at += 1
            right = self.atom()
            result = result * right if operator == "×" else result / right
        return result

    def atom(self) -> Fraction:
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "num":
            return Fraction(text)
        assert text == "(", self.tokens
        inner = self.sum()
        assert self.tokens[self.at][1] == ")"
        self.at += 1
        return inner


def check_line(line: str) -> Fraction:
    """Property 1: ``expression = result`` holds as printed; returns the printed result."""
    expression, result = line.rsplit(" = ", 1)
    exact = Expression(expression).value()
    shown, half = read_quantity(result)
    assert exact == shown or abs(exact - shown) < half, f"{line!r}: the expression is {exact}"
    return shown


def check_rounded(text: str, truth: Fraction, slack: Fraction = Fraction(0)) -> None:
    """Property 2: the printed number is the true value rounded at its last printed digit
    (``slack`` allows the float the engine returns, one rounding from the truth)."""
    shown, half = read_quantity(text)
    if half == 0:
        assert shown == truth, (text, truth)
    else:
        assert abs(shown - truth) <= half + slack, (text, float(truth))


def ulps(value: Fraction, count: int = 2) -> Fraction:
    """Room for a float result rounded once (and its printing): a few units in its last place."""
    import math

    return Fraction(math.ulp(abs(float(value)) or 1e-300)) * count


# ---- the exact reference -------------------------------------------------------------------------


def exact(counts: list[float], means: list[float]) -> tuple[Fraction, Fraction]:
    """Both means of the inputs as written (3.7 is 37/10, not the float's binary value)."""
    n = [as_written(c) for c in counts]
    m = [as_written(x) if c else Fraction(0) for c, x in zip(counts, means, strict=True)]
    total = sum(n, Fraction(0))
    g = sum((a * b for a, b in zip(n, m, strict=True)), Fraction(0)) / total
    return g, sum(m, Fraction(0)) / len(m)


def condition(counts: list[float], means: list[float]) -> str:
    """Which condition makes the schemes agree (or not), decided here apart from the engine."""
    g, rank_mean = exact(counts, means)
    occupied = [as_written(m) for c, m in zip(counts, means, strict=True) if c]
    empty = len(occupied) < len(counts)
    if len(counts) == 1:
        return "one rank"
    if len(set(counts)) == 1:
        return "equal counts"
    if not empty and len(set(occupied)) == 1:
        return "equal means"
    if empty and not any(occupied):
        return "zero means"
    if g == rank_mean:
        return "coincidence"
    return "differ"


PHRASES = {
    "one rank": "there is one rank",
    "equal counts": "every rank has the same count",
    "equal means": "every rank has the same mean gradient",
    "zero means": "every rank with items has mean gradient 0",
    "coincidence": "happen to give the same value",
}

# ---- strategies ----------------------------------------------------------------------------------

nice = st.sampled_from([0.0, 1.0, 2.0, 3.0, 6.0, 0.5, 2.5, 7.0, 64.0])
near_one = st.integers(-50, 50).map(lambda k: 1.0 + k * 1e-9)
anything = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
count_value = st.one_of(
    nice, near_one, st.floats(0, 64, allow_nan=False).filter(lambda x: x == 0 or x > 1e-300)
)
mean_value = st.one_of(nice, near_one, anything, st.just(-3.0))
W = st.one_of(st.sampled_from([0.0, 10.0, -2.0, 123456.7, 1e12, -1e12, 9.9]), anything)
ETA = st.one_of(
    st.sampled_from([1e-9, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 1e6]),
    st.floats(1e-9, 10.0, allow_nan=False),
)


@st.composite
def means_states(draw: st.DrawFn) -> tuple[list[float], list[float], float, float]:
    ranks = draw(st.integers(1, 8))
    kind = draw(
        st.sampled_from(["equal counts", "equal means", "both", "zeros", "coincidence", "free"])
    )
    counts = [draw(count_value) for _ in range(ranks)]
    means = [draw(mean_value) for _ in range(ranks)]
    if kind in ("equal counts", "both"):
        counts = [counts[0]] * ranks
    if kind in ("equal means", "both"):
        means = [means[0]] * ranks
    if kind == "zeros":
        means = [0.0 if i % 2 else m for i, m in enumerate(means)]
        counts = [0.0 if i % 3 == 1 else c for i, c in enumerate(counts)]
    if kind == "coincidence":
        # Counts c, 2c, 3c and means a, b, a: (a + 2b + 3a)/6 = (2a + b)/3 for any a and b.
        unit = draw(st.sampled_from([1.0, 2.0, 0.5, 4.0]))
        a, b = draw(st.sampled_from([1.0, -3.0, 0.5, 7.0])), draw(st.sampled_from([2.0, 5.0]))
        counts, means = [unit, 2 * unit, 3 * unit], [a, b, a]
    if not any(counts):
        counts[0] = 1.0
    return counts, means, draw(ETA), draw(W)


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- properties ----------------------------------------------------------------------------------


@PROPERTY
@given(state=means_states())
# A step to exactly 0 from a gradient whose decimals never end (−4/3), found by hypothesis.
@example(state=([1.0, 2.0, 3.0], [-3.0, 2.0, -3.0], 1.5, -2.0))
# Means apart only past 60 digits, found by hypothesis.
@example(
    state=([2.0457989640115977e-257, 0.0, 0.5, 2.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0], 1e-09, 0.0)
)
@example(
    state=(
        [2.0457989640115977e-257, 0.0, 0.5, 2.0, 0.0],
        [0.0, 0.0, 1.0, 0.0, 0.0],
        0.0207491395,
        0.0,
    )
)
# Two means whose decimals never end, each nearly as far from the 60 digits they share.
@example(state=([1.0, 2.0, 1e-250], [0.1, 0.2, 0.2], 1e-09, 0.0))
def test_verdict_figures_and_lines_hold_for_any_means_state(
    state: tuple[list[float], list[float], float, float],
) -> None:
    counts, means, eta, w = state
    note(f"counts={counts} means={means} eta={eta} w={w}")
    STATES["means"] += 1
    result = from_means(counts, means, eta=eta, w=w)
    g, rank_mean = exact(counts, means)
    step, start = as_written(eta), as_written(w)
    lab_state = means_state(tuple(counts), tuple(means), eta, w)
    view = lab_view(result)
    details = lab_details(result, lab_state)

    # 4. the verdict: exactly the condition that holds
    held = condition(counts, means)
    STATES[f"means: {held}"] += 1
    assert view.agree is (g == rank_mean)
    if held == "differ":
        plain, counted, difference, side, reason = verdict_parts(view.verdict, rank_mean, g)
        check_rounded(plain, rank_mean, ulps(rank_mean))
        check_rounded(counted, g, ulps(g))
        check_rounded(difference, abs(rank_mean - g), ulps(rank_mean - g))
        assert side == ("higher" if rank_mean > g else "lower")
        kept = [(c, m) for c, m in zip(counts, means, strict=True) if c]
        if len(kept) < len(counts) and (
            len({c for c, _ in kept}) == 1 or len({as_written(m) for _, m in kept}) == 1
        ):
            # Only the empty ranks make the difference: the ranks with items alone would agree.
            assert reason == "it counts each empty rank as a mean of 0 and still divides by P"
        else:
            assert reason.startswith("it weights each rank equally, not each item"), reason
            if len(kept) < len(counts):
                assert "empty rank" in reason
    else:
        assert view.verdict.startswith("Both schemes agree here: "), view.verdict
        assert PHRASES[held] in view.verdict, (held, view.verdict)

    # 5. exact zeros: equal gradients, a difference of exactly 0, everywhere
    assert result.w_new_difference == float(step * (g - rank_mean))
    if g == rank_mean:
        assert result.global_gradient == result.rank_mean_gradient
        assert result.w_new_difference == 0.0
        assert view.w_new_difference == "0"

    # 2 and 3. the headline figures
    for name, text, truth in (
        ("N", view.N, sum(map(as_written, counts), Fraction(0))),
        ("g", view.global_gradient, g),
        ("rank mean", view.rank_mean_gradient, rank_mean),
        ("w_new", view.w_new, start - step * g),
        ("w_new rank mean", view.w_new_rank_mean, start - step * rank_mean),
        ("difference", view.w_new_difference, step * (g - rank_mean)),
    ):
        note(name)
        check_rounded(text, truth, ulps(truth))
    # Different values never print alike, even where their floats are equal.
    assert (view.global_gradient == view.rank_mean_gradient) is (g == rank_mean)
    # The steps print as the floats the engine returns: alike exactly when those are equal.
    assert (view.w_new == view.w_new_rank_mean) is (result.w_new == result.w_new_rank_mean)

    # 1. every written-out line holds as printed, and its result is the true value
    check_rounded(check_line_text(details.lines.N), sum(map(as_written, counts), Fraction(0)))
    check_rounded(check_line_text(details.lines.g), g, ulps(g))
    check_rounded(check_line_text(details.lines.rank_mean), rank_mean, ulps(rank_mean))
    check_line(details.lines.compensated)
    check_rounded(check_line_text(details.lines.w_new), start - step * g, ulps(start - step * g))
    check_line(details.lines.w_new_rank_mean)
    check_rounded(check_line_text(details.lines.difference), step * (g - rank_mean), ulps(w))
    for row in details.ranks:
        check_line(row.factor_formula)
        check_line(row.compensated_formula)
        if row.empty:
            assert row.influence_global == row.influence_rank_mean == "0"


def verdict_parts(verdict: str, rank_mean: Fraction, g: Fraction) -> tuple[str, ...]:
    """The verdict of two means that differ: plain, counted, difference, side and reason, with
    its arithmetic checked: "x instead of y (d lower)", where y − x = d holds as printed and x,
    y print apart (a mean apart from the other only past 60 digits prints as "x − d")."""
    match = re.fullmatch(
        r"The plain rank mean gives (.+?) instead of (.+?) \((\S+) (lower|higher)\): (.+)\.",
        verdict,
    )
    assert match, verdict
    plain, counted, difference, side, _ = match.groups()
    high, low = (plain, counted) if side == "higher" else (counted, plain)
    check_line(f"({high}) − ({low}) = {difference}")
    assert plain != counted  # 3. different values never print alike
    return match.groups()


def six_digit_line(expression: str, operands: list[Fraction], result: Fraction) -> bool:
    """Whether ``expression`` (``operands`` printed with 6 digits) ``= result`` can be written
    so that it holds (1) with the result printed with 6 digits or fewer (at least 3), different
    operands printing apart (3) and the result printing like none of them but its equal."""
    shown = {fmt(x): x for x in operands}
    if len(shown) < len(set(operands)):
        return False
    for digits in range(6, 2, -1):
        text = fmt(result, digits)
        if text in shown and shown[text] != result:
            continue
        try:
            check_line(f"{expression} = {text}")
        except AssertionError:
            continue
        return True
    return False


def test_the_verdict_and_the_lines_print_the_figures_numbers_wherever_a_line_can() -> None:
    """Where the two means, printed as the figures print them (6 digits), can make "x instead
    of y (d lower)" hold, the verdict prints them so; so does the line η (g − rank mean). For
    a quarter of the sliders' states the verdict printed 1.908695652173913 beside the figure
    1.9087: the plain mean of 1.5, −2.3, 4 and 0.7 is 0.9750000000000000333 exactly, and longer
    operands were tried before a shorter result."""
    rng = random.Random(31)
    verdicts = lines = 0
    for _ in range(1500):
        ranks = rng.randint(2, 8)
        counts = [float(rng.randint(1, 64)) for _ in range(ranks)]
        means = [rng.randint(-100, 100) / 10 for _ in range(ranks)]
        g, rank_mean = exact(counts, means)
        if g == rank_mean:
            continue
        result = from_means(counts, means, eta=0.35, w=-3.5)
        lab_state = means_state(tuple(counts), tuple(means), 0.35, -3.5)
        high, low = (rank_mean, g) if rank_mean > g else (g, rank_mean)
        if six_digit_line(f"{fmt(high)} − {fmt(low)}", [high, low], high - low):
            verdicts += 1
            plain, counted, *_ = verdict_parts(lab_view(result).verdict, rank_mean, g)
            assert (plain, counted) == (fmt(rank_mean), fmt(g)), (counts, means)
        eta = as_written(0.35)
        # g opens the parenthesis bare; the rank mean follows a minus, bracketed if negative.
        shown_rank_mean = f"({fmt(rank_mean)})" if rank_mean < 0 else fmt(rank_mean)
        expression = f"0.35×({fmt(g)} − {shown_rank_mean})"
        if six_digit_line(expression, [eta, g, rank_mean], eta * (g - rank_mean)):
            lines += 1
            line = lab_details(result, lab_state).lines.difference
            assert line.startswith(f"{expression} = "), (counts, means, line)
    assert verdicts > 1400
    assert lines > 1000


def test_means_apart_past_sixty_digits_print_beside_their_difference() -> None:
    # Found by hypothesis: the two means differ by about 1e-250; the verdict said "(0 higher)",
    # and the figures printed both as -1.5.
    counts, means = [0.0, 1.0, 1.0, 1.327e-250], [-3.0, -3.0, 0.0, -3.0]
    g, rank_mean = exact(counts, means)
    view = lab_view(from_means(counts, means, eta=0.1, w=1.0))
    assert view.global_gradient != view.rank_mean_gradient
    check_rounded(view.global_gradient, g)
    check_rounded(view.rank_mean_gradient, rank_mean)
    plain, counted, difference, side, _ = verdict_parts(view.verdict, rank_mean, g)
    check_rounded(plain, rank_mean, ulps(rank_mean))
    check_rounded(counted, g, ulps(g))
    check_rounded(difference, abs(rank_mean - g), ulps(rank_mean - g))
    assert side == ("higher" if rank_mean > g else "lower")


def check_line_text(line: str) -> str:
    check_line(line)
    return line.rsplit(" = ", 1)[1]


@st.composite
def items_states(
    draw: st.DrawFn,
) -> tuple[list[list[float]], list[list[float]] | None, float, float]:
    ranks = draw(st.integers(1, 8))
    same = draw(st.booleans())
    first = draw(st.lists(st.integers(-20, 20).map(float), max_size=6))
    targets = [
        first if same else draw(st.lists(st.integers(-20, 20).map(float), max_size=6))
        for _ in range(ranks)
    ]
    if not any(targets):
        targets[0] = [3.0]
    weights = None
    if draw(st.booleans()):
        weights = [[draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for _ in rank] for rank in targets]
        if not any(x for rank in weights for x in rank):
            weights = None
    return (
        targets,
        weights,
        draw(ETA.filter(lambda eta: eta <= 10)),
        draw(st.integers(-30, 30).map(float)),
    )


@PROPERTY
@given(state=items_states(), steps=st.sampled_from([0, 1, 5, 30]))
def test_sgd_courses_say_heading_only_when_contracting(
    state: tuple[list[list[float]], list[list[float]] | None, float, float], steps: int
) -> None:
    targets, weights, eta, w = state
    STATES["items"] += 1
    result = from_items(targets, weights, eta=eta, w=w)
    path = trajectory(targets, weights, eta=eta, w=w, steps=steps)
    view = lab_charts(result, path)
    assert view.trajectory is not None
    words = view.trajectory
    rank_weights = weights or [[1.0] * len(rank) for rank in targets]
    counts = [sum(Fraction(x) for x in rank) for rank in rank_weights]
    occupied = sum(1 for n in counts if n)
    factors = {
        "global": 1 - Fraction(eta),
        "rank mean": 1 - Fraction(eta) * Fraction(occupied, len(targets)),
    }
    for scheme, verb, clause, label in (
        ("global", words.global_verb, words.global_clause, words.chart.guide_labels[0].label),
        (
            "rank mean",
            words.rank_mean_verb,
            words.rank_mean_clause,
            words.chart.guide_labels[1].label,
        ),
    ):
        factor = factors[scheme]
        expected = (
            "heads to"
            if abs(factor) < 1
            else "oscillates around"
            if abs(factor) == 1
            else "diverges from"
        )
        assert verb == expected, (scheme, float(factor), verb)
        STATES[f"items: {scheme} {verb}"] += 1
        assert ("→" in label) is (abs(factor) < 1), label
        shown = re.search(r"by (\S+?)(?:,|$)", clause)
        assert shown, clause
        check_rounded(shown[1], factor, ulps(factor))
        if abs(factor) >= 1:
            assert "heading" not in words.chart.description
    # Two schemes that are the same computation (equal exact fixed points, no empty rank) take
    # exactly the same path.
    sums = [
        sum((Fraction(x) * Fraction(y) for x, y in zip(ws, ys, strict=True)), Fraction(0))
        for ws, ys in zip(rank_weights, targets, strict=True)
    ]
    fixed_global = sum(sums, Fraction(0)) / sum(counts, Fraction(0))
    fixed_rank = sum((v / n for v, n in zip(sums, counts, strict=True) if n), Fraction(0))
    fixed_rank /= occupied
    if fixed_global == fixed_rank and occupied == len(targets):
        STATES["items: same path"] += 1
        assert path.fixed_point_global == path.fixed_point_rank_mean
        assert path.w_global == path.w_rank_mean


ring_values = st.sampled_from([0.0, 1e-3, 1.0, 5.0, 10.0, 1000.0, 1e6])


@PROPERTY
@given(
    payload=st.sampled_from([1e-6, 1e-3, 1.0, 100.0, 1e6]),
    ranks=st.integers(2, 64),
    alpha=ring_values,
    bandwidth=st.sampled_from([1e-3, 0.1, 1.0, 10.0, 400.0]),
)
def test_ring_lines_hold_and_the_note_names_the_dominant_term(
    payload: float, ranks: int, alpha: float, bandwidth: float
) -> None:
    STATES["ring"] += 1
    cost = ring_allreduce(payload * 1e6, ranks, alpha * 1e-6, bandwidth * 1e9)
    view = ring_view(cost, ring_state(payload, ranks, alpha, bandwidth))
    check_line(view.time_formula)
    check_line(view.count_formula)
    latency = Fraction(alpha) / 10**6
    transfer = Fraction(8) / (ranks * Fraction(bandwidth) * 10**9)
    share = latency / (latency + transfer)
    if share >= Fraction(9, 10):
        assert "almost all start-up latency" in view.note, view.note
    elif share <= Fraction(1, 10):
        assert "transfer time" in view.note
        assert "start-up latency (" not in view.note
        assert "almost all start-up latency" not in view.note
    else:
        assert "part start-up latency" in view.note, view.note
    if alpha == 0:
        assert "no start-up latency" in view.note


# ---- examples from the issue ---------------------------------------------------------------------


def test_unequal_counts_with_equal_means_name_the_means_not_the_counts() -> None:
    view = lab_view(from_means([2, 6], [3, 3], eta=0.1, w=10))
    assert "same mean gradient" in view.verdict
    assert "same count" not in view.verdict


def test_a_tiny_difference_prints_as_different_numbers() -> None:
    counts, means = [1.0, 3.0], [1.0, 1.00001 + 4e-11]
    result = from_means(counts, means, eta=0.1, w=9.9)
    state = means_state((1.0, 3.0), tuple(means), 0.1, 9.9)
    view = lab_view(result)
    plain, counted = re.findall(r"gives (\S+) instead of (\S+) ", view.verdict)[0]
    assert plain != counted
    check_line(lab_details(result, state).lines.difference)


def test_huge_w_lines_hold_as_printed() -> None:
    result = from_means([2, 6], [1, 3], eta=0.1, w=123456.7)
    state = means_state((2, 6), (1, 3), 0.1, 123456.7)
    view = lab_view(result)
    worked = lab_details(result, state).lines
    for line in (worked.w_new, worked.w_new_rank_mean, worked.difference):
        check_line(line)
    assert view.w_new != view.w_new_rank_mean


def test_one_rank_difference_is_exactly_zero_in_engine_api_and_page(client: TestClient) -> None:
    body = {"counts": [3], "means": [0.1 + 0.2], "eta": 0.3, "w": 0.7}
    assert compute(GradientRequest(**body)).w_new_difference == 0.0
    answer = client.post("/api/gradient", json=body).json()
    assert answer["w_new_difference"] == 0.0
    assert answer["global_gradient"] == answer["rank_mean_gradient"]
    page = BeautifulSoup(
        client.get("/?counts=3&means=0.30000000000000004&eta=0.3&w=0.7").text, "html.parser"
    )
    assert page.select_one('[data-value="difference"]').text == "0"
    assert "one rank" in page.select_one(".lab-verdict").text


def test_diverging_eta_in_the_items_form_never_heads_to_a_fixed_point() -> None:
    targets = [[9.0, 9.0], [7.0] * 6]
    path = trajectory(targets, eta=2.5, w=10, steps=30)
    view = lab_charts(from_items(targets, eta=2.5, w=10), path)
    assert view.trajectory is not None
    assert view.trajectory.global_verb == "diverges from"
    assert "−1.5" in view.trajectory.global_clause
    assert "heading" not in view.trajectory.chart.description
    assert all("→" not in tick.label for tick in view.trajectory.chart.guide_labels)


def test_one_rank_ring_note_says_nothing_is_communicated() -> None:
    state = RingRequest.model_construct(payload_mb=1.0, ranks=1, alpha_us=5.0, bandwidth_gbps=1.0)
    view = ring_view(ring_allreduce(1e6, 1, 5e-6, 1e9), state)
    assert "nothing is communicated" in view.note
    check_line(view.time_formula)


def test_zero_latency_ring_note_is_not_about_latency() -> None:
    view = ring_view(ring_allreduce(100e6, 4, 0.0, 10e9), ring_state(100.0, 4, 0.0, 10.0))
    assert "almost all start-up latency" not in view.note
    assert "no start-up latency" in view.note


# ---- 8. subnormal counts and weights -------------------------------------------------------------

SUBNORMAL = 5e-324


@pytest.mark.parametrize(
    "call",
    [
        lambda: from_means([SUBNORMAL, 1], [1, 3], eta=0.1, w=10),
        lambda: from_items([[1.0], [2.0]], [[SUBNORMAL], [1.0]], eta=0.1, w=10),
        lambda: trajectory([[1.0], [2.0]], [[SUBNORMAL], [1.0]], eta=0.1, w=10, steps=3),
        lambda: accumulate([[[1.0]], [[2.0]]], [[[SUBNORMAL]], [[1.0]]], eta=0.1, w=10),
    ],
)
def test_subnormal_counts_are_refused_by_every_engine_entry(call: object) -> None:
    with pytest.raises(EngineError) as caught:
        call()  # type: ignore[operator]
    assert "smallest normal float" in caught.value.reason


@pytest.mark.parametrize(
    "body",
    [
        {"counts": [SUBNORMAL] * 6, "means": [1] * 6, "eta": 0.1, "w": 10},
        {"targets": [[1], [2]], "weights": [[SUBNORMAL], [1]], "eta": 0.1, "w": 10},
        {"microbatches": [[[1]], [[2]]], "weights": [[[SUBNORMAL]], [[1]]], "eta": 0.1, "w": 10},
    ],
)
def test_subnormal_counts_are_a_422_naming_the_field(
    client: TestClient, body: dict[str, object]
) -> None:
    for path in ("/api/gradient", "/api/confirm"):
        response = client.post(path, json=body)
        assert response.status_code == 422, (path, response.text)
        detail = response.json()["detail"][0]
        assert "smallest normal float" in detail["msg"]
        assert detail["loc"][-1] in ("counts", "weights")


def test_subnormal_count_on_the_page_is_an_inline_message(client: TestClient) -> None:
    page = client.get("/?counts=5e-324,6&means=1,3&eta=0.1&w=10")
    assert page.status_code == 422  # the whole page, with the message at the lab
    assert (
        "smallest normal float"
        in BeautifulSoup(page.text, "html.parser").select_one("#lab-results").text
    )


def test_a_step_below_the_float_range_is_not_printed_as_zero() -> None:
    # w - η g = 2e-323 - 0.5 × 4.4e-323 is −2×10⁻³²⁴ exactly (as written): the float rounds it
    # to −0, below half the smallest subnormal (2.47×10⁻³²⁴).
    result = from_means([1.0], [4.4e-323], eta=0.5, w=2e-323)
    assert result.w_new == 0.0
    state = means_state([1.0], [4.4e-323], 0.5, 2e-323)
    view = lab_view(result)
    truth = as_written(2e-323) - Fraction(1, 2) * as_written(4.4e-323)
    assert truth == Fraction(-2, 10**324)
    check_rounded(view.w_new, truth)
    assert view.w_new != "0"
    check_line(lab_details(result, state).lines.w_new)
