"""K steps of scalar SGD under each reduction, scored by the unpartitioned objective."""

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from app.engine.checks import (
    as_floats,
    finite_results,
    finite_scalar,
    quiet_overflow,
    ranked_items,
)
from app.engine.errors import EngineError
from app.engine.gradient import require_items
from app.engine.verdicts import rounded

MAX_STEPS = 1000
# Beyond this |w| a diverging run is stopped: the loss ½(w - y)² stays far inside the float range.
W_LIMIT = 1e100


@dataclass(frozen=True, slots=True)
class Trajectory:
    """Iterates and losses of both schemes; every tuple has ``steps + 1`` entries, from ``w``.

    ``steps`` is the number of steps taken: ``requested_steps`` unless a diverging run passed
    ``|w| > 1e100`` first (then ``diverged`` is true and a warning says where it stopped).
    """

    steps: int
    requested_steps: int
    w_global: tuple[float, ...]
    w_rank_mean: tuple[float, ...]
    loss_global: tuple[float, ...]
    loss_rank_mean: tuple[float, ...]
    fixed_point_global: float
    fixed_point_rank_mean: float
    loss_minimum: float
    loss_at_rank_mean_fixed_point: float
    contraction_global: float
    contraction_rank_mean: float
    diverged: bool
    warnings: tuple[str, ...]

    @property
    def converges_global(self) -> bool:
        """The global scheme approaches its fixed point: ``|contraction_global| < 1``."""
        return abs(self.contraction_global) < 1

    @property
    def converges_rank_mean(self) -> bool:
        """The rank-mean scheme approaches its fixed point: ``|contraction_rank_mean| < 1``."""
        return abs(self.contraction_rank_mean) < 1


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
    pairs = ranked_items(targets, weights)
    if not pairs:
        raise EngineError("targets", "targets must list at least one rank")
    ranks = len(pairs)
    y = np.concatenate([item_y for item_y, _ in pairs])
    weight = np.concatenate([item_weight for _, item_weight in pairs])
    rank_of = np.repeat(np.arange(ranks), [item_y.size for item_y, _ in pairs])
    counts = np.bincount(rank_of, weights=weight, minlength=ranks)
    total = float(counts.sum())
    require_items(pairs, total)

    def loss(at: float) -> float:
        return float(np.dot(weight, 0.5 * (at - y) ** 2) / total)

    # Each scheme is the affine map w ← f + c·(w - f) (f its fixed point, c its contraction);
    # f and c come from the exact values of the per-rank sums, so two schemes that are the same
    # computation (one rank, equal counts, equal rank means) take exactly the same path.
    sums = np.bincount(rank_of, weights=weight * y, minlength=ranks)
    # Exact arithmetic needs finite inputs: sums past the float range are refused first.
    finite_results("weights" if weights is not None else "targets", counts=counts.astype(float))
    finite_results("targets", sums=sums.astype(float))
    exact_counts = [Fraction(float(n)) for n in counts]
    exact_sums = [Fraction(float(v)) for v in sums]
    rank_targets = [v / n for v, n in zip(exact_sums, exact_counts, strict=True) if n]
    rate = Fraction(eta)
    fixed_global = rounded(sum(exact_sums, Fraction(0)) / sum(exact_counts, Fraction(0)))
    fixed_rank_mean = rounded(sum(rank_targets, Fraction(0)) / len(rank_targets))
    contraction_global = rounded(1 - rate)
    contraction_rank_mean = rounded(1 - rate * Fraction(len(rank_targets), ranks))
    finite_results("targets", fixed_point_global=fixed_global, fixed_point=fixed_rank_mean)
    warnings = [
        text
        for text in (
            _rate_warning("global", eta, contraction_global, fixed_global),
            _rate_warning("rank-mean", eta, contraction_rank_mean, fixed_rank_mean),
        )
        if text
    ]

    path_global, path_rank_mean = [w], [w]
    diverged = False
    for step in range(requested):
        next_global = fixed_global + contraction_global * (path_global[-1] - fixed_global)
        next_rank_mean = fixed_rank_mean + contraction_rank_mean * (
            path_rank_mean[-1] - fixed_rank_mean
        )
        escaped = [
            name
            for name, value in (("global", next_global), ("rank-mean", next_rank_mean))
            if not abs(value) <= W_LIMIT
        ]
        if escaped:
            diverged = True
            schemes = " and ".join(escaped) + (" schemes" if len(escaped) > 1 else " scheme")
            warnings.append(
                f"|w| under the {schemes} would pass {W_LIMIT:g} at step"
                f" {step + 1} of {requested}; both trajectories stop after step {step}"
                " so every number stays finite."
            )
            break
        path_global.append(next_global)
        path_rank_mean.append(next_rank_mean)

    loss_global = np.array([loss(at) for at in path_global])
    loss_rank_mean = np.array([loss(at) for at in path_rank_mean])
    loss_minimum = loss(fixed_global)
    loss_at_rank_fixed = loss(fixed_rank_mean)
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
        steps=len(path_global) - 1,
        requested_steps=requested,
        w_global=tuple(path_global),
        w_rank_mean=tuple(path_rank_mean),
        loss_global=as_floats(loss_global),
        loss_rank_mean=as_floats(loss_rank_mean),
        fixed_point_global=fixed_global,
        fixed_point_rank_mean=fixed_rank_mean,
        loss_minimum=loss_minimum,
        loss_at_rank_mean_fixed_point=loss_at_rank_fixed,
        contraction_global=contraction_global,
        contraction_rank_mean=contraction_rank_mean,
        diverged=diverged,
        warnings=tuple(warnings),
    )
