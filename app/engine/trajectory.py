"""K steps of scalar SGD under each reduction, scored by the unpartitioned objective."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import NamedTuple, NoReturn

import numpy as np

from app.engine.checks import (
    SMALLEST_COUNT,
    finite_floats,
    finite_results,
    finite_scalar,
    quiet_overflow,
    ranked_items,
)
from app.engine.decimals import decimal_ratio
from app.engine.errors import EngineError
from app.engine.gradient import require_items

MAX_STEPS = 1000
# Beyond this |w| a diverging run is stopped: the loss ½(w - y)² stays far inside the float range.
W_LIMIT = 1e100
# A contracting run that starts and aims within this |w| never comes near W_LIMIT (see _paths).
BOUNDED = 1e90


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
    def loss_final_global(self) -> float:
        """The global scheme's loss after its last step."""
        return self.loss_global[-1]

    @property
    def loss_final_rank_mean(self) -> float:
        """The rank-mean scheme's loss after its last step."""
        return self.loss_rank_mean[-1]

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


def _rate_warnings(
    eta: float, factors: tuple[float, float], fixed: tuple[float, float]
) -> list[str]:
    """``_rate_warning`` of each scheme, global first, where there is one."""
    texts = (
        _rate_warning("global", eta, factors[0], fixed[0]),
        _rate_warning("rank-mean", eta, factors[1], fixed[1]),
    )
    return [text for text in texts if text]


def _stop_warning(escaped: tuple[bool, bool], taken: int, requested: int) -> str:
    """Both paths stop after the last step where neither |w| passed the limit: say so."""
    names = [name for name, out in zip(("global", "rank-mean"), escaped, strict=True) if out]
    schemes = " and ".join(names) + (" schemes" if len(names) > 1 else " scheme")
    return (
        f"|w| under the {schemes} would pass {W_LIMIT:g} at step"
        f" {taken} of {requested}; both trajectories stop after step {taken - 1}"
        " so every number stays finite."
    )


# Up to this many items the per-rank sums run in plain Python (far quicker than building arrays);
# beyond it NumPy's bincount. Both add each rank's items one by one from 0.0: the same floats.
FEW_ITEMS = 64
# Losses are scored in blocks of about this many entries (points by items), so 1001 points of
# 10,000 items never build one 80 MB matrix.
LOSS_BLOCK = 1 << 16
VECDOT = getattr(np, "vecdot", None)  # NumPy 2.0 and later
LIST_ONLY = frozenset({list})


def _rank_lists(
    targets: Sequence[Sequence[float]], weights: Sequence[Sequence[float]] | None
) -> tuple[list[list[float]], list[list[float]]]:
    """Per rank its targets and weights as float lists, checked as ``ranked_items`` checks
    them (which raises the very same EngineError for a shape it refuses)."""
    plain = _plain_lists(targets, weights)
    if plain is not None:
        return plain
    if (
        isinstance(targets, str | bytes)
        or not isinstance(targets, Sequence)
        or (weights is not None and len(weights) != len(targets))
    ):
        _refuse(targets, weights)
    ys, vs = [], []
    for index, rank_targets in enumerate(targets):
        at = f"[{index}]"
        y = finite_floats("targets", rank_targets, where=at)
        if weights is None:
            v = [1.0] * len(y)
        else:
            v = finite_floats("weights", weights[index], non_negative=True, where=at)
            if len(v) != len(y):
                _refuse(targets, weights)
        ys.append(y)
        vs.append(v)
    return ys, vs


def _plain_lists(
    targets: Sequence[Sequence[float]], weights: Sequence[Sequence[float]] | None
) -> tuple[list[list[float]], list[list[float]]] | None:
    """The common case, checked in a few passes: lists of plain finite ints and floats, weights
    0 or at least the smallest normal float, shapes matching. Then the same float lists the
    full check gives; else None (and the full check decides, naming any fault)."""
    if type(targets) is not list or not set(map(type, targets)) <= LIST_ONLY:
        return None
    flat = list(chain.from_iterable(targets))
    kinds = _finite_kinds(flat)
    if kinds is None:
        return None
    ys = [list(map(float, rank)) for rank in targets] if int in kinds else targets
    if weights is None:
        return ys, [[1.0] * len(y) for y in ys]
    if type(weights) is not list or not set(map(type, weights)) <= LIST_ONLY:
        return None
    if list(map(len, weights)) != list(map(len, targets)):
        return None
    flat = list(chain.from_iterable(weights))
    kinds = _finite_kinds(flat)
    if kinds is None or (flat and min(flat) < 0):
        return None
    if min(filter(None, flat), default=SMALLEST_COUNT) < SMALLEST_COUNT:
        return None  # a positive weight below the smallest normal float
    vs = [list(map(float, rank)) for rank in weights] if int in kinds else weights
    return ys, vs


def _finite_kinds(values: list[float]) -> set[type] | None:
    """The types of ``values`` when each is a plain int or float (not a bool) and their sum is
    finite (so each is); else None."""
    kinds = set(map(type, values))
    if not kinds <= {float, int}:
        return None
    try:
        return kinds if math.isfinite(sum(values)) else None
    except OverflowError:  # an int past the float range
        return None


def _refuse(
    targets: Sequence[Sequence[float]], weights: Sequence[Sequence[float]] | None
) -> NoReturn:
    ranked_items(targets, weights)
    raise AssertionError("ranked_items accepted a shape the trajectory refused")


def _rank_sums(
    ys: list[list[float]], vs: list[list[float]]
) -> tuple[list[float], list[float], float]:
    """Per rank ``Σ weight`` and ``Σ weight·y`` (each added in item order from 0.0, as
    ``np.bincount`` adds them) and ``N``, the counts' sum as NumPy's ``sum`` gives it."""
    sizes = list(map(len, ys))
    if set(sizes) == {1}:  # one item per rank: a rank of the counts-and-means form
        counts = [0.0 + v[0] for v in vs]
        sums = [0.0 + v[0] * y[0] for y, v in zip(ys, vs, strict=True)]
    elif sum(sizes) <= FEW_ITEMS:
        counts, sums = [], []
        for y, v in zip(ys, vs, strict=True):
            count = total_y = 0.0
            for item_y, weight in zip(y, v, strict=True):
                count += weight
                total_y += weight * item_y
            counts.append(count)
            sums.append(total_y)
    else:
        rank_of = np.repeat(np.arange(len(ys)), sizes)
        item_weights = np.array([x for v in vs for x in v], dtype=np.float64)
        item_ys = np.array([x for y in ys for x in y], dtype=np.float64)
        counts = np.bincount(rank_of, weights=item_weights, minlength=len(ys)).tolist()
        sums = np.bincount(rank_of, weights=item_weights * item_ys, minlength=len(ys)).tolist()
    # Whole counts add exactly in any order while every partial sum stays below 2**53 (counts
    # are >= 0, so a float total below 2**53 says so); other counts keep NumPy's pairwise sum.
    total = sum(counts)
    if not (total < 2**53 and all(map(float.is_integer, counts))):
        total = float(np.sum(np.array(counts, dtype=np.float64)))
    return counts, sums, total


def _ratio_sum(values: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The exact sum of fractions ``(p, q)``, ``q > 0``, as one unreduced fraction."""
    top, bottom = 0, 1
    for p, q in values:
        top, bottom = top * q + p * bottom, bottom * q
    return top, bottom


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
    count_top, count_bottom = _ratio_sum(exact_counts)
    sum_top, sum_bottom = _ratio_sum(exact_sums)
    fixed_global = _nearest(sum_top * count_bottom, sum_bottom * count_top)
    rank_means = [
        (p * n_bottom, q * n_top)
        for (p, q), (n_top, n_bottom) in zip(exact_sums, exact_counts, strict=True)
        if n_top
    ]
    mean_top, mean_bottom = _ratio_sum(rank_means)
    fixed_rank_mean = _nearest(mean_top, mean_bottom * len(rank_means))
    return fixed_global, fixed_rank_mean, len(rank_means)


def _paths(
    w: float, fixed: tuple[float, float], factor: tuple[float, float], steps: int
) -> tuple[list[float], list[float], tuple[bool, bool]]:
    """Both schemes' ``w`` and up to ``steps`` iterates of ``w ← f + c·(w - f)``, stopping
    before the first step where either iterate's ``|w|`` passes ``W_LIMIT``; and which of
    them passed it there (neither when all ``steps`` were taken)."""
    fixed_a, fixed_b = fixed
    factor_a, factor_b = factor
    a = b = w
    path_a, path_b = [w], [w]
    append_a, append_b = path_a.append, path_b.append
    if (
        max(abs(factor_a), abs(factor_b)) <= 1
        and max(abs(w), abs(fixed_a), abs(fixed_b)) <= BOUNDED
    ):
        # No |w| can pass the limit: |w - f| never grows by more than rounding, so each |w| stays
        # below (|w₀| + 2k·|f|)·(1 + 2⁻⁵³)³ᵏ, far below 1e100 for k <= MAX_STEPS.
        for _ in repeat(None, steps):
            a = fixed_a + factor_a * (a - fixed_a)
            append_a(a)
            b = fixed_b + factor_b * (b - fixed_b)
            append_b(b)
        return path_a, path_b, (False, False)
    for _ in range(steps):
        a = fixed_a + factor_a * (a - fixed_a)
        b = fixed_b + factor_b * (b - fixed_b)
        if not (abs(a) <= W_LIMIT and abs(b) <= W_LIMIT):
            return path_a, path_b, (not abs(a) <= W_LIMIT, not abs(b) <= W_LIMIT)
        append_a(a)
        append_b(b)
    return path_a, path_b, (False, False)


def _nearest(top: int, bottom: int) -> float:
    """The float nearest to ``top / bottom`` (``bottom > 0``; int division rounds correctly,
    as ``float(Fraction)`` does); beyond the float range ±inf, as ``verdicts.rounded`` gives."""
    try:
        return top / bottom
    except OverflowError:
        return math.inf if top > 0 else -math.inf


def _losses(
    ys: list[list[float]], vs: list[list[float]], total: float, points: list[float]
) -> list[float]:
    """``L(w) = Σ weight·½(w - y)² / N`` at each point.

    Each row's weighted sum is ``np.vecdot``: per row the same dot product (BLAS ``ddot``)
    that ``np.dot`` takes, so every loss is the float one ``np.dot`` per point gives (NumPy
    before 2.0 has no ``vecdot``: there it is ``np.dot`` row by row).
    """
    y = np.array([x for rank in ys for x in rank], dtype=np.float64)
    weight = np.array([x for rank in vs for x in rank], dtype=np.float64)
    at = np.array(points, dtype=np.float64)
    rows = max(1, LOSS_BLOCK // max(y.size, 1))
    losses: list[float] = []
    for first in range(0, at.size, rows):
        block = 0.5 * (at[first : first + rows, None] - y) ** 2
        if VECDOT is None:
            losses += [float(np.dot(weight, row) / total) for row in block]
        else:
            losses += (VECDOT(block, weight) / total).tolist()
    return losses


def _run(
    eta: float, w: float, fixed: tuple[float, float], occupied: int, ranks: int, requested: int
) -> tuple[tuple[float, float], list[float], list[float], int, bool, list[str]]:
    """Each scheme as the affine map w ← f + c·(w - f), iterated from ``w``: both contractions
    c (from the exact rate and the count of occupied ranks), both paths (until ``requested``
    steps or escape), the points taken, whether a path stopped early, and the warnings."""
    rate, unit = eta.as_integer_ratio()
    contractions = (
        _nearest(unit - rate, unit),
        _nearest(unit * ranks - rate * occupied, unit * ranks),
    )
    warnings = _rate_warnings(eta, contractions, fixed)
    path_global, path_rank_mean, escaped = _paths(w, fixed, contractions, requested)
    taken = len(path_global)
    diverged = taken <= requested
    if diverged:
        warnings.append(_stop_warning(escaped, taken, requested))
    return contractions, path_global, path_rank_mean, taken, diverged, warnings


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
    ys, vs = _rank_lists(targets, weights)
    if not ys:
        raise EngineError("targets", "targets must list at least one rank")
    counts, sums, total = _rank_sums(ys, vs)
    if total == 0:
        require_items(ranked_items(targets, weights), total)
    # Exact arithmetic needs finite inputs: sums past the float range are refused first.
    if not (all(map(math.isfinite, counts)) and all(map(math.isfinite, sums))):
        finite_results("weights" if weights is not None else "targets", counts=counts)
        finite_results("targets", sums=sums)
    # Each scheme is the affine map w ← f + c·(w - f) (f its fixed point, c its contraction);
    # f and c come from the exact values of the per-rank sums, so two schemes that are the same
    # computation (one rank, equal counts, equal rank means) take exactly the same path.
    single = [y[0] for y in ys] if all(len(y) == 1 for y in ys) else None
    fixed_global, fixed_rank_mean, occupied = _fixed_points(counts, sums, single)
    if not (math.isfinite(fixed_global) and math.isfinite(fixed_rank_mean)):
        finite_results("targets", fixed_point_global=fixed_global, fixed_point=fixed_rank_mean)
    contractions, path_global, path_rank_mean, taken, diverged, warnings = _run(
        eta, w, (fixed_global, fixed_rank_mean), occupied, len(ys), requested
    )
    contraction_global, contraction_rank_mean = contractions

    losses = _losses(ys, vs, total, [*path_global, *path_rank_mean, fixed_global, fixed_rank_mean])
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


class PathEnds(NamedTuple):
    """A trajectory as the lab's results pane shows it: every iterate of both schemes, but of the
    losses only the last ones (``Trajectory``'s other fields, the same values)."""

    steps: int
    requested_steps: int
    w_global: tuple[float, ...]
    w_rank_mean: tuple[float, ...]
    fixed_point_global: float
    fixed_point_rank_mean: float
    contraction_global: float
    contraction_rank_mean: float
    loss_final_global: float
    loss_final_rank_mean: float
    diverged: bool
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, path: Trajectory) -> "PathEnds":
        return cls(
            path.steps,
            path.requested_steps,
            path.w_global,
            path.w_rank_mean,
            path.fixed_point_global,
            path.fixed_point_rank_mean,
            path.contraction_global,
            path.contraction_rank_mean,
            path.loss_final_global,
            path.loss_final_rank_mean,
            path.diverged,
            path.warnings,
        )


# Targets, counts and a start up to this size keep every loss ½(w - y)² · count far inside the
# float range (past the start |w| <= W_LIMIT), so none of the losses left out can be the one that
# is not, nor can NumPy overflow.
PLAIN_SIZE = 1e100


def path_ends(
    targets: Sequence[float], counts: Sequence[float], *, eta: float, w: float, steps: int
) -> PathEnds:
    """``trajectory([[y] for y in targets], [[n] for n in counts], ...)`` (one item per rank: the
    counts-and-means form) with only the final losses computed: the same floats, by the same
    operations (the final losses one ``np.vecdot`` row each, as in ``_losses``), and the same
    errors. Inputs the quick checks do not accept go through ``trajectory`` itself."""
    eta = finite_scalar("eta", eta, positive=True)
    w = finite_scalar("w", w)
    requested = _steps(steps)
    plain = _plain_ranks(targets, counts)
    if plain is None or abs(w) > PLAIN_SIZE:
        return _ends(targets, counts, eta, w, steps)
    ys, vs = plain
    # _rank_sums for ranks of one item each.
    sums = [0.0 + v * y for y, v in zip(ys, vs, strict=True)]
    counts_f = [0.0 + v for v in vs]
    total = sum(counts_f)
    if not (total < 2**53 and all(map(float.is_integer, counts_f))):
        total = float(np.sum(np.array(counts_f, dtype=np.float64)))
    if not total:
        return _ends(targets, counts, eta, w, steps)  # which refuses it, as trajectory does
    fixed_global, fixed_rank_mean, occupied = _fixed_points(counts_f, sums, ys)
    if not (math.isfinite(fixed_global) and math.isfinite(fixed_rank_mean)):
        return _ends(targets, counts, eta, w, steps)
    contractions, path_global, path_rank_mean, taken, diverged, warnings = _run(
        eta, w, (fixed_global, fixed_rank_mean), occupied, len(ys), requested
    )
    contraction_global, contraction_rank_mean = contractions
    # _losses' rows for the two final points, 0.5 · (w - y)², worked out in Python (each the
    # float NumPy's elementwise operations give: ** 2 squares as d · d), then each row's
    # vecdot (the same dot product as there) and / N (a float64's division, as Python's).
    last_global, last_rank_mean = path_global[-1], path_rank_mean[-1]
    block = [
        [0.5 * ((last_global - y) * (last_global - y)) for y in ys],
        [0.5 * ((last_rank_mean - y) * (last_rank_mean - y)) for y in ys],
    ]
    if VECDOT is None:
        weight = np.array(vs, dtype=np.float64)
        dots = [float(np.dot(weight, np.array(row, dtype=np.float64))) for row in block]
    else:
        dots = VECDOT(np.array(block, dtype=np.float64), np.array(vs, dtype=np.float64)).tolist()
    final_global, final_rank_mean = dots[0] / total, dots[1] / total
    return PathEnds(
        taken - 1,
        requested,
        tuple(path_global),
        tuple(path_rank_mean),
        fixed_global,
        fixed_rank_mean,
        contraction_global,
        contraction_rank_mean,
        final_global,
        final_rank_mean,
        diverged,
        tuple(warnings),
    )


def _plain_ranks(
    targets: Sequence[float], counts: Sequence[float]
) -> tuple[list[float], list[float]] | None:
    """``_plain_lists`` for ranks of one item each, as float lists, when the targets and counts
    are also at most ``PLAIN_SIZE`` in size; else None."""
    if type(targets) is not list or type(counts) is not list or len(targets) != len(counts):
        return None
    if not targets:
        return None
    kinds = _finite_kinds(targets)
    count_kinds = _finite_kinds(counts)
    if kinds is None or count_kinds is None:
        return None
    ys = list(map(float, targets)) if int in kinds else targets
    vs = list(map(float, counts)) if int in count_kinds else counts
    if min(vs) < 0 or max(vs) > PLAIN_SIZE or max(map(abs, ys)) > PLAIN_SIZE:
        return None
    if min(filter(None, vs), default=SMALLEST_COUNT) < SMALLEST_COUNT:
        return None
    return ys, vs


def _ends(
    targets: Sequence[float], counts: Sequence[float], eta: float, w: float, steps: int
) -> PathEnds:
    """``path_ends`` the long way: the whole trajectory (and its checks), then its ends."""
    full = trajectory([[y] for y in targets], [[n] for n in counts], eta=eta, w=w, steps=steps)
    return PathEnds.of(full)
