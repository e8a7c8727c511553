"""The gradient engine against the lesson's worked numbers and an exact Fraction reference."""

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import EngineError, from_items, from_means

LESSON_TARGETS = [[9, 9], [7, 7, 7, 7, 7, 7]]
ROOT = Path(__file__).resolve().parent.parent


def exact_reference(
    counts: list[float], means: list[float], eta: float, w: float
) -> dict[str, Fraction]:
    """The lesson's formulas in exact rational arithmetic, written apart from the engine."""
    n = [Fraction(c) for c in counts]
    g_bar = [Fraction(m) if c else Fraction(0) for c, m in zip(n, means, strict=True)]
    total = sum(n, Fraction(0))
    ranks = len(n)
    g = sum((c * m for c, m in zip(n, g_bar, strict=True)), Fraction(0)) / total
    rank_mean = sum(g_bar, Fraction(0)) / ranks
    return {
        "N": total,
        "g": g,
        "rank_mean": rank_mean,
        "w_new": Fraction(w) - Fraction(eta) * g,
        "w_new_rank_mean": Fraction(w) - Fraction(eta) * rank_mean,
    }


def close(actual: float, expected: Fraction | float, scale: float = 1.0) -> bool:
    return math.isclose(actual, float(expected), rel_tol=1e-9, abs_tol=1e-9 * scale)


def test_from_items_lesson_example() -> None:
    result = from_items(LESSON_TARGETS, eta=0.1, w=10)
    assert result.P == 2
    assert result.N == 8
    assert result.counts == (2, 6)
    assert result.means == (1, 3)
    assert result.global_gradient == pytest.approx(2.5)
    assert result.rank_mean_gradient == pytest.approx(2.0)
    assert result.w_new == pytest.approx(9.75)
    assert result.w_new_rank_mean == pytest.approx(9.8)
    assert result.w_new_difference == pytest.approx(0.05)
    assert result.scale_factors == pytest.approx((0.5, 1.5))
    assert result.compensated_means == pytest.approx((0.5, 4.5))
    assert result.influence_global == pytest.approx((1 / 8, 1 / 8))
    assert result.influence_rank_mean == pytest.approx((1 / 4, 1 / 12))
    assert result.warnings == ()


def test_from_means_lesson_example_matches_items() -> None:
    items = from_items(LESSON_TARGETS, eta=0.1, w=10)
    assert items.form == "items"
    assert from_means([2, 6], [1, 3], eta=0.1, w=10) == items.model_copy(update={"form": "means"})


def test_from_means_equal_counts_agree() -> None:
    result = from_means([4, 4], [1, 3], eta=0.1, w=10)
    assert result.global_gradient == result.rank_mean_gradient == 2.0
    assert result.scale_factors == (1.0, 1.0)


def test_from_means_empty_rank_warns_and_counts_zero() -> None:
    result = from_means([2, 0, 6], [1, 5, 3], eta=0.1, w=10)
    assert result.global_gradient == pytest.approx(2.5)
    assert result.means == (1.0, 0.0, 3.0)
    assert result.rank_mean_gradient == pytest.approx(4 / 3)
    assert result.scale_factors[1] == 0.0
    assert result.influence_global[1] == result.influence_rank_mean[1] == 0.0
    assert len(result.warnings) == 1
    assert "rank 1" in result.warnings[0]
    assert "max(n, 1)" in result.warnings[0]
    assert "given mean 5 is ignored" in result.warnings[0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"counts": [0, 0], "means": [1, 3]}, "counts"),
        ({"counts": [], "means": []}, "counts"),
        ({"counts": [2, 6], "means": [1]}, "means"),
        ({"counts": [2, -1], "means": [1, 3]}, "counts"),
        ({"counts": [2, math.nan], "means": [1, 3]}, "counts"),
        ({"counts": [2, 6], "means": [1, math.inf]}, "means"),
        ({"counts": [True, 6], "means": [1, 3]}, "counts"),
        ({"counts": [2, 6], "means": [1, 3], "eta": 0}, "eta"),
        ({"counts": [2, 6], "means": [1, 3], "eta": -0.1}, "eta"),
        ({"counts": [2, 6], "means": [1, 3], "w": math.nan}, "w"),
        ({"counts": [1e300, 1e300], "means": [1.7e308, 1.7e308], "eta": 10.0}, "means"),
        ({"counts": [5e-324, 1], "means": [1, 3]}, "counts"),
    ],
)
def test_from_means_bad_input_names_field(kwargs: dict[str, object], field: str) -> None:
    arguments = {"eta": 0.1, "w": 10.0, **kwargs}
    with pytest.raises(EngineError) as caught:
        from_means(**arguments)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert field in str(caught.value)


def test_no_valid_items_message() -> None:
    with pytest.raises(EngineError, match="no valid items in this update"):
        from_means([0, 0], [0, 0], eta=0.1, w=1)


def test_from_items_weights_mask_items() -> None:
    padded = from_items([[9, 9, 0, 0], [7, 7, 7, 7, 7, 7]], [[1, 1, 0, 0], [1] * 6], eta=0.1, w=10)
    plain = from_items(LESSON_TARGETS, eta=0.1, w=10)
    assert padded.global_gradient == plain.global_gradient
    assert padded.counts == plain.counts


def test_from_items_all_masked_rank_warns() -> None:
    result = from_items([[9, 9], [7, 7]], [[1, 1], [0, 0]], eta=0.1, w=10)
    assert result.counts == (2.0, 0.0)
    assert any("every one has weight 0" in text for text in result.warnings)


@pytest.mark.parametrize(
    ("targets", "weights", "field"),
    [
        ([[], []], None, "targets"),
        ([[1, 2]], [[0, 0]], "weights"),
        ([[1, 2]], [[1]], "weights"),
        ([[1, 2]], [[1, -1]], "weights"),
        ([[1, 2]], [[1], [1]], "weights"),
        ([], None, "targets"),
        ([[1, "2"]], None, "targets"),
    ],
)
def test_from_items_bad_input_names_field(
    targets: list[list[float]], weights: list[list[float]] | None, field: str
) -> None:
    with pytest.raises(EngineError) as caught:
        from_items(targets, weights, eta=0.1, w=10)
    assert caught.value.field == field


counts_st = st.one_of(
    st.integers(min_value=0, max_value=10_000).map(float),
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False),
)
means_st = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def ranks_st(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    size = draw(st.integers(min_value=1, max_value=64))
    counts = draw(st.lists(counts_st, min_size=size, max_size=size))
    if not any(counts):
        counts[0] = 1.0
    means = draw(st.lists(means_st, min_size=size, max_size=size))
    return counts, means


@given(ranks=ranks_st(), eta=st.floats(min_value=1e-6, max_value=10), w=means_st)
def test_from_means_matches_exact_reference(
    ranks: tuple[list[float], list[float]], eta: float, w: float
) -> None:
    counts, means = ranks
    result = from_means(counts, means, eta=eta, w=w)
    exact = exact_reference(counts, means, eta, w)
    scale = max(1.0, *(abs(m) for m in means))
    assert close(result.N, exact["N"], float(exact["N"]))
    assert close(result.global_gradient, exact["g"], scale)
    assert close(result.rank_mean_gradient, exact["rank_mean"], scale)
    assert close(result.w_new, exact["w_new"], scale * (1 + eta) + abs(w))
    assert close(result.w_new_rank_mean, exact["w_new_rank_mean"], scale * (1 + eta) + abs(w))
    compensated_mean = sum(result.compensated_means) / result.P
    assert close(compensated_mean, exact["g"], scale)
    assert close(sum(result.scale_factors), result.P, result.P)


@given(ranks=ranks_st())
def test_equal_counts_make_both_schemes_agree(ranks: tuple[list[float], list[float]]) -> None:
    _, means = ranks
    result = from_means([3.0] * len(means), means, eta=0.1, w=0)
    scale = max(1.0, *(abs(m) for m in means))
    assert close(result.global_gradient, result.rank_mean_gradient, scale)


items_st = st.lists(
    st.tuples(
        st.integers(min_value=-1000, max_value=1000),
        st.sampled_from([0.0, 0.5, 1.0, 1.0, 1.0, 2.0, 3.25]),
    ),
    min_size=1,
    max_size=200,
)


@given(items=items_st, ranks=st.integers(min_value=1, max_value=64), data=st.data())
def test_any_partition_gives_the_unpartitioned_mean(
    items: list[tuple[int, float]], ranks: int, data: st.DataObject
) -> None:
    if not any(weight for _, weight in items):
        items = [*items, (5, 1.0)]
    owner = data.draw(
        st.lists(
            st.integers(min_value=0, max_value=ranks - 1), min_size=len(items), max_size=len(items)
        )
    )
    targets: list[list[float]] = [[] for _ in range(ranks)]
    weights: list[list[float]] = [[] for _ in range(ranks)]
    for (target, weight), rank in zip(items, owner, strict=True):
        targets[rank].append(target)
        weights[rank].append(weight)
    w = 10.0
    result = from_items(targets, weights, eta=0.1, w=w)
    whole = from_items([[t for t, _ in items]], [[x for _, x in items]], eta=0.1, w=w)
    total = sum(Fraction(x) for _, x in items)
    exact_g = sum(Fraction(x) * (Fraction(w) - t) for t, x in items) / total
    assert close(result.N, total, float(total))
    assert close(result.global_gradient, exact_g, 1000)
    assert close(whole.global_gradient, exact_g, 1000)
    assert close(sum(result.compensated_means) / ranks, exact_g, 1000)


def test_engine_imports_no_web_and_no_torch() -> None:
    """pydantic is allowed: the engine's results are its models, serialised by the API."""
    probe = (
        "import sys, app.engine; "
        "print(sorted(m for m in ('fastapi', 'starlette', 'jinja2', 'torch')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "[]"


def test_from_items_subnormal_weight_is_refused_naming_weights() -> None:
    with pytest.raises(EngineError) as caught:
        from_items([[1.0], [2.0]], [[5e-324], [1.0]], eta=0.1, w=0)
    assert caught.value.field == "weights"
    assert "smallest normal float" in str(caught.value)
