"""Gradient accumulation: naive microbatch averaging against one count per update window."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import EngineError, accumulate

LESSON_WINDOW = [[[9, 9], [7, 7, 7, 7, 7, 7]], [[9, 9], [7, 7, 7, 7, 7, 7]]]


def test_accumulate_lesson_example() -> None:
    window = accumulate(LESSON_WINDOW, eta=0.1, w=10)
    assert window.P == 2
    assert window.N == 16
    assert window.microbatch_counts == (2, 2)
    assert window.counts == ((2, 6), (2, 6))
    assert window.means == ((1, 3), (1, 3))
    assert window.rank_naive_means == (2, 2)
    assert window.rank_window_means == pytest.approx((2.5, 2.5))
    assert window.naive_gradient == pytest.approx(2.0)
    assert window.window_gradient == pytest.approx(2.5)
    assert window.w_new_naive == pytest.approx(9.8)
    assert window.w_new_window == pytest.approx(9.75)
    assert window.w_new_difference == pytest.approx(0.05)
    assert window.scale_factors == ((0.5, 1.5), (0.5, 1.5))
    assert window.across_ranks.global_gradient == pytest.approx(2.5)
    assert window.across_ranks.rank_mean_gradient == pytest.approx(2.5)
    assert window.warnings == ()


def test_accumulate_empty_microbatch_warns() -> None:
    window = accumulate([[[9, 9], []], [[7, 7, 7]]], eta=0.1, w=10)
    assert window.counts == ((2, 0), (3,))
    assert window.means == ((1, 0), (3,))
    assert window.rank_naive_means == (0.5, 3.0)
    assert window.window_gradient == pytest.approx((2 * 1 + 3 * 3) / 5)
    assert len(window.warnings) == 1
    assert "microbatch 1 of rank 0" in window.warnings[0]
    assert "max(n, 1)" in window.warnings[0]


def test_accumulate_weights_mask_items() -> None:
    window = accumulate([[[9, 9, 100], [7, 7]]], [[[1, 1, 0], [1, 1]]], eta=0.1, w=10)
    assert window.counts == ((2, 2),)
    assert window.window_gradient == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("microbatches", "weights", "field"),
    [
        ([], None, "microbatches"),
        ([[]], None, "microbatches"),
        ([[[], []]], None, "microbatches"),
        ([[[1, 2]]], [[[0, 0]]], "weights"),
        ([[[1, 2]]], [[[1]]], "weights"),
        ([[[1, 2]]], [[[1, 1]], [[1]]], "weights"),
        ([[[1, 2]]], [[[1, 1], [1]]], "weights"),
        ([[[1, float("nan")]]], None, "microbatches"),
    ],
)
def test_accumulate_bad_input_names_field(
    microbatches: list[list[list[float]]], weights: list[list[list[float]]] | None, field: str
) -> None:
    with pytest.raises(EngineError) as caught:
        accumulate(microbatches, weights, eta=0.1, w=10)
    assert caught.value.field == field


batch_st = st.lists(st.integers(-100, 100), max_size=5)
window_st = st.lists(st.lists(batch_st, min_size=1, max_size=4), min_size=1, max_size=6)


@given(window=window_st)
def test_accumulate_matches_exact_reference(window: list[list[list[int]]]) -> None:
    if not any(batch for rank in window for batch in rank):
        window = [*window, [[4]]]
    w = Fraction(10)
    result = accumulate(window, eta=0.1, w=10)
    batch_means = [
        [sum(w - y for y in batch) / len(batch) if batch else Fraction(0) for batch in rank]
        for rank in window
    ]
    naive = sum(sum(rank) / len(rank) for rank in batch_means) / len(window)
    total = sum(len(batch) for rank in window for batch in rank)
    g = sum(w - y for rank in window for batch in rank for y in batch) / Fraction(total)
    assert total == result.N
    assert result.naive_gradient == pytest.approx(float(naive), rel=1e-9, abs=1e-9)
    assert result.window_gradient == pytest.approx(float(g), rel=1e-9, abs=1e-9)
    # The naive two-level average of the scaled microbatch means is the window gradient.
    scaled = [
        sum(s * m for s, m in zip(factors, means, strict=True)) / len(means)
        for factors, means in zip(result.scale_factors, result.means, strict=True)
    ]
    assert sum(scaled) / result.P == pytest.approx(float(g), rel=1e-9, abs=1e-9)
    empty = sum(1 for rank in window for batch in rank if not batch)
    assert sum("has no valid items" in text for text in result.warnings) >= empty


@given(window=window_st)
def test_one_microbatch_per_rank_is_the_plain_rank_mean(window: list[list[list[int]]]) -> None:
    ranks = [[[y for batch in rank for y in batch]] for rank in window]
    if not any(batch for rank in ranks for batch in rank):
        ranks = [*ranks, [[4]]]
    result = accumulate(ranks, eta=0.1, w=10)
    assert result.naive_gradient == pytest.approx(
        result.across_ranks.rank_mean_gradient, rel=1e-12, abs=1e-12
    )


def test_decimal_counts_in_proportion_are_proportional() -> None:
    # Rank 0 has two microbatches of weight 0.1 (a decimal no float holds exactly), rank 1 one of
    # 0.2: each count is its plain weight 1/(P·M_r) times N = 0.4 as typed, so the two gradients
    # agree because the counts are in proportion, not by coincidence.
    window = accumulate([[[9], [7]], [[5]]], [[[0.1], [0.1]], [[0.2]]], eta=0.1, w=10)
    assert window.counts == ((0.1, 0.1), (0.2,))
    assert window.agreement.reason == "proportional counts"
    assert window.agreement.agree


def test_equal_decimal_counts_beside_an_empty_microbatch_differ_only_by_it() -> None:
    # Without the empty microbatch the counts (0.1 each, as typed) are equal, so the gradients
    # would agree: the empty one alone, counted as a mean of 0, makes them differ.
    window = accumulate([[[]], [[9]], [[7]]], [[[]], [[0.1]], [[0.1]]], eta=0.1, w=10)
    assert window.counts == ((0,), (0.1,), (0.1,))
    assert window.agreement.reason == "empty entries"
    assert not window.agreement.agree
