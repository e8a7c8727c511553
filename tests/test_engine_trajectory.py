"""SGD trajectories under both reductions: lesson fixed points, exact iterates, divergence."""

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import MAX_STEPS, EngineError, trajectory
from tests.lab_states import as_written

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


# ---- exact SGD where every iterate is a float ---------------------------------------------------


def _dyadic_run(draw: st.DrawFn) -> tuple[list[list[int]], list[list[float]], float, int]:
    """Integer targets, 1, 2 or 4 ranks each of 0, 1, 2, 4 or 8 items of weight 1 (plus masked
    items of weight 0), 1, 2 or 4 of them occupied, and a rate of a few binary digits: every
    rank mean, both fixed points and both contractions are short binary fractions, so every
    exact SGD iterate of 8 steps needs fewer than 53 bits: it is itself a float."""
    ranks = draw(st.sampled_from([1, 2, 4]))
    sizes = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=ranks, max_size=ranks))
    occupied = sum(1 for size in sizes if size)
    if occupied not in (1, 2, 4):
        sizes = [size or 1 for size in sizes] if ranks != 1 else [1]
    targets = [draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n)) for n in sizes]
    masked = [draw(st.lists(st.integers(-20, 20), max_size=2)) for _ in sizes]
    # The global fixed point Σy / N is a short binary fraction when the odd part of N divides Σy.
    total = sum(sizes)
    odd = total >> ((total & -total).bit_length() - 1)
    first = next(r for r, size in enumerate(sizes) if size)
    targets[first][0] -= sum(map(sum, targets)) % odd
    weights = [
        [1.0] * len(rank) + [0.0] * len(extra) for rank, extra in zip(targets, masked, strict=True)
    ]
    targets = [rank + extra for rank, extra in zip(targets, masked, strict=True)]
    eta = draw(st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0]))
    return targets, weights, eta, draw(st.integers(-50, 50))


@given(run=st.composite(_dyadic_run)())
def test_trajectory_is_exact_sgd_where_the_iterates_are_floats(
    run: tuple[list[list[int]], list[list[float]], float, int],
) -> None:
    # Every iterate is compared for equality with the exact per-item SGD step (Fractions): one
    # unit in the last place anywhere in the path (the step, the fixed point, the contraction)
    # is a failure here.
    targets, weights, eta, w = run
    steps = 8
    exact_global, exact_rank = exact_path(targets, weights, eta, w, steps)
    assert all(Fraction(float(v)) == v for v in (*exact_global, *exact_rank))  # the premise
    path = trajectory(targets, weights, eta=eta, w=w, steps=steps)
    assert path.w_global == tuple(map(float, exact_global))
    assert path.w_rank_mean == tuple(map(float, exact_rank))
    total = sum(Fraction(x) for rank in weights for x in rank)
    items = [
        (Fraction(y), Fraction(x))
        for rank_y, rank_x in zip(targets, weights, strict=True)
        for y, x in zip(rank_y, rank_x, strict=True)
    ]
    for ws, losses in ((exact_global, path.loss_global), (exact_rank, path.loss_rank_mean)):
        exact = [sum(x * (at - y) ** 2 for y, x in items) / (2 * total) for at in ws]
        assert losses == pytest.approx([float(v) for v in exact], rel=1e-13, abs=1e-300)


def test_trajectory_lesson_example_is_exact_at_eta_one_half() -> None:
    # The lesson's numbers: 7.5 + 2.5·2⁻ᵏ and 8 + 2·2⁻ᵏ, to the last bit, for 40 steps.
    path = trajectory(LESSON_TARGETS, eta=0.5, w=10, steps=40)
    assert path.w_global == tuple(7.5 + 2.5 * 2.0**-k for k in range(41))
    assert path.w_rank_mean == tuple(8 + 2 * 2.0**-k for k in range(41))
    assert (path.fixed_point_global, path.fixed_point_rank_mean) == (7.5, 8.0)
    assert (path.loss_minimum, path.loss_at_rank_mean_fixed_point) == (0.375, 0.5)


# ---- odd and refused input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("targets", "weights", "eta", "w", "field"),
    [
        ([[9.0], [7.0]], [[0.0], [0.0]], 0.1, 10.0, "weights"),  # N = 0
        ([[9.0], [7.0]], [[1.0], [-2.0]], 0.1, 10.0, "weights"),
        ([[9.0], [7.0]], [[1.0], [5e-324]], 0.1, 10.0, "weights"),  # subnormal: 1/N overflows
        ([[9.0], [math.nan]], [[1.0], [2.0]], 0.1, 10.0, "targets"),
        ([[9.0], [7.0]], [[1.0], [math.inf]], 0.1, 10.0, "weights"),
        ([[1e200], [-1e200]], [[1.0], [2.0]], 0.1, 0.0, "targets"),  # losses past the range
        ([[1e150], [2.0]], [[1e160], [1e160]], 0.1, 0.0, "targets"),  # sums past it
        ([[1e200, -1e200]], [[1e200, 1e200]], 0.1, 0.0, "targets"),  # inf and -inf products
        ([[0.0], [-2.0]], [[64.0], [1e308]], 0.1, 0.0, "targets"),  # one product past it
        ([], None, 0.1, 1.0, "targets"),
        ([[1.0], [2.0]], [[3.0]], 0.1, 1.0, "weights"),  # shapes differ
        ([[1.0, 2.0]], [[3.0]], 0.1, 1.0, "weights"),
        ([[True], [2.0]], [[3.0], [1.0]], 0.1, 1.0, "targets"),  # JSON true is not a number
        ("97", None, 0.1, 1.0, "targets"),
        ([[9.0], [7.0]], [[2.0], [6.0]], 0.1, math.inf, "w"),
        ([[1.0], [2.0]], [[3.0], [4.0]], 0.1, 1e300, "targets"),  # its loss is past the range
    ],
)
def test_trajectory_refuses_naming_the_field(
    targets: list[list[float]],
    weights: list[list[float]] | None,
    eta: float,
    w: float,
    field: str,
) -> None:
    for steps in (0, 3, MAX_STEPS):
        with pytest.raises(EngineError) as caught:
            trajectory(targets, weights, eta=eta, w=w, steps=steps)
        assert caught.value.field == field


@pytest.mark.parametrize(
    ("targets", "weights", "eta", "w"),
    [
        ([[3, 5]], [[2, 6]], 1, 10),  # ints
        (((9.0,), (7.0,)), ((2.0,), (6.0,)), 0.1, 10.0),  # tuples
        ([[1e99], [2.0]], [[3.0], [1e99]], 1.5, 1e99),
        ([[1.0], [2.0]], [[3.0], [4.0]], 0.1, 1e120),  # a start beyond 1e100
        ([[1.0], [2.0]], [[3.0], [4.0]], 1e6, 5.0),  # diverges
        ([[1.0]], [[3.0]], 0.5, -0.0),
        ([[0.0], [-0.0]], [[1.0], [0.0]], 1.0, -0.0),
    ],
)
def test_trajectory_odd_input_stays_finite(
    targets: list[list[float]], weights: list[list[float]], eta: float, w: float
) -> None:
    for steps in (0, 3, MAX_STEPS):
        path = trajectory(targets, weights, eta=eta, w=w, steps=steps)
        values = [
            *path.w_global,
            *path.w_rank_mean,
            *path.loss_global,
            *path.loss_rank_mean,
            path.loss_minimum,
            path.loss_at_rank_mean_fixed_point,
        ]
        assert all(map(math.isfinite, values))
        assert len(path.w_global) == len(path.loss_rank_mean) == path.steps + 1 <= steps + 1
        assert path.w_global[0] == w
        assert path.diverged == (path.steps < steps)


# ---- every float against a plain reference ----------------------------------------------------


def _reference_numbers(
    targets: list[list[float]], weights: list[list[float]], eta: float
) -> tuple[float, float, float, float]:
    """Fixed points and contractions in Fractions, from the per-rank sums of the weights and
    of the products weight·y (each a float), each sum rounded once to a float, as the engine
    defines them; where every rank is one item (the counts-and-means form), from each count
    times its target, both as written."""
    if all(len(ys) == 1 for ys in targets):
        counts = [as_written(vs[0]) for vs in weights]
        sums = [n * as_written(ys[0]) for n, ys in zip(counts, targets, strict=True)]
    else:
        counts = [Fraction(_rounded_sum(rank)) for rank in weights]
        sums = [
            Fraction(_rounded_sum([v * y for y, v in zip(ys, vs, strict=True)]))
            for ys, vs in zip(targets, weights, strict=True)
        ]
    means = [s / n for s, n in zip(sums, counts, strict=True) if n]
    return (
        float(sum(sums, Fraction(0)) / sum(counts, Fraction(0))),
        float(sum(means, Fraction(0)) / len(means)),
        float(1 - Fraction(eta)),
        float(1 - Fraction(eta) * Fraction(len(means), len(targets))),
    )


def _rounded_sum(values: list[float]) -> float:
    """The exact sum of ``values``, rounded once."""
    return float(sum(map(Fraction, values), Fraction(0)))


def _random_run(rng: random.Random) -> tuple[list[list[float]], list[list[float]], float]:
    ranks = rng.randint(1, 8)
    targets = [[rng.uniform(-50, 50) for _ in range(rng.randint(0, 4))] for _ in range(ranks)]
    targets[0].append(rng.uniform(-50, 50))
    weights = [[rng.choice([0.0, 1.0, 3.0, 0.3, rng.uniform(0, 9)]) for _ in t] for t in targets]
    weights[0][-1] = 1.0
    return targets, weights, rng.choice([0.1, 0.5, 1.0, 1.5, rng.uniform(0.01, 2.5)])


@pytest.mark.parametrize("seed", range(4))
def test_trajectory_numbers_are_the_reference_floats(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        targets, weights, eta = _random_run(rng)
        path = trajectory(targets, weights, eta=eta, w=rng.uniform(-20, 20), steps=12)
        fixed_global, fixed_rank_mean, factor_global, factor_rank_mean = _reference_numbers(
            targets, weights, eta
        )
        assert path.fixed_point_global == fixed_global
        assert path.fixed_point_rank_mean == fixed_rank_mean
        assert path.contraction_global == factor_global
        assert path.contraction_rank_mean == factor_rank_mean
        y = np.array([v for rank in targets for v in rank])
        weight = np.array([v for rank in weights for v in rank])
        # N: each rank's count rounded once, and their sum rounded once.
        total = _rounded_sum([_rounded_sum(rank) for rank in weights])
        for ws, losses in (
            (path.w_global, path.loss_global),
            (path.w_rank_mean, path.loss_rank_mean),
        ):
            # Each loss is the float one np.dot per point gives (not merely a close one).
            assert losses == tuple(float(np.dot(weight, 0.5 * (w - y) ** 2) / total) for w in ws)


def test_trajectory_losses_of_many_items_are_the_reference_floats() -> None:
    # More items than the plain-Python sums take, and more points than one loss block holds.
    rng = random.Random(7)
    targets = [[rng.uniform(-9, 9) for _ in range(3000)], [rng.uniform(-9, 9) for _ in range(40)]]
    path = trajectory(targets, eta=0.05, w=4.0, steps=60)
    y = np.array([v for rank in targets for v in rank])
    assert path.loss_rank_mean == tuple(
        float(np.dot(np.ones_like(y), 0.5 * (w - y) ** 2) / y.size) for w in path.w_rank_mean
    )
    assert (
        path.fixed_point_rank_mean
        == _reference_numbers(targets, [[1.0] * len(t) for t in targets], 0.05)[1]
    )


def _reference_path(w: float, fixed: float, factor: float, steps: int) -> list[float]:
    """One scheme's iterates, each ``f + c·(w - f)``, up to the first whose ``|w|`` passes
    1e100 (that one left out)."""
    path = [w]
    for _ in range(steps):
        w = fixed + factor * (w - fixed)
        if not abs(w) <= 1e100:
            break
        path.append(w)
    return path


def _means_run(rng: random.Random) -> tuple[list[list[float]], list[list[float]], float, float]:
    """A counts-and-means state as the lab's implied path sees it: one target per rank,
    weighted by a whole count (0 for an empty rank); now and then a rate that diverges."""
    ranks = rng.randint(1, 8)
    w = rng.choice([rng.randint(-40, 40) / 2, 0.0, 1e6, -7.25, rng.uniform(-1e90, 1e90)])
    targets = [[w - rng.randint(-100, 100) / 10] for _ in range(ranks)]
    counts = [[float(rng.choice([0, 1, rng.randint(0, 64), 10**6]))] for _ in range(ranks)]
    counts[0] = [float(rng.randint(1, 64))]
    eta = rng.choice([rng.randint(1, 200) / 100, 2.0, 3.5, 0.001, 1e6, rng.uniform(2, 50)])
    return targets, counts, eta, w


@pytest.mark.parametrize("seed", range(4))
def test_means_form_runs_are_the_reference_runs(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(150):
        targets, counts, eta, w = _means_run(rng)
        steps = rng.choice([0, 1, 30, 30, 200])
        path = trajectory(targets, counts, eta=eta, w=w, steps=steps)
        fixed_global, fixed_rank_mean, factor_global, factor_rank_mean = _reference_numbers(
            targets, counts, eta
        )
        assert (path.fixed_point_global, path.fixed_point_rank_mean) == (
            fixed_global,
            fixed_rank_mean,
        )
        assert (path.contraction_global, path.contraction_rank_mean) == (
            factor_global,
            factor_rank_mean,
        )
        ws = _reference_path(w, fixed_global, factor_global, steps)
        ws_rank_mean = _reference_path(w, fixed_rank_mean, factor_rank_mean, steps)
        taken = min(len(ws), len(ws_rank_mean))
        assert path.w_global == tuple(ws[:taken])
        assert path.w_rank_mean == tuple(ws_rank_mean[:taken])
        assert path.steps == taken - 1
        assert path.diverged == (taken <= steps)
        escaped = [
            name for name, run in (("global", ws), ("rank-mean", ws_rank_mean)) if len(run) == taken
        ]
        stop = [text for text in path.warnings if text.startswith("|w| under the")]
        if path.diverged:
            assert stop == [
                f"|w| under the {' and '.join(escaped)} scheme{'s' if len(escaped) > 1 else ''}"
                f" would pass 1e+100 at step {taken} of {steps}; both trajectories stop after"
                f" step {taken - 1} so every number stays finite."
            ]
        else:
            assert stop == []
        y = np.array([rank[0] for rank in targets])
        weight = np.array([rank[0] for rank in counts])
        total = _rounded_sum(weight.tolist())
        for points, losses in (
            (path.w_global, path.loss_global),
            (path.w_rank_mean, path.loss_rank_mean),
        ):
            assert losses == tuple(
                float(np.dot(weight, 0.5 * (p - y) ** 2) / total) for p in points
            )
