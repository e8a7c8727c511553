"""One optimizer update's gradient from per-rank counts and means: global item mean vs rank mean."""

import math
from collections.abc import Sequence

import numpy as np

from app.engine.checks import (
    FloatArray,
    finite_floats,
    finite_results,
    finite_scalar,
    quiet_overflow,
    ranked_items,
    require_items,
)
from app.engine.decimals import decimal_ratio
from app.engine.errors import EngineError, renamed_fields
from app.engine.results import Exact, GradientResult
from app.engine.verdicts import ratio_float, weighted_means


def empty_warning(label: str, plain: str, divisor: str, given_mean: float = 0.0) -> str:
    """The explanation carried by every result that holds an empty rank or microbatch.

    ``plain`` names the unweighted mean that still counts it, ``divisor`` what that mean divides
    by (e.g. ``"P = 2"``).
    """
    text = (
        f"{label} has no valid items (count 0): the count-weighted mean gives it no weight"
        f" (scale factor 0), but {plain} still divides by {divisor} and counts its local mean"
        " as 0 (the common sum / max(n, 1) guard), which pulls that mean towards 0."
    )
    if given_mean != 0.0:
        text += f" Its given mean {given_mean:g} is ignored: a mean over no items does not exist."
    return text


def from_means(
    counts: Sequence[float], means: Sequence[float], *, eta: float, w: float
) -> GradientResult:
    """Reduce per-rank mean gradients two ways and take one scalar SGD step with each.

    Inputs, for ``P = len(counts)`` ranks at the shared parameter ``w``:
      ``counts[r] = nᵣ`` valid-item count at rank r (items, tokens or a sum of sample weights;
      a non-negative float), ``means[r] = ḡᵣ`` mean local gradient (loss/parameter),
      ``eta = η > 0`` learning rate (parameter²/loss), ``w`` the parameter.

    Formulas:
      ``N = Σ nᵣ``, global item mean ``g = Σ nᵣ ḡᵣ / N``,
      plain rank mean ``(1/P) Σ ḡᵣ`` (an empty rank counts as ḡᵣ = 0),
      scale factors ``P·nᵣ/N`` and compensated means ``P·nᵣ/N · ḡᵣ`` (their mean is g),
      ``w_new = w - η g``, ``w_new_rank_mean = w - η·rank mean``, and their difference
      ``w_new_difference = w_new_rank_mean - w_new = η·(g - rank mean)``,
      per-item influence ``1/N`` (global) against ``1/(P·nᵣ)`` (rank mean), 0 for empty ranks.

    The means, N, both steps and the difference are the exact values of the inputs as written
    (each float read as its shortest decimal: means 3.7, -2.3, 8.8, -2.7, -6.6, -3.9 and 3 have
    a plain mean of exactly 0, where their floats' binary values give 1.9e-16), rounded once
    (so the difference is exactly 0 whenever the two means are equal); ``exact`` and
    ``agreement`` keep them unrounded, and ``agreement`` names the condition that makes the
    means agree, or why they differ.

    Raises EngineError (naming the field) for mismatched lengths, non-finite or negative input,
    a subnormal count, ``η <= 0``, or ``N = 0`` ("no valid items in this update").
    """
    eta = finite_scalar("eta", eta, positive=True)
    w = finite_scalar("w", w)
    n = finite_floats("counts", counts, non_negative=True)
    given = finite_floats("means", means)
    ranks = len(n)
    if ranks == 0:
        raise EngineError("counts", "counts must list at least one rank")
    if len(given) != ranks:
        raise EngineError("means", f"means has {len(given)} entries but counts has {ranks}")
    if not any(n):
        raise EngineError("counts", "no valid items in this update")
    # Plain floats, not NumPy: P is at most 64, too few for NumPy's per-call cost to pay.
    if 0.0 in n:
        mean = [y if x else 0.0 for x, y in zip(n, given, strict=True)]
        warnings = tuple(
            empty_warning(f"rank {r}", "the plain rank mean", f"P = {ranks}", given[r])
            for r, x in enumerate(n)
            if not x
        )
    else:
        mean, warnings = given, ()

    # Both means, both steps and their difference from the inputs' exact values, rounded once:
    # when the two schemes are the same computation their difference is exactly 0.
    exact = weighted_means(n, mean)
    (counted_top, counted_den), (plain_top, plain_den) = exact.counted, exact.plain
    (w_top, w_den), (eta_top, eta_den) = decimal_ratio(w), decimal_ratio(eta)
    # w - η·a/b = (w_top·η_den·b - η_top·a·w_den) / (w_den·η_den·b)
    w_eta_top, eta_w_den, w_eta_den = w_top * eta_den, eta_top * w_den, w_den * eta_den
    ratios = (
        exact.counted,
        exact.plain,
        exact.total,
        (w_eta_top * counted_den - eta_w_den * counted_top, w_eta_den * counted_den),
        (w_eta_top * plain_den - eta_w_den * plain_top, w_eta_den * plain_den),
        (-eta_top * exact.difference[0], eta_den * exact.difference[1]),
    )
    # Each rounded once; one beyond the float range is ±inf, refused below.
    values = [ratio_float(ratio) for ratio in ratios]
    global_gradient, rank_mean_gradient, total, w_new, w_new_rank_mean, w_new_difference = values
    # P·nᵣ/N and P·nᵣ ḡᵣ/N as written, each rounded once: compensated means equal as written
    # are equal floats (40 x -6.3 and 45 x -5.6 are both -252).
    n_top, n_den = exact.total
    scale = [ratio_float((ranks * a * n_den, d * n_top)) for a, d in exact.counts]
    compensated = [ratio_float((ranks * p * n_den, q * n_top)) for p, q in exact.products]
    global_weight = 1.0 / total
    influence_global = [global_weight if x else 0.0 for x in n]
    influence_rank_mean = [1.0 / (ranks * x) if x else 0.0 for x in n]
    # One sum tells that every result is finite (an inf or NaN anywhere makes it inf or NaN);
    # only when it is not (maybe a sum of large finite results overflowing) are they checked
    # one by one, naming the field to blame.
    if not math.isfinite(
        global_gradient
        + w_new
        + w_new_rank_mean
        + w_new_difference
        + total
        + global_weight
        + sum(compensated)
        + sum(scale)
        + sum(influence_rank_mean)
    ):
        finite_results(
            "means",
            global_gradient=global_gradient,
            compensated_means=compensated,
            w_new=w_new,
            w_new_rank_mean=w_new_rank_mean,
            w_new_difference=w_new_difference,
        )
        finite_results(
            "counts",
            N=total,
            scale_factors=scale,
            influence_global=influence_global,
            influence_rank_mean=influence_rank_mean,
        )
    return GradientResult(
        form="means",
        P=ranks,
        N=total,
        counts=tuple(n),
        means=tuple(mean),
        eta=eta,
        w=w,
        global_gradient=global_gradient,
        rank_mean_gradient=rank_mean_gradient,
        scale_factors=tuple(scale),
        compensated_means=tuple(compensated),
        w_new=w_new,
        w_new_rank_mean=w_new_rank_mean,
        w_new_difference=w_new_difference,
        influence_global=tuple(influence_global),
        influence_rank_mean=tuple(influence_rank_mean),
        warnings=warnings,
        agreement=exact.agreement,
        exact=Exact(*ratios[2:]),
    )


def item_stats(y: FloatArray, weight: FloatArray, w: float) -> tuple[float, float]:
    """Count ``n = Σ weight`` and weighted mean gradient ``Σ weight·(w - y) / n`` (0 if n = 0)."""
    n = float(weight.sum())
    if n == 0:
        return 0.0, 0.0
    return n, float(np.dot(weight, w - y) / n)


@quiet_overflow
def from_items(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None = None,
    *,
    eta: float,
    w: float,
) -> GradientResult:
    """The same two reductions, starting from per-rank targets of ``loss(w; y) = ½(w - y)²``.

    ``targets[r]`` lists rank r's targets y (parameter units); optional ``weights[r]`` has the
    same length, one non-negative weight per item (0 marks a padded or masked token; without
    weights every item weighs 1). Per item the gradient is ``w - y``, so per rank
    ``nᵣ = Σ weights`` and ``ḡᵣ = Σ weight·(w - y) / nᵣ``; everything else is ``from_means``.

    Raises EngineError for ragged weights, non-finite input, negative weights or ``N = 0``.
    """
    w = finite_scalar("w", w)
    pairs = ranked_items(targets, weights)
    if not pairs:
        raise EngineError("targets", "targets must list at least one rank")
    stats = [item_stats(y, weight, w) for y, weight in pairs]
    masked = [
        f"rank {r} holds {y.size} items but every one has weight 0 (padded or masked)."
        for r, (y, weight) in enumerate(pairs)
        if y.size and not weight.any()
    ]
    n, mean = (np.array(column) for column in zip(*stats, strict=True))
    require_items(pairs, float(n.sum()))
    finite_results("weights", counts=n)
    finite_results("targets", means=mean)
    count_field = "targets" if weights is None else "weights"
    with renamed_fields({"counts": count_field, "means": "targets"}):
        result = from_means(n.tolist(), mean.tolist(), eta=eta, w=w)
    return result.model_copy(update={"form": "items", "warnings": (*result.warnings, *masked)})
