"""The lab state through the engine: the JSON API's response models and ``compute``.

``compute`` runs any of the three forms of a validated ``GradientRequest``; the lab's pages call
the engine themselves (they need its result objects for the view, not JSON).
"""

from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from app import engine
from app.engine import EngineError
from app.lab.state import Form, GradientRequest


class TrajectoryResponse(BaseModel):
    """SGD iterates and unpartitioned losses of both schemes (``steps + 1`` entries each)."""

    model_config = ConfigDict(allow_inf_nan=False)

    steps: int
    requested_steps: int
    w_global: list[float]
    w_rank_mean: list[float]
    loss_global: list[float]
    loss_rank_mean: list[float]
    fixed_point_global: float
    fixed_point_rank_mean: float
    loss_minimum: float
    loss_at_rank_mean_fixed_point: float
    contraction_global: float
    contraction_rank_mean: float
    diverged: bool


class AccumulationResponse(BaseModel):
    """Per rank and microbatch counts and means; naive microbatch averaging vs the window count."""

    model_config = ConfigDict(allow_inf_nan=False)

    microbatch_counts: list[int]
    counts: list[list[float]]
    means: list[list[float]]
    rank_counts: list[float]
    rank_naive_means: list[float]
    rank_window_means: list[float]
    naive_gradient: float
    window_gradient: float
    scale_factors: list[list[float]]
    w_new_naive: float
    w_new_window: float
    w_new_difference: float


class GradientResponse(BaseModel):
    """Both reductions of one update across ranks; per-rank lists are indexed by rank.

    For the accumulation form the per-rank counts and means are whole-window ones, so
    ``global_gradient`` is the window gradient; ``accumulation`` adds the microbatch view.
    """

    model_config = ConfigDict(allow_inf_nan=False)

    form: Form
    P: int
    N: float
    counts: list[float]
    means: list[float]
    eta: float
    w: float
    global_gradient: float
    rank_mean_gradient: float
    scale_factors: list[float]
    compensated_means: list[float]
    w_new: float
    w_new_rank_mean: float
    w_new_difference: float
    influence_global: list[float]
    influence_rank_mean: list[float]
    warnings: list[str]
    trajectory: TrajectoryResponse | None = None
    accumulation: AccumulationResponse | None = None


def item_lists(state: GradientRequest) -> tuple[list[list[float]], list[list[float]] | None]:
    """The items form's targets and weights (None: every item weighs 1) for the engine."""
    return state.targets or [], cast(list[list[float]] | None, state.weights)


def gradient(state: GradientRequest) -> engine.GradientResult:
    """The engine's result for the means or the items form; raises ``EngineError``."""
    if state.counts is not None:
        return engine.from_means(state.counts, state.means or [], eta=state.eta, w=state.w)
    return engine.from_items(*item_lists(state), eta=state.eta, w=state.w)


def compute(request: GradientRequest) -> GradientResponse:
    """Run the engine for the request's form; raises ``EngineError`` naming a field."""
    trajectory: TrajectoryResponse | None = None
    accumulation: AccumulationResponse | None = None
    if request.microbatches is not None:
        window = engine.accumulate(
            request.microbatches,
            cast(list[list[list[float]]] | None, request.weights),
            eta=request.eta,
            w=request.w,
        )
        result, warnings = window.across_ranks, window.warnings
        accumulation = AccumulationResponse.model_validate(window, from_attributes=True)
    else:
        result = gradient(request)
        warnings = result.warnings
        if request.steps is not None:  # the items form's only
            path = engine.trajectory(
                *item_lists(request), eta=request.eta, w=request.w, steps=request.steps
            )
            trajectory = TrajectoryResponse.model_validate(path, from_attributes=True)
            warnings = (*warnings, *path.warnings)
    fields = {
        name: getattr(result, name)
        for name in GradientResponse.model_fields
        if hasattr(result, name)
    }
    return GradientResponse(
        **{**fields, "warnings": list(warnings)},
        form=request.form,
        trajectory=trajectory,
        accumulation=accumulation,
    )


def engine_error_detail(error: EngineError) -> list[dict[str, Any]]:
    """An ``EngineError`` as FastAPI's 422 ``detail`` list, its ``loc`` naming the body field."""
    return [
        {
            "type": "engine_error",
            "loc": ["body", error.field],
            "msg": str(error),
            "input": None,
        }
    ]
