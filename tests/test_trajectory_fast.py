"""The SGD path's quick arithmetic against plain references: the same floats, the same places.

The engine's trajectory and the chart's label placement and coordinates take shortcuts (exact
integer arithmetic, one BLAS call for all losses, only the curve segments near a label, a table
of hundredths); each is checked here against the straightforward computation it replaces.
"""

import math
import random
from collections.abc import Sequence
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pytest

from app.engine import EngineError, PathEnds, path_ends, trajectory
from app.lab.numbers import fmt_distinct
from app.lab.view import (
    BOTTOM,
    CHAR_WIDTH,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    Box,
    _n,
    _points,
    _probes,
    _step_axis,
    _x_step,
    curve_meets,
    place_label,
)
from app.lab.worked import _distinct_pair
from tests.lab_states import as_written

# ---- the engine ------------------------------------------------------------------------------


def _reference_numbers(
    targets: list[list[float]], weights: list[list[float]], eta: float
) -> tuple[float, float, float, float]:
    """Fixed points and contractions in Fractions, from the float per-rank sums (each rank's
    items added in order), as the engine defines them; where every rank is one item (the
    counts-and-means form), from each count times its target, both as written."""
    if all(len(ys) == 1 for ys in targets):
        counts = [as_written(vs[0]) for vs in weights]
        sums = [n * as_written(ys[0]) for n, ys in zip(counts, targets, strict=True)]
    else:
        counts = [Fraction(_in_order(rank)) for rank in weights]
        sums = [
            Fraction(_in_order([v * y for y, v in zip(ys, vs, strict=True)]))
            for ys, vs in zip(targets, weights, strict=True)
        ]
    means = [s / n for s, n in zip(sums, counts, strict=True) if n]
    return (
        float(sum(sums, Fraction(0)) / sum(counts, Fraction(0))),
        float(sum(means, Fraction(0)) / len(means)),
        float(1 - Fraction(eta)),
        float(1 - Fraction(eta) * Fraction(len(means), len(targets))),
    )


def _in_order(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


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
        # N as the engine adds it: each rank's weights in order, then NumPy's sum of the ranks.
        total = float(np.array([_in_order(rank) for rank in weights]).sum())
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
        total = float(weight.sum())
        for points, losses in (
            (path.w_global, path.loss_global),
            (path.w_rank_mean, path.loss_rank_mean),
        ):
            assert losses == tuple(
                float(np.dot(weight, 0.5 * (p - y) ** 2) / total) for p in points
            )


# ---- the chart -------------------------------------------------------------------------------


def _dense(track: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Every tested point of a curve, listed (the search the chart used to run)."""
    dense = list(track[:1])
    for (xa, ya), (xb, yb) in pairwise(track):
        parts = max(1, math.ceil((xb - xa) / 3.0))
        dense += [
            (xa + (xb - xa) * t / parts, ya + (yb - ya) * t / parts) for t in range(1, parts + 1)
        ]
    return dense


def _ends_and_full(
    targets: list[float], counts: list[float], eta: float, w: float, steps: int
) -> tuple[str, str]:
    """``path_ends`` and the full trajectory's ends (each an EngineError if it raises), as text:
    ``repr`` tells -0.0 from 0.0 and every float's last bit."""
    answers = []
    for run in (
        lambda: path_ends(targets, counts, eta=eta, w=w, steps=steps),
        lambda: PathEnds.of(
            trajectory([[y] for y in targets], [[n] for n in counts], eta=eta, w=w, steps=steps)
        ),
    ):
        try:
            answers.append(repr(run()))
        except EngineError as exc:
            answers.append(f"EngineError({exc.field!r}, {exc.message!r})")
    return answers[0], answers[1]


@pytest.mark.parametrize("seed", range(4))
def test_path_ends_are_the_trajectorys_ends(seed: int) -> None:
    # The pane's light path (only the final losses) against the whole computation: the same
    # iterates, fixed points, factors, final losses (the same float from a two-row vecdot as
    # from the whole block's rows) and warnings; many lab states, then odd and refused ones.
    rng = random.Random(300 + seed)
    for _ in range(400):
        if rng.random() < 0.5:  # as the lab sends them: 2-8 ranks, whole counts, means ±10
            ranks = rng.randint(2, 8)
            counts = [float(rng.randint(1 if r == 0 else 0, 64)) for r in range(ranks)]
            w = rng.randint(-40, 40) / 2
            targets = [w - rng.randint(-100, 100) / 10 for _ in range(ranks)]
            eta = rng.randint(1, 200) / 100
        else:
            nested_targets, nested_counts, eta, w = _means_run(rng)
            targets = [rank[0] for rank in nested_targets]
            counts = [rank[0] for rank in nested_counts]
            if rng.random() < 0.2:
                counts = [rng.choice([0.5, 1e-3, 3.25, n]) for n in counts]
        steps = rng.choice([0, 1, 30, 30, 30, 200])
        ends, full = _ends_and_full(targets, counts, eta, w, steps)
        assert ends == full
        assert not ends.startswith("EngineError")
    odd: list[tuple[list[float], list[float], float, float]] = [
        ([3, 5], [2, 6], 1, 10),  # ints
        ([9.0, 7.0], [0.0, 0.0], 0.1, 10.0),  # N = 0
        ([9.0, 7.0], [1.0, -2.0], 0.1, 10.0),  # a negative count
        ([9.0, 7.0], [1.0, 5e-324], 0.1, 10.0),  # a subnormal count
        ([9.0, math.nan], [1.0, 2.0], 0.1, 10.0),
        ([9.0, 7.0], [1.0, math.inf], 0.1, 10.0),
        ([1e200, -1e200], [1.0, 2.0], 0.1, 0.0),  # losses past the float range
        ([1e150, 2.0], [1e150, 1e150], 0.1, 0.0),  # sums past it
        ([1e99, 2.0], [3.0, 1e99], 1.5, 1e99),
        ([1.0, 2.0], [3.0, 4.0], 0.1, 1e300),  # a start far beyond 1e100
        ([1.0, 2.0], [3.0, 4.0], 1e6, 5.0),  # diverges
        ([1.0], [3.0], 0.5, -0.0),
        ([0.0, -0.0], [1.0, 0.0], 1.0, -0.0),
        ([], [], 0.1, 1.0),
        ([1.0, 2.0], [3.0], 0.1, 1.0),  # shapes differ
        ([True, 2.0], [3.0, 1.0], 0.1, 1.0),  # type: ignore[list-item]
    ]
    for targets, counts, eta, w in odd:
        for steps in (0, 3, 1000):
            ends, full = _ends_and_full(targets, counts, eta, w, steps)
            assert ends == full, (targets, counts, eta, w, steps)
    # Sequences other than lists, and refused rates, steps and starts, as the full run has them.
    for targets, counts, eta, w, steps in (
        ((9.0, 7.0), (2.0, 6.0), 0.1, 10.0, 5),
        ([9.0, 7.0], [2.0, 6.0], 0.0, 10.0, 5),
        ([9.0, 7.0], [2.0, 6.0], 0.1, math.inf, 5),
        ([9.0, 7.0], [2.0, 6.0], 0.1, 10.0, 1001),
        ([9.0, 7.0], [2.0, 6.0], 0.1, 10.0, -1),
    ):
        ends, full = _ends_and_full(targets, counts, eta, w, steps)  # type: ignore[arg-type]
        assert ends == full


def _reference_place(
    text: str,
    guide_y: float,
    start_y: float,
    curves: Sequence[Sequence[tuple[float, float]]],
    guide_ys: Sequence[float],
    placed: Sequence[Box],
) -> Box:
    width = len(text) * CHAR_WIDTH
    below, above = guide_y + 15, guide_y - 5
    sides = (below, above) if start_y <= guide_y else (above, below)
    points = [point for curve in curves for point in _dense(curve)]
    candidates = [
        Box(x0, x0 + width, min(max(baseline, TOP + 11), BOTTOM - 3))
        for baseline in sides
        for x0 in (LEFT + 6, LEFT + (RIGHT - LEFT - width) / 2, RIGHT - width - 2)
    ]
    candidates += [Box(x0, x0 + width, TOP - 8) for x0 in (LEFT, RIGHT - width)]
    for box in candidates:
        crossed = any(box.top - 1 <= y <= box.bottom + 1 for y in guide_ys)
        if crossed or any(box.meets(other) for other in placed):
            continue
        if not any(box.holds(x, y) for x, y in points):
            return box
    return candidates[0]


def _random_curve(rng: random.Random, steps: int) -> list[float]:
    kind = rng.choice(["walk", "zigzag", "decay", "flat"])
    y = rng.uniform(TOP, BOTTOM)
    target, factor = rng.uniform(TOP, BOTTOM), rng.choice([0.9, 0.5, -0.5, -0.95, -1.0])
    ys = [y]
    for _ in range(steps):
        if kind == "walk":
            y = min(BOTTOM, max(TOP, y + rng.uniform(-25, 25)))
        elif kind == "zigzag":
            y = TOP if y > (TOP + BOTTOM) / 2 else BOTTOM
        elif kind == "decay":
            y = target + factor * (y - target)
        ys.append(y)
    return ys


@pytest.mark.parametrize("seed", range(6))
def test_labels_go_where_testing_every_point_puts_them(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        steps = rng.choice([0, 1, 2, 5, 30, 30, 30, 100, 1000 if rng.random() < 0.1 else 40])
        xs = [_x_step(k, steps) for k in range(steps + 1)]
        curves = [_random_curve(rng, steps) for _ in range(2)]
        guide_ys = [rng.uniform(TOP, BOTTOM) for _ in range(2)]
        start_y = curves[0][0]
        tracks = [list(zip(xs, ys, strict=True)) for ys in curves]
        ys = curves[0] + curves[1] + guide_ys
        placed: list[Box] = []
        expected: list[Box] = []
        for guide_y in guide_ys:
            text = "x" * rng.randint(3, 34)
            placed.append(place_label(text, guide_y, start_y, ys, steps, guide_ys, placed))
            expected.append(_reference_place(text, guide_y, start_y, tracks, guide_ys, expected))
        assert placed == expected


def test_probes_are_the_tested_points() -> None:
    # The same floats as the scalar formulas, not merely close ones: a label's edge may fall
    # within a rounding of a point.
    rng = random.Random(5)
    for steps in (0, 1, 2, 5, 30, 31, 100, 1000):
        xs = [_x_step(k, steps) for k in range(steps + 1)]
        probes = _probes(steps)
        for _ in range(3):
            ys = _random_curve(rng, steps)
            tested = [(probes.x[0], ys[0])]
            for k, (first, parts) in enumerate(zip(probes.first, probes.parts, strict=True)):
                assert probes.segment[first : first + parts] == [k] * parts
                tested += [
                    (probes.x[first + t - 1], ys[k] + (ys[k + 1] - ys[k]) * t / parts)
                    for t in range(1, parts + 1)
                ]
            assert tested == _dense(list(zip(xs, ys, strict=True)))


def test_curves_meet_a_box_where_a_tested_point_lies_in_it() -> None:
    # Boxes whose edges fall on tested points, within a rounding of them, or just beside them.
    rng = random.Random(11)
    for _ in range(300):
        steps = rng.choice([0, 1, 2, 5, 30, 30, 100])
        xs = [_x_step(k, steps) for k in range(steps + 1)]
        curves = [_random_curve(rng, steps) for _ in range(2)]
        points = [p for ys in curves for p in _dense(list(zip(xs, ys, strict=True)))]
        for _ in range(20):
            px, py = rng.choice(points)
            qx = rng.choice(points)[0]
            nudge = rng.choice([0.0, 1e-12, -1e-12, 1e-9, 0.5])
            x_range = (min(px, qx) + nudge, max(px, qx) + rng.choice([0.0, -nudge, 3.0]))
            y_range = (py + nudge, py + rng.choice([0.0, 1e-13, 18.0, -1e-13]))
            assert curve_meets(curves[0] + curves[1], steps, x_range, y_range) == any(
                x_range[0] <= x <= x_range[1] and y_range[0] <= y <= y_range[1] for x, y in points
            )


def test_curve_points_print_each_y_as_two_decimals() -> None:
    rng = random.Random(3)
    values = [rng.uniform(0, HEIGHT) for _ in range(20000)]
    values += [k / 200 for k in range(0, 44001, 7)]  # exactly halfway between hundredths
    values += [k / 100 for k in range(0, 22001, 3)] + [0.0, HEIGHT, 1e-300, 0.004999999999]
    values += [-0.001, -3.25, HEIGHT + 1, 1e6, -1e-300, 0.1, 10.0, 100.0, 0.05, 1.5]
    rng.shuffle(values)
    for steps in (1, 7, 30):
        xs = _step_axis(steps)[1]
        for start in range(0, len(values), 2 * steps + 2):
            ys = values[start : start + 2 * steps + 2]
            if len(ys) < 2 * steps + 2:
                break
            assert _points(_step_axis(steps)[2], ys) == [
                " ".join(f"{x},{_n(y)}" for x, y in zip(xs, curve, strict=True))
                for curve in (ys[: steps + 1], ys[steps + 1 :])
            ]


# ---- the words -------------------------------------------------------------------------------


def test_distinct_pairs_print_as_fmt_distinct_prints_them() -> None:
    rng = random.Random(11)
    values = [0.0, -0.0, 1.0, 7.5, 8.0, 1e-7, -3.25, 123456.789, 2.0**-1074, 1e300]
    pairs = [(a, b) for a in values for b in values]
    for _ in range(3000):
        a = rng.choice([rng.uniform(-1e3, 1e3), rng.uniform(-1, 1) * 10 ** rng.randint(-9, 9)])
        # Neighbours and near neighbours need more than six digits to be told apart.
        b = rng.choice([a, math.nextafter(a, math.inf), a * (1 + 1e-7), a + 1e-5, -a, a * 3])
        pairs += [(a, b), (b, a)]
    for a, b in pairs:
        assert _distinct_pair(a, b) == fmt_distinct((a, b))
