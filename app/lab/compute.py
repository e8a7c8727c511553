"""The lab state through the engine: ``compute`` runs any of the three forms of a validated
``GradientRequest``; its answer is the engine's ``GradientResult``, which the JSON API serialises
as it is. The lab's pages call the engine themselves (they need its parts for the view).
"""

from typing import Any, cast

from app import engine
from app.engine import EngineError, GradientResult
from app.lab.state import GradientRequest


def item_lists(state: GradientRequest) -> tuple[list[list[float]], list[list[float]] | None]:
    """The items form's targets and weights (None: every item weighs 1) for the engine."""
    return state.targets or [], cast(list[list[float]] | None, state.weights)


def gradient(state: GradientRequest) -> GradientResult:
    """The engine's result for the means or the items form; raises ``EngineError``."""
    if state.counts is not None:
        return engine.from_means(state.counts, state.means or [], eta=state.eta, w=state.w)
    return engine.from_items(*item_lists(state), eta=state.eta, w=state.w)


def compute(request: GradientRequest) -> GradientResult:
    """Run the engine for the request's form, with the microbatch view or the SGD path it asks
    for and every warning; raises ``EngineError`` naming a field."""
    if request.microbatches is not None:
        window = engine.accumulate(
            request.microbatches,
            cast(list[list[list[float]]] | None, request.weights),
            eta=request.eta,
            w=request.w,
        )
        update = {"form": "accumulation", "warnings": window.warnings, "accumulation": window}
        return window.across_ranks.model_copy(update=update)
    result = gradient(request)
    if request.steps is None:  # steps: the items form's only
        return result
    path = engine.trajectory(
        *item_lists(request), eta=request.eta, w=request.w, steps=request.steps
    )
    warnings = (*result.warnings, *path.warnings)
    return result.model_copy(update={"trajectory": path, "warnings": warnings})


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
