"""The engine's plain-float paths against references from the definitions, bit for bit.

``from_means`` works on Python floats and decides its verdict in integers
(``verdicts.weighted_means``); the references below compute every result in ``Fraction`` of the
numbers as written, from the formulas' and the verdict's conditions' definitions, rounded once.
"""

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.engine import EngineError, from_means
from app.engine.checks import SMALLEST_COUNT, finite_floats, finite_scalar
from app.engine.decimals import as_decimal, decimal_ratio
from app.engine.verdicts import AGREEING, Agreement, weighted_means
from tests.lab_states import as_written


def plain_weights(ranks: int) -> tuple[Fraction, ...]:
    """The plain rank mean's weights: ``1/P`` each."""
    return (Fraction(1, ranks),) * ranks


def rounded(value: Fraction) -> float:
    """The nearest float, ±inf beyond the range."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def exactly(
    counts: Sequence[float], means: Sequence[float], weights: Sequence[Fraction]
) -> tuple[Fraction, Fraction, Fraction]:
    """``N``, the count-weighted mean and the plain (``weights``) mean of the numbers as written;
    an empty entry's mean is 0."""
    n = [as_written(x) for x in counts]
    m = [as_written(y) if x else Fraction(0) for x, y in zip(counts, means, strict=True)]
    total = sum(n, Fraction(0))
    counted = sum((a * b for a, b in zip(n, m, strict=True)), Fraction(0)) / total
    plain = sum((c * b for c, b in zip(weights, m, strict=True)), Fraction(0))
    return total, counted, plain


def reference_agreement(
    counts: Sequence[float], means: Sequence[float], weights: Sequence[Fraction]
) -> Agreement:
    """The verdict from the definitions of its conditions (``verdicts.Reason``), in Fractions:
    the first that holds names why the two means agree, else why they differ."""
    total, counted, plain = exactly(counts, means, weights)
    n = [as_written(x) for x in counts]
    m = [as_written(y) for y in means]
    empty = tuple(i for i, x in enumerate(n) if x == 0)
    kept = [i for i, x in enumerate(n) if x != 0]

    def proportional(entries: Sequence[int]) -> bool:  # nᵢ/N = cᵢ/Σc over these entries
        share = sum((weights[i] for i in entries), Fraction(0))
        return all(n[i] / total == weights[i] / share for i in entries)

    if len(n) == 1:
        reason = "one entry"
    elif proportional(range(len(n))):
        reason = "proportional counts"
    elif not empty and len(set(m)) == 1:
        reason = "equal means"
    elif empty and all(m[i] == 0 for i in kept):
        reason = "zero means"
    elif plain == counted:
        reason = "coincidence"
    elif empty and (proportional(kept) or len({m[i] for i in kept}) == 1):
        reason = "empty entries"
    else:
        reason = "unequal counts"
    return Agreement(
        agree=reason in AGREEING,
        reason=reason,  # type: ignore[arg-type]
        difference=rounded(plain - counted),
        empty=empty,
        plain=plain,
        counted=counted,
    )


COUNTS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 4.0, 64.0, 0.1, 1e12, 1e308, SMALLEST_COUNT]),
    st.integers(0, 64).map(float),
    st.floats(min_value=0, max_value=1e308, allow_subnormal=False),
)
MEANS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 3.0, 1e-7, 5e-324, 1e308, -1e308]),
    st.integers(-100, 100).map(lambda k: k / 10),
    st.floats(allow_nan=False, allow_infinity=False),
)
ETAS = st.one_of(st.sampled_from([0.1, 1.0, 2.0, 1e-300, 1e300]), st.floats(1e-9, 1e6))
WS = st.one_of(st.sampled_from([10.0, 0.0, -7.25, 1e308]), st.floats(-1e12, 1e12))


@st.composite
def ranks(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    """Per-rank counts and means; often repeated values, so every verdict comes up."""
    size = draw(st.integers(1, 64))
    if draw(st.booleans()):
        counts = draw(
            st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.0, 4.0]), min_size=size, max_size=size)
        )
        means = draw(
            st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.0, -1.0]), min_size=size, max_size=size)
        )
    else:
        counts = draw(st.lists(COUNTS, min_size=size, max_size=size))
        means = draw(st.lists(MEANS, min_size=size, max_size=size))
    return counts, means


def reference_from_means(
    counts: Sequence[float], means: Sequence[float], eta: float, w: float
) -> dict[str, Any]:
    """What ``from_means`` answers, from the definitions in exact fractions of the numbers as
    written, each result rounded once: ``N = Σ nᵣ``, ``g = Σ nᵣ ḡᵣ / N``, the rank mean
    ``Σ ḡᵣ / P`` over the ranks with items (an empty rank's mean counts as 0), the factors
    ``P·nᵣ/N`` and ``P·nᵣ ḡᵣ/N``, the steps ``w - η·mean`` and their difference
    ``η·(g - rank mean)``; influences ``1/N`` and ``1/(P·nᵣ)`` (0 for an empty rank).
    Raises ZeroDivisionError when N = 0."""
    ranks = len(counts)
    n = [as_written(x) for x in counts]
    m = [as_written(y) if x else Fraction(0) for x, y in zip(n, means, strict=True)]
    total = sum(n, Fraction(0))
    g = sum((a * b for a, b in zip(n, m, strict=True)), Fraction(0)) / total
    rank_mean = sum(m, Fraction(0)) / ranks
    step, start = as_written(eta), as_written(w)
    return {
        "P": ranks,
        "N": rounded(total),
        "counts": tuple(float(x) for x in counts),
        "means": tuple(0.0 if x == 0 else float(y) for x, y in zip(counts, means, strict=True)),
        "global_gradient": rounded(g),
        "rank_mean_gradient": rounded(rank_mean),
        "scale_factors": tuple(rounded(ranks * a / total) for a in n),
        "compensated_means": tuple(
            rounded(ranks * a * b / total) for a, b in zip(n, m, strict=True)
        ),
        "w_new": rounded(start - step * g),
        "w_new_rank_mean": rounded(start - step * rank_mean),
        "w_new_difference": rounded(step * (g - rank_mean)),
        "influence_global": tuple(rounded(1 / total) if a else 0.0 for a in n),
        "influence_rank_mean": tuple(rounded(1 / (ranks * a)) if a else 0.0 for a in n),
        "agreement": reference_agreement(counts, means, plain_weights(ranks)),
    }


# The results each input field is blamed for when one leaves the float range, checked in this
# order (``means`` first).
BLAMED = {
    "means": (
        "global_gradient",
        "compensated_means",
        "w_new",
        "w_new_rank_mean",
        "w_new_difference",
    ),
    "counts": ("N", "scale_factors", "influence_global", "influence_rank_mean"),
}


def blamed_field(expected: dict[str, Any]) -> str | None:
    """The field the first non-finite result of the reference blames (None: all finite)."""
    for field, keys in BLAMED.items():
        for key in keys:
            value = expected[key]
            if not all(map(math.isfinite, value if isinstance(value, tuple) else (value,))):
                return field
    return None


def same(a: object, b: object) -> bool:
    """Equal, with floats compared bit for bit (the sign of 0 and NaN included)."""
    if isinstance(a, float) and isinstance(b, float):
        return a.hex() == b.hex() if not math.isnan(a) else math.isnan(b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@st.composite
def windows(draw: st.DrawFn) -> tuple[list[float], list[float], list[Fraction]]:
    """Microbatch counts and means with the naive average's weights ``1/(P·M_r)``."""
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=6))
    weights = [Fraction(1, len(lengths) * size) for size in lengths for _ in range(size)]
    size = len(weights)
    pool = st.sampled_from([0.0, 0.1, 0.2, 0.3, 1.0, 2.0, 4.0])
    counts = draw(
        st.one_of(
            st.lists(pool, min_size=size, max_size=size),
            st.lists(COUNTS, min_size=size, max_size=size),
        )
    )
    means = draw(
        st.one_of(
            st.lists(st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.1]), min_size=size, max_size=size),
            st.lists(MEANS, min_size=size, max_size=size),
        )
    )
    return counts, means, weights


@settings(max_examples=400, deadline=None)
@given(windows())
@example(([0.1, 0.1, 0.2], [1.0, 3.0, 5.0], [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]))
@example(([0.0, 0.1, 0.1], [0.0, 1.0, 3.0], [Fraction(1, 3)] * 3))
@example(
    ([0.0, 6.261910320248051e-161, 6.261910320248051e-161], [0.0, 0.0, 1.0], [Fraction(1, 3)] * 3)
)
def test_weighted_means_and_their_verdict_for_any_plain_weights(
    data: tuple[list[float], list[float], list[Fraction]],
) -> None:
    counts, given_means, weights = data
    if not any(counts):
        counts = [1.0, *counts[1:]]
    means = [0.0 if n == 0 else m for n, m in zip(counts, given_means, strict=True)]
    result = weighted_means(counts, means, weights)
    total, counted, plain = exactly(counts, means, weights)
    assert Fraction(*result.total) == total
    assert Fraction(*result.counted) == counted
    assert Fraction(*result.plain) == plain
    assert Fraction(*result.difference) == plain - counted
    reference = reference_agreement(counts, means, weights)
    assert result.agreement.reason == reference.reason
    assert result.agreement == reference


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
@example(3.7)
@example(-2.3)
@example(1e16)  # repr "1e+16"
@example(9007199254740993.0)  # past 2**53: "9007199254740992.0"
@example(1.5e-7)
@example(5e-324)
@example(1.7976931348623157e308)
@example(0.123456)  # six places: the quick search's last
@example(0.1234567)  # seven: repr's
@example(999999999.5)
@example(-0.30000000000000004)
@example(1e-4)
def test_a_float_reads_as_its_repr(value: float) -> None:
    top, bottom = decimal_ratio(value)
    assert Fraction(top, bottom) == as_written(value) == as_decimal(value)
    assert bottom == 10 ** (len(str(bottom)) - 1)  # a power of ten: sums stay plain integers


@settings(max_examples=400, deadline=None)
@given(ranks())
@example(([39.0, 5.0, 29.0, 24.0, 43.0, 3.0, 37.0], [3.7, -2.3, 8.8, -2.7, -6.6, -3.9, 3.0]))
def test_exact_means_are_of_the_inputs_as_written(
    data: tuple[list[float], list[float]],
) -> None:
    counts, means = data
    if not any(counts):
        counts = [1.0, *counts[1:]]
    means = [0.0 if n == 0 else m for n, m in zip(counts, means, strict=True)]
    n = [as_written(x) for x in counts]
    m = [as_written(y) for y in means]
    total = sum(n, Fraction(0))
    exact = weighted_means(counts, means)
    assert Fraction(*exact.total) == total
    assert (
        Fraction(*exact.counted)
        == sum((a * b for a, b in zip(n, m, strict=True)), Fraction(0)) / total
    )
    assert Fraction(*exact.plain) == sum(m, Fraction(0)) / len(m)


def test_means_that_sum_to_zero_as_written_have_a_plain_mean_of_zero() -> None:
    """3.7 - 2.3 + 8.8 - 2.7 - 6.6 - 3.9 + 3 is 0; the floats' binary values sum to 1.3e-15,
    which the lab showed as the plain rank mean 1.90324e-16 beside those very means."""
    result = from_means(
        [39, 5, 29, 24, 43, 3, 37], [3.7, -2.3, 8.8, -2.7, -6.6, -3.9, 3], eta=0.09, w=18
    )
    assert result.rank_mean_gradient == 0.0
    assert result.agreement.plain == 0
    assert result.w_new_rank_mean == 18.0
    assert result.agreement.counted == Fraction(13870, 18000)  # 138.7 / 180, as written
    # N, both steps and their difference exactly, from the same numbers as written.
    g, eta = Fraction(1387, 1800), Fraction(9, 100)
    assert [Fraction(*ratio) for ratio in result.exact] == [180, 18 - eta * g, 18, eta * g]


def test_compensated_means_equal_as_written_are_equal_floats() -> None:
    """40 x -6.3 and 45 x -5.6 are both -252: the two ranks' compensated means P·nᵣ ḡᵣ/N are one
    number, and the details' line lists them as one (scaled in floats first, they differed in
    the 16th digit, and the line printed 17-digit operands to tell them apart)."""
    result = from_means([40, 45, 62], [-6.3, -5.6, -4.1], eta=1.89, w=-10)
    assert result.compensated_means[0] == result.compensated_means[1]
    assert result.compensated_means[0] == float(Fraction(3 * -252, 147))
    assert result.scale_factors == tuple(float(Fraction(3 * n, 147)) for n in (40, 45, 62))


@settings(max_examples=400, deadline=None)
@given(ranks(), ETAS, WS)
@example(([2.0, 6.0], [1.0, 3.0]), 0.1, 10.0)
@example(([1e308, 1e308], [1.0, 1.0]), 0.1, 10.0)  # N leaves the float range
@example(([1.0, 1e-300], [1e308, 1e308]), 1.0, 0.0)  # a scaled mean leaves it
@example(([3.0, 1.0], [1e308, -1e308]), 1e300, 1e308)  # so do the steps
@example(([1.0, 1e-300, 1e-300], [0.55e308, -0.9e308, -0.9e308]), 2.0, 0.0)  # the difference alone
def test_from_means_answers_the_definitions_exactly(
    data: tuple[list[float], list[float]], eta: float, w: float
) -> None:
    counts, means = data
    try:
        expected = reference_from_means(counts, means, eta, w)
        finite = all(
            math.isfinite(x)
            for key, value in expected.items()
            if key not in ("P", "warnings", "agreement")
            for x in (value if isinstance(value, tuple) else (value,))
        )
    except ZeroDivisionError:  # N = 0
        expected, finite = {}, False
    if not finite:
        with pytest.raises(EngineError) as caught:
            from_means(counts, means, eta=eta, w=w)
        if expected:  # a result left the float range: the field to blame, in the checks' order
            assert caught.value.field == blamed_field(expected), (caught.value, expected)
        return
    result = from_means(counts, means, eta=eta, w=w)
    for key, value in expected.items():
        actual = getattr(result, key)
        if key == "agreement":
            assert actual == value
        elif key.startswith("influence_"):
            # 1.0/N and 1.0/(P·nᵣ) are float divisions of rounded operands: within a few ulps,
            # or of the smallest normal float where the exact value is below it (P·nᵣ past
            # the float range gives 0); exactly 0 for an empty rank.
            assert all(
                b == a == 0.0
                if x == 0
                else math.isclose(a, b, rel_tol=1e-15, abs_tol=SMALLEST_COUNT)
                for a, b, x in zip(actual, value, counts, strict=True)
            ), (key, actual, value)
        else:
            assert same(actual, value), (key, actual, value)
    # One warning per empty rank, in rank order, naming it, P, and a given mean it ignores.
    empty = [r for r, x in enumerate(counts) if x == 0]
    assert len(result.warnings) == len(empty)
    for r, text in zip(empty, result.warnings, strict=True):
        assert text.startswith(f"rank {r} has no valid items (count 0)")
        assert f"divides by P = {len(counts)}" in text
        assert ("is ignored" in text) == (means[r] != 0)


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0],
        (1.0, 2.0),
        [1, 2.5],
        [True],
        ["1"],
        "12",
        [math.inf],
        [1.0, math.nan],
        [1e308, 1e308],
        [-1.0, 2.0],
        [-0.0, 2.0],
        [0.0, 5e-324],
        [0.0, SMALLEST_COUNT],
        [],
    ],
)
@pytest.mark.parametrize("non_negative", [False, True])
def test_finite_floats_fast_path_answers_as_the_general_one(
    values: Any, non_negative: bool
) -> None:
    """A list of plain floats takes a shortcut; a tuple of the same values takes the general
    path (and ints, bools and text do): both give the same floats or the same error."""

    def run(given: Any) -> object:
        try:
            out = finite_floats("counts", given, non_negative=non_negative)
        except EngineError as error:
            return ("error", error.message)
        assert type(out) is list
        assert all(type(x) is float for x in out)
        return [x.hex() for x in out]

    reference = tuple(values) if isinstance(values, list) else values
    assert run(values) == run(reference)
    if isinstance(values, list) and all(type(v) is float for v in values):
        answer = run(values)
        finite = all(map(math.isfinite, values))
        refused = isinstance(answer, tuple)
        assert refused == (
            not finite or (non_negative and any(v < 0 or 0 < v < SMALLEST_COUNT for v in values))
        )


class Float(float):
    """A float subclass: ``finite_scalar`` takes its general path for it."""


@pytest.mark.parametrize(
    "value", [1.0, -1.0, 0.0, -0.0, 5e-324, 1e308, math.inf, -math.inf, math.nan, 0.1]
)
@pytest.mark.parametrize("positive", [False, True])
def test_finite_scalar_fast_path_answers_as_the_general_one(value: float, positive: bool) -> None:
    """A plain float takes a shortcut; a float subclass of the same value the general path."""

    def run(given: float) -> object:
        try:
            out = finite_scalar("eta", given, positive=positive)
        except EngineError as error:
            return ("error", error.message)
        assert type(out) is float
        return out.hex()

    assert run(value) == run(Float(value))


@pytest.mark.parametrize("count", [0.1, 6.261910320248051e-161, 3.0])
def test_equal_counts_beside_an_empty_rank_differ_only_by_the_empty_rank(count: float) -> None:
    # Without the empty rank the counts are equal, so the two means would agree: the empty rank
    # alone (counted as a mean of 0 and still in P) makes them differ, whatever the counts' digits.
    result = from_means([0.0, count, count], [0.0, 0.0, 1.0], eta=0.1, w=10.0)
    assert result.agreement.plain == Fraction(1, 3)
    assert result.agreement.counted == Fraction(1, 2)
    assert result.agreement.reason == "empty entries"
