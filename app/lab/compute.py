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


def compute(request: GradientRequest) -> GradientResponse:
    """Run the engine for the request's form; raises ``EngineError`` naming a field."""
    trajectory: TrajectoryResponse | None = None
    accumulation: AccumulationResponse | None = None
    warnings: tuple[str, ...] = ()
    if request.counts is not None:
        result = engine.from_means(
            request.counts, request.means or [], eta=request.eta, w=request.w
        )
        warnings = result.warnings
    elif request.targets is not None:
        weights = cast(list[list[float]] | None, request.weights)
        result = engine.from_items(request.targets, weights, eta=request.eta, w=request.w)
        warnings = result.warnings
        if request.steps is not None:
            path = engine.trajectory(
                request.targets, weights, eta=request.eta, w=request.w, steps=request.steps
            )
            trajectory = TrajectoryResponse.model_validate(path, from_attributes=True)
            warnings = (*warnings, *path.warnings)
    elif request.microbatches is not None:
        window = engine.accumulate(
            request.microbatches,
            cast(list[list[list[float]]] | None, request.weights),
            eta=request.eta,
            w=request.w,
        )
        result = window.across_ranks
        accumulation = AccumulationResponse.model_validate(window, from_attributes=True)
        warnings = window.warnings
    else:  # unreachable through validation; kept so a hand-built request fails clearly
        raise EngineError("counts", "give exactly one of counts, targets or microbatches")
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
