"""SGD trajectories under both reductions: lesson fixed points, exact iterates, divergence."""

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import MAX_STEPS, EngineError, trajectory

LESSON_TARGETS = [[9, 9], [7, 7, 7, 7, 7, 7]]


def exact_path(
    targets: list[list[int]], weights: list[list[float]], eta: float, w: float, steps: int
) -> tuple[list[Fraction], list[Fraction]]:
    """Both schemes iterated in exact arithmetic, every local mean recomputed per item."""
    items = [
        (Fraction(y), Fraction(x))
        for rank_y, rank_x in zip(targets, weights, strict=True)
        for y, x in zip(rank_y, rank_x, strict=True)
    ]
    total = sum(x for _, x in items)
    step = Fraction(eta)
    path_global, path_rank = [Fraction(w)], [Fraction(w)]
    for _ in range(steps):
        at = path_global[-1]
        path_global.append(at - step * sum(x * (at - y) for y, x in items) / total)
        at = path_rank[-1]
        local = []
        for rank_y, rank_x in zip(targets, weights, strict=True):
            n = sum(Fraction(x) for x in rank_x)
            grad_sum = sum(
                Fraction(x) * (at - Fraction(y)) for y, x in zip(rank_y, rank_x, strict=True)
            )
            local.append(grad_sum / n if n else Fraction(0))
        path_rank.append(at - step * sum(local) / len(targets))
    return path_global, path_rank


def test_trajectory_lesson_example() -> None:
    path = trajectory(LESSON_TARGETS, eta=0.1, w=10, steps=200)
    assert path.steps == path.requested_steps == 200
    assert len(path.w_global) == len(path.w_rank_mean) == 201
    assert len(path.loss_global) == len(path.loss_rank_mean) == 201
    assert path.fixed_point_global == pytest.approx(7.5)
    assert path.fixed_point_rank_mean == pytest.approx(8.0)
    for k in (0, 1, 2, 10, 200):
        assert path.w_global[k] == pytest.approx(7.5 + 2.5 * 0.9**k)
        assert path.w_rank_mean[k] == pytest.approx(8.0 + 2.0 * 0.9**k)
    # The unpartitioned loss: (2·½·1² + 6·½·3²)/8 = 3.5 at w = 10; minimum 0.375 at 7.5.
    assert path.loss_global[0] == path.loss_rank_mean[0] == pytest.approx(3.5)
    assert path.loss_minimum == pytest.approx(0.375)
    assert path.loss_at_rank_mean_fixed_point == pytest.approx(0.5)
    assert path.loss_global[-1] == pytest.approx(0.375)
    assert path.loss_rank_mean[-1] == pytest.approx(0.5)
    assert path.contraction_global == pytest.approx(0.9)
    assert path.contraction_rank_mean == pytest.approx(0.9)
    assert not path.diverged
    assert path.warnings == ()


def test_trajectory_zero_steps_is_the_start() -> None:
    path = trajectory(LESSON_TARGETS, eta=0.1, w=10, steps=0)
    assert path.w_global == path.w_rank_mean == (10.0,)
    assert path.loss_global == pytest.approx((3.5,))


def test_trajectory_large_eta_stops_finite_with_warning() -> None:
    path = trajectory(LESSON_TARGETS, eta=1e6, w=10, steps=MAX_STEPS)
    assert path.diverged
    assert path.steps < MAX_STEPS
    assert path.requested_steps == MAX_STEPS
    assert len(path.w_global) == path.steps + 1
    values = [*path.w_global, *path.w_rank_mean, *path.loss_global, *path.loss_rank_mean]
    assert all(math.isfinite(value) for value in values)
    assert any("diverges" in text for text in path.warnings)
    assert any(f"stop after step {path.steps}" in text for text in path.warnings)


def test_trajectory_eta_two_oscillates() -> None:
    path = trajectory(LESSON_TARGETS, eta=2.0, w=10, steps=4)
    assert path.w_global == pytest.approx((10, 5, 10, 5, 10))
    assert not path.diverged
    assert any("oscillates" in text for text in path.warnings)


def test_trajectory_empty_rank_slows_rank_mean_but_keeps_fixed_point() -> None:
    path = trajectory([[9, 9], [], [7, 7, 7, 7, 7, 7]], eta=0.3, w=10, steps=100)
    assert path.fixed_point_global == pytest.approx(7.5)
    assert path.fixed_point_rank_mean == pytest.approx(8.0)
    assert path.contraction_rank_mean == pytest.approx(1 - 0.3 * 2 / 3)
    assert path.w_rank_mean[1] == pytest.approx(10 - 0.3 * (1 + 0 + 3) / 3)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"steps": -1}, "steps"),
        ({"steps": MAX_STEPS + 1}, "steps"),
        ({"steps": 2.0}, "steps"),
        ({"steps": True}, "steps"),
        ({"eta": 0.0}, "eta"),
        ({"targets": [[], []]}, "targets"),
        ({"weights": [[0, 0], [0] * 6]}, "weights"),
        ({"weights": [[1, 1], [1]]}, "weights"),
    ],
)
def test_trajectory_bad_input_names_field(kwargs: dict[str, object], field: str) -> None:
    arguments: dict[str, object] = {"targets": LESSON_TARGETS, "eta": 0.1, "w": 10, "steps": 3}
    with pytest.raises(EngineError) as caught:
        trajectory(**{**arguments, **kwargs})  # type: ignore[arg-type]
    assert caught.value.field == field


rank_st = st.lists(
    st.tuples(st.integers(-50, 50), st.sampled_from([0.0, 0.5, 1.0, 2.0])), max_size=6
)


@given(
    ranks=st.lists(rank_st, min_size=1, max_size=5),
    eta=st.sampled_from([0.05, 0.25, 0.5, 1.0, 1.5]),
    w=st.integers(-50, 50),
)
def test_trajectory_matches_exact_iterates(
    ranks: list[list[tuple[int, float]]], eta: float, w: int
) -> None:
    if not any(x for rank in ranks for _, x in rank):
        ranks = [*ranks, [(3, 1.0)]]
    targets = [[y for y, _ in rank] for rank in ranks]
    weights = [[x for _, x in rank] for rank in ranks]
    path = trajectory(targets, weights, eta=eta, w=w, steps=6)
    exact_global, exact_rank = exact_path(targets, weights, eta, w, 6)
    assert path.w_global == pytest.approx([float(v) for v in exact_global], rel=1e-9, abs=1e-9)
    assert path.w_rank_mean == pytest.approx([float(v) for v in exact_rank], rel=1e-9, abs=1e-9)
    total = sum(Fraction(x) for rank in ranks for _, x in rank)
    fixed = sum(Fraction(x) * y for rank in ranks for y, x in rank) / total
    assert path.fixed_point_global == pytest.approx(float(fixed), abs=1e-9)
