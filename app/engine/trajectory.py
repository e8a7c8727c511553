"""K steps of scalar SGD under each reduction, scored by the unpartitioned objective."""

import math
import operator
from collections.abc import Iterable, Sequence
from itertools import repeat

import numpy as np

from app.engine.checks import (
    finite_results,
    finite_scalar,
    quiet_overflow,
    ranked_lists,
    require_items,
)
from app.engine.decimals import decimal_ratio, ratio_sum
from app.engine.errors import EngineError
from app.engine.results import Trajectory
from app.engine.verdicts import ratio_float

MAX_STEPS = 1000
# Beyond this |w| a diverging run is stopped: the loss ½(w - y)² stays far inside the float range.
W_LIMIT = 1e100
SCHEMES = ("global", "rank-mean")


def _steps(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EngineError("steps", f"steps must be a whole number, got {value!r}")
    if not 0 <= value <= MAX_STEPS:
        raise EngineError("steps", f"steps must be between 0 and {MAX_STEPS}, got {value}")
    return value


def _rate_warning(scheme: str, eta: float, factor: float, fixed_point: float) -> str | None:
    """Explain a step size that cannot converge: |1 - η·curvature| >= 1 on this quadratic."""
    if abs(factor) < 1:
        return None
    verdict = "diverges" if abs(factor) > 1 else "oscillates and never converges"
    return (
        f"With η = {eta:g} each {scheme} step multiplies the distance to its fixed point"
        f" {fixed_point:g} by {factor:g}, so SGD {verdict}."
    )


def _stop_warning(escaped: tuple[bool, bool], taken: int, requested: int) -> str:
    """Both paths stop after the last step where neither |w| passed the limit: say so."""
    names = [name for name, out in zip(SCHEMES, escaped, strict=True) if out]
    schemes = " and ".join(names) + (" schemes" if len(names) > 1 else " scheme")
    return (
        f"|w| under the {schemes} would pass {W_LIMIT:g} at step"
        f" {taken} of {requested}; both trajectories stop after step {taken - 1}"
        " so every number stays finite."
    )


# Losses are scored in blocks of about this many entries (points by items), so 1001 points of
# 10,000 items never build one 80 MB matrix.
LOSS_BLOCK = 1 << 16
RankLists = list[tuple[list[float], list[float]]]


def _sum(values: Iterable[float]) -> float:
    """The float nearest to the exact sum of ``values``; inf when the sum or a value (a product
    that overflowed) is past the float range, so the caller refuses it."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):  # ValueError: inf and -inf among the values
        return math.inf


def _fixed_points(
    counts: list[float], sums: list[float], single: list[float] | None = None
) -> tuple[float, float, int]:
    """The schemes' fixed points from the exact per-rank sums, each the float nearest to its
    exact value: the weighted item mean ``Σ sums / Σ counts``, and the plain mean of the
    occupied ranks' means ``sumᵣ / countᵣ``; and how many ranks are occupied.

    ``single``: each rank's one target, where every rank has one item (the counts-and-means
    form). Then a rank's sum is its count times its target exactly, both as written (3.7 is
    37/10: ``decimals``), as the engine's means are; the sums of many items are the floats
    their additions gave."""
    if single is None:
        exact_sums = list(map(float.as_integer_ratio, sums))
        exact_counts = list(map(float.as_integer_ratio, counts))
    else:
        exact_counts = list(map(decimal_ratio, counts))
        exact_sums = [
            (a * b, d * e)
            for (a, d), (b, e) in zip(exact_counts, map(decimal_ratio, single), strict=True)
        ]
    count_top, count_bottom = ratio_sum(exact_counts)
    sum_top, sum_bottom = ratio_sum(exact_sums)
    fixed_global = ratio_float((sum_top * count_bottom, sum_bottom * count_top))
    rank_means = [
        (p * n_bottom, q * n_top)
        for (p, q), (n_top, n_bottom) in zip(exact_sums, exact_counts, strict=True)
        if n_top
    ]
    mean_top, mean_bottom = ratio_sum(rank_means)
    fixed_rank_mean = ratio_float((mean_top, mean_bottom * len(rank_means)))
    return fixed_global, fixed_rank_mean, len(rank_means)


def _paths(
    w: float, fixed: tuple[float, float], factor: tuple[float, float], steps: int
) -> tuple[list[float], list[float], tuple[bool, bool]]:
    """Both schemes' ``w`` and up to ``steps`` iterates of ``w ← f + c·(w - f)``, cut before
    the first step where either iterate's ``|w|`` passes ``W_LIMIT``; and which of them passed
    it there (neither when all ``steps`` were taken)."""
    paths = []
    for fixed_point, contraction in zip(fixed, factor, strict=True):
        at, path = w, [w]
        append = path.append
        for _ in repeat(None, steps):
            at = fixed_point + contraction * (at - fixed_point)
            append(at)
        paths.append(path)
    # The first step past the limit, if any: a path overflows to inf (and only then to NaN)
    # after it passes the limit, so the largest |w| tells whether one did.
    if max(map(abs, paths[0][1:] + paths[1][1:]), default=0.0) <= W_LIMIT:
        return paths[0], paths[1], (False, False)
    outside = [[not abs(at) <= W_LIMIT for at in path] for path in paths]
    stop = next(k for k in range(1, steps + 1) if outside[0][k] or outside[1][k])
    return paths[0][:stop], paths[1][:stop], (outside[0][stop], outside[1][stop])


def _losses(pairs: RankLists, total: float, points: list[float]) -> list[float]:
    """``L(w) = Σ weight·½(w - y)² / N`` at each point; each row's weighted sum is
    ``np.vecdot``, per row the dot product (BLAS ``ddot``) that ``np.dot`` takes."""
    y = np.array([x for rank_y, _ in pairs for x in rank_y], dtype=np.float64)
    weight = np.array([x for _, rank_weight in pairs for x in rank_weight], dtype=np.float64)
    at = np.array(points, dtype=np.float64)
    rows = max(1, LOSS_BLOCK // max(y.size, 1))
    losses: list[float] = []
    for first in range(0, at.size, rows):
        block = 0.5 * (at[first : first + rows, None] - y) ** 2
        losses += (np.vecdot(block, weight) / total).tolist()
    return losses


@quiet_overflow
def trajectory(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None = None,
    *,
    eta: float,
    w: float,
    steps: int,
) -> Trajectory:
    """Run ``steps`` (0 … 1000) SGD steps from ``w`` under both reductions, per-item arithmetic.

    Data as in ``from_items``: ``targets[r]`` per rank, optional same-shaped ``weights[r] >= 0``,
    per-item loss ``l(w; y) = ½(w - y)²`` and gradient ``w - y``. At every iterate:
      global:    ``w ← w - η · Σ weight·(w - y) / N``
      rank mean: ``w ← w - η · (1/P) Σ_r ḡᵣ(w)``, each rank's local mean ``ḡᵣ(w)`` recomputed
                 from its items (an empty rank counts 0, the sum / max(n, 1) guard).
    The score is the unpartitioned objective ``L(w) = Σ weight·½(w - y)² / N`` (loss units).
    Fixed points: the weighted item mean of all targets (global) against the plain mean of the
    occupied ranks' target means (rank mean) — 7.5 against 8 in the lesson's example.
    Each step scales the distance to the fixed point by ``1 - η`` (global) or ``1 - η·P'/P``
    (rank mean, P' occupied ranks); when that factor reaches magnitude 1 a warning says so, and
    a run whose ``|w|`` passes 1e100 stops there (``diverged``) so every number stays finite.

    Raises EngineError for bad input, ``steps`` outside 0 … 1000, or ``N = 0``.
    """
    eta = finite_scalar("eta", eta, positive=True)
    w = finite_scalar("w", w)
    requested = _steps(steps)
    pairs = ranked_lists(targets, weights)
    if not pairs:
        raise EngineError("targets", "targets must list at least one rank")
    counts = [_sum(weight) for _, weight in pairs]
    sums = [_sum(map(operator.mul, weight, y)) for y, weight in pairs]  # each product a float
    total = _sum(counts)
    require_items(pairs, total)
    # Exact arithmetic needs finite inputs: sums past the float range are refused first.
    if not (all(map(math.isfinite, counts)) and all(map(math.isfinite, sums))):
        finite_results("weights" if weights is not None else "targets", counts=counts)
        finite_results("targets", sums=sums)
    # Each scheme is the affine map w ← f + c·(w - f) (f its fixed point, c its contraction);
    # f and c come from the exact values of the per-rank sums, so two schemes that are the same
    # computation (one rank, equal counts, equal rank means) take exactly the same path.
    single = [y[0] for y, _ in pairs] if all(len(y) == 1 for y, _ in pairs) else None
    fixed_global, fixed_rank_mean, occupied = _fixed_points(counts, sums, single)
    if not (math.isfinite(fixed_global) and math.isfinite(fixed_rank_mean)):
        finite_results("targets", fixed_point_global=fixed_global, fixed_point=fixed_rank_mean)
    fixed = (fixed_global, fixed_rank_mean)
    rate, unit = eta.as_integer_ratio()
    ranks = len(pairs)
    contractions = (
        ratio_float((unit - rate, unit)),
        ratio_float((unit * ranks - rate * occupied, unit * ranks)),
    )
    contraction_global, contraction_rank_mean = contractions
    warnings = [
        text
        for scheme, factor, fixed_point in zip(SCHEMES, contractions, fixed, strict=True)
        if (text := _rate_warning(scheme, eta, factor, fixed_point))
    ]
    path_global, path_rank_mean, escaped = _paths(w, fixed, contractions, requested)
    taken = len(path_global)
    diverged = taken <= requested
    if diverged:
        warnings.append(_stop_warning(escaped, taken, requested))

    losses = _losses(pairs, total, [*path_global, *path_rank_mean, fixed_global, fixed_rank_mean])
    loss_global, loss_rank_mean = tuple(losses[:taken]), tuple(losses[taken : 2 * taken])
    loss_minimum, loss_at_rank_fixed = losses[-2], losses[-1]
    if not all(map(math.isfinite, losses)):  # the fixed points and factors are finite
        finite_results(
            "targets",
            loss_global=loss_global,
            loss_rank_mean=loss_rank_mean,
            loss_minimum=loss_minimum,
            loss_at_rank_mean_fixed_point=loss_at_rank_fixed,
            fixed_point_global=fixed_global,
            fixed_point_rank_mean=fixed_rank_mean,
            contraction_rank_mean=contraction_rank_mean,
        )
    return Trajectory(
        steps=taken - 1,
        requested_steps=requested,
        w_global=tuple(path_global),
        w_rank_mean=tuple(path_rank_mean),
        loss_global=loss_global,
        loss_rank_mean=loss_rank_mean,
        fixed_point_global=fixed_global,
        fixed_point_rank_mean=fixed_rank_mean,
        loss_minimum=loss_minimum,
        loss_at_rank_mean_fixed_point=loss_at_rank_fixed,
        contraction_global=contraction_global,
        contraction_rank_mean=contraction_rank_mean,
        diverged=diverged,
        warnings=tuple(warnings),
    )
