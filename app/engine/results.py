"""What the engine answers: one pydantic model per result, serialised as it is by the JSON API.

A field marked ``exclude`` is for the lab's words and pictures only and never reaches JSON. Every
number is checked finite before a result is built (``checks.finite_results``), the one check.
"""

from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from app.engine.decimals import Ratio
from app.engine.verdicts import Agreement

# What the update was given: per-rank counts and means, per-rank items, or microbatches per rank.
Form = Literal["means", "items", "accumulation"]


class Exact(NamedTuple):
    """N, both steps and their difference exactly, as unreduced ratios (numerator, denominator
    > 0): a result's floats are these rounded once."""

    N: Ratio
    w_new: Ratio
    w_new_rank_mean: Ratio
    w_new_difference: Ratio


class Trajectory(BaseModel):
    """SGD iterates and unpartitioned losses of both schemes; every list has ``steps + 1``
    entries, from ``w``.

    ``steps`` is the number of steps taken: ``requested_steps`` unless a diverging run passed
    ``|w| > 1e100`` first (then ``diverged`` is true and a warning says where it stopped).
    """

    model_config = ConfigDict(frozen=True)

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
    warnings: Annotated[tuple[str, ...], Field(exclude=True)]

    @property
    def loss_final_global(self) -> float:
        """The global scheme's loss after its last step."""
        return self.loss_global[-1]

    @property
    def loss_final_rank_mean(self) -> float:
        """The rank-mean scheme's loss after its last step."""
        return self.loss_rank_mean[-1]


class GradientResult(BaseModel):
    """Both reductions of one update across ranks; per-rank lists are indexed by rank
    ``r = 0 … P-1``.

    For the accumulation form the per-rank counts and means are whole-window ones, so
    ``global_gradient`` is the window gradient; ``accumulation`` adds the microbatch view, and
    ``trajectory`` the SGD path when the items form asks for steps.
    """

    model_config = ConfigDict(frozen=True)

    form: Form
    P: int
    N: float
    counts: tuple[float, ...]
    means: tuple[float, ...]
    eta: float
    w: float
    global_gradient: float
    rank_mean_gradient: float
    scale_factors: tuple[float, ...]
    compensated_means: tuple[float, ...]
    w_new: float
    w_new_rank_mean: float
    w_new_difference: float
    influence_global: tuple[float, ...]
    influence_rank_mean: tuple[float, ...]
    warnings: tuple[str, ...]
    trajectory: Trajectory | None = None
    accumulation: "AccumulationResult | None" = None
    agreement: Annotated[Agreement, Field(exclude=True)]
    exact: Annotated[Exact, Field(exclude=True)]


class AccumulationResult(BaseModel):
    """One update window; ``counts[r][m]`` and ``means[r][m]`` are per rank r, microbatch m:
    naive microbatch averaging against one count for the window.

    ``across_ranks`` is ``from_means`` over the per-rank window counts and window means: its
    ``global_gradient`` is the window gradient, and its rank mean is what a mean reducer gets
    when each rank accumulates correctly but the ranks' counts still differ. The JSON API
    serialises it without what its ``across_ranks`` answer already holds.
    """

    model_config = ConfigDict(frozen=True)

    P: Annotated[int, Field(exclude=True)]
    N: Annotated[float, Field(exclude=True)]
    microbatch_counts: tuple[int, ...]
    counts: tuple[tuple[float, ...], ...]
    means: tuple[tuple[float, ...], ...]
    rank_counts: tuple[float, ...]
    rank_naive_means: tuple[float, ...]
    rank_window_means: tuple[float, ...]
    eta: Annotated[float, Field(exclude=True)]
    w: Annotated[float, Field(exclude=True)]
    naive_gradient: float
    window_gradient: float
    scale_factors: tuple[tuple[float, ...], ...]
    w_new_naive: float
    w_new_window: float
    w_new_difference: float
    across_ranks: Annotated[GradientResult, Field(exclude=True)]
    warnings: Annotated[tuple[str, ...], Field(exclude=True)]
    agreement: Annotated[Agreement, Field(exclude=True)]


GradientResult.model_rebuild()
