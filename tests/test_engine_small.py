"""from_means on Python floats (small P) against its NumPy path and exact Fractions."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import EngineError, GradientResult, from_means, gradient
from tests.test_engine import exact_reference

counts_st = st.one_of(
    st.integers(min_value=0, max_value=64).map(float),
    st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False),
)
means_st = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@st.composite
def states(draw: st.DrawFn) -> tuple[list[float], list[float], float, float]:
    ranks = draw(st.integers(min_value=1, max_value=gradient.PYTHON_RANKS))
    counts = draw(st.lists(counts_st, min_size=ranks, max_size=ranks))
    if not any(counts):
        counts[0] = 1.0
    means = draw(st.lists(means_st, min_size=ranks, max_size=ranks))
    eta = draw(st.floats(min_value=1e-6, max_value=2.0))
    w = draw(st.floats(min_value=-20, max_value=20))
    return counts, means, eta, w


def on_numpy(counts: list[float], means: list[float], *, eta: float, w: float) -> GradientResult:
    saved = gradient.PYTHON_RANKS
    gradient.PYTHON_RANKS = 0
    try:
        return from_means(counts, means, eta=eta, w=w)
    finally:
        gradient.PYTHON_RANKS = saved


def near(a: float, b: float, scale: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12 * scale)


@settings(max_examples=300, deadline=None)
@given(states())
def test_python_path_agrees_with_numpy_and_with_fractions(
    state: tuple[list[float], list[float], float, float],
) -> None:
    counts, means, eta, w = state
    outcomes = []
    for run in (from_means, on_numpy):
        try:
            outcomes.append(run(counts, means, eta=eta, w=w))
        except EngineError as error:  # e.g. a tiny count whose 1/(P·nᵣ) overflows
            outcomes.append((error.field, error.message))
    small, big = outcomes
    if not isinstance(small, GradientResult):
        assert small == big
        return
    assert isinstance(big, GradientResult)
    # Cancellation can leave g near 0 while its terms are large: compare on their scale.
    scale = max(1.0, *(abs(m) for m in means))
    for name in GradientResult.__dataclass_fields__:
        a, b = getattr(small, name), getattr(big, name)
        if isinstance(a, tuple) and a and isinstance(a[0], float):
            assert all(near(x, y, scale) for x, y in zip(a, b, strict=True)), name
        elif isinstance(a, float):
            assert near(a, b, scale), name
        else:
            assert a == b, name
    exact = exact_reference(counts, means, eta, w)
    assert near(small.N, float(exact["N"]), small.N)
    assert near(small.global_gradient, float(exact["g"]), scale)
    assert near(small.rank_mean_gradient, float(exact["rank_mean"]), scale)
    assert near(small.w_new, float(exact["w_new"]), scale)


def test_lesson_example_on_both_paths() -> None:
    """g 2.5 against the rank mean 2.0; w_new 9.75 against 9.8; scales 0.5 and 1.5."""
    for result in (
        from_means([2, 6], [1, 3], eta=0.1, w=10),
        on_numpy([2, 6], [1, 3], eta=0.1, w=10),
    ):
        assert Fraction(result.global_gradient) == Fraction(5, 2)
        assert Fraction(result.rank_mean_gradient) == 2
        assert result.scale_factors == (0.5, 1.5)
        assert math.isclose(result.w_new, 9.75)
        assert math.isclose(result.w_new_rank_mean, 9.8)


@pytest.mark.parametrize(
    ("counts", "means", "field"),
    [
        ([0, 0], [1, 3], "counts"),
        ([2, -1], [1, 3], "counts"),
        ([2, 6], [1], "means"),
        ([], [], "counts"),
        ([1e308, 1e308], [1, 1], "means"),
        ([5e-324, 1], [1e308, 1], "counts"),
    ],
)
def test_both_paths_refuse_alike(counts: list[float], means: list[float], field: str) -> None:
    errors = []
    for run in (from_means, on_numpy):
        with pytest.raises(EngineError) as caught:
            run(counts, means, eta=0.1, w=10)
        errors.append((caught.value.field, caught.value.message))
    assert errors[0] == errors[1]
    assert errors[0][0] == field
