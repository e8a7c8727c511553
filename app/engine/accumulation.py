"""Gradient accumulation: averaging unequal microbatch means against one count per window."""

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from app.engine.checks import (
    finite_results,
    finite_scalar,
    quiet_overflow,
    ranked_items,
    require_items,
)
from app.engine.decimals import as_decimal
from app.engine.errors import EngineError, renamed_fields
from app.engine.gradient import empty_warning, from_means, item_stats
from app.engine.results import AccumulationResult
from app.engine.verdicts import rounded, weighted_means


@quiet_overflow
def accumulate(
    microbatches: Sequence[Sequence[Sequence[float]]],
    weights: Sequence[Sequence[Sequence[float]]] | None = None,
    *,
    eta: float,
    w: float,
) -> AccumulationResult:
    """Compare two ways to turn a window of microbatches on P ranks into one SGD step.

    ``microbatches[r][m]`` lists the targets y of microbatch m on rank r (each rank needs at
    least one microbatch, ``M_r`` of them; a microbatch may be empty); optional ``weights`` has
    the same nesting (per-item weights >= 0, 0 = masked). Loss ``½(w - y)²``, gradient ``w - y``.
    Per microbatch ``n_rm = Σ weight`` and ``ḡ_rm = Σ weight·(w - y) / n_rm`` (0 when empty).

      naive:  ``(1/P) Σ_r (1/M_r) Σ_m ḡ_rm``  — average the microbatch means, then the ranks
      window: ``g = Σ_rm n_rm ḡ_rm / N`` with ``N = Σ_rm n_rm`` — one count for the window

    With ``scale_factors[r][m] = P·M_r·n_rm / N``, feeding the naive two-level average the
    scaled means ``scale_factors[r][m]·ḡ_rm`` instead of ``ḡ_rm`` makes it return g.
    Steps: ``w_new_naive = w - η·naive``, ``w_new_window = w - η g``, and
    ``w_new_difference = w_new_naive - w_new_window = η·(g - naive)``. Both gradients, both
    steps and the difference are exact values of the microbatch counts and means rounded once;
    ``agreement`` (entries = microbatches, plain weights ``1/(P·M_r)``) says why they agree
    or differ.

    Raises EngineError for bad shapes or values, a rank without microbatches, or ``N = 0``.
    """
    eta = finite_scalar("eta", eta, positive=True)
    w = finite_scalar("w", w)
    if isinstance(microbatches, str | bytes) or not microbatches:
        raise EngineError("microbatches", "microbatches must list at least one rank")
    if weights is not None and len(weights) != len(microbatches):
        raise EngineError(
            "weights",
            f"weights has {len(weights)} ranks but microbatches has {len(microbatches)}",
        )
    ranks = len(microbatches)
    counts: list[list[float]] = []
    means: list[list[float]] = []
    warnings: list[str] = []
    every_pair = []
    for r, rank_batches in enumerate(microbatches):
        if isinstance(rank_batches, str | bytes) or not rank_batches:
            raise EngineError("microbatches", f"microbatches[{r}] must hold at least one list")
        pairs = ranked_items(
            rank_batches,
            None if weights is None else weights[r],
            targets_field="microbatches",
            where=f"[{r}]",
        )
        every_pair.extend(pairs)
        stats = [item_stats(y, weight, w) for y, weight in pairs]
        counts.append([n for n, _ in stats])
        means.append([mean for _, mean in stats])
        warnings.extend(
            empty_warning(
                f"microbatch {m} of rank {r}",
                f"the naive average of rank {r}'s microbatch means",
                f"M = {len(pairs)}",
            )
            for m, (n, _) in enumerate(stats)
            if n == 0
        )

    total = float(sum(sum(row) for row in counts))
    require_items(every_pair, total, "microbatches")
    rank_counts = [sum(row) for row in counts]
    rank_naive = [float(np.mean(row)) for row in means]
    rank_window = [
        float(np.dot(n_row, m_row) / n) if n else 0.0
        for n_row, m_row, n in zip(counts, means, rank_counts, strict=True)
    ]
    # Exact arithmetic needs finite inputs: a count or mean past the float range is refused first.
    finite_results("weights" if weights is not None else "microbatches", total=total)
    finite_results("microbatches", means=[m for row in means for m in row])
    # The two window gradients, both steps and their difference from the exact values of the
    # microbatch counts and means, rounded once: equal gradients give a difference of exactly 0.
    exact = weighted_means(
        [n for row in counts for n in row],
        [mean for row in means for mean in row],
        [Fraction(1, ranks * len(row)) for row in counts for _ in row],
    )
    agreement = exact.agreement
    step, start = as_decimal(eta), as_decimal(w)
    naive, window = agreement.plain, agreement.counted
    scale = [[ranks * len(row) * n / total for n in row] for row in counts]
    naive_gradient, window_gradient = rounded(naive), rounded(window)
    finite_results("microbatches", naive_gradient=naive_gradient, window_gradient=window_gradient)
    count_field = "microbatches" if weights is None else "weights"
    with renamed_fields({"counts": count_field, "means": "microbatches"}):
        across = from_means(rank_counts, rank_window, eta=eta, w=w)
    w_new_naive = rounded(start - step * naive)
    w_new_window = rounded(start - step * window)
    w_new_difference = rounded(step * (window - naive))
    finite_results(
        "microbatches",
        w_new_naive=w_new_naive,
        w_new_window=w_new_window,
        w_new_difference=w_new_difference,
        rank_naive_means=rank_naive,
        rank_window_means=rank_window,
        scale_factors=[f for row in scale for f in row],
    )
    return AccumulationResult(
        P=ranks,
        N=total,
        microbatch_counts=tuple(len(row) for row in counts),
        counts=tuple(map(tuple, counts)),
        means=tuple(map(tuple, means)),
        rank_counts=tuple(rank_counts),
        rank_naive_means=tuple(rank_naive),
        rank_window_means=tuple(rank_window),
        eta=eta,
        w=w,
        naive_gradient=naive_gradient,
        window_gradient=window_gradient,
        scale_factors=tuple(map(tuple, scale)),
        w_new_naive=w_new_naive,
        w_new_window=w_new_window,
        w_new_difference=w_new_difference,
        across_ranks=across,
        warnings=(*warnings, *across.warnings),
        agreement=agreement,
    )
