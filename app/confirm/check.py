"""The real run beside the engine: replica consistency and agreement, per run. No torch.

Every comparison has a tolerance on the gradient's own scale (the largest item gradient
``|w - y|``), never on ``w``: a large ``w`` or a tiny ``η`` cannot hide a wrong gradient.
"""

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from app.confirm.jobs import DistributedResult, Job, Outcome, Run
from app.engine import accumulate, from_items
from app.engine.verdicts import Agreement, Reason
from app.lab.state import Form

# float64 sums of the items' gradients in another order agree to ~1e-13 of the largest item
# gradient |w - y|; 1e-9 of it leaves room for long sums and cancellation.
RELATIVE_TOLERANCE = 1e-9

Objective = Literal["rank mean", "naive microbatch mean", "global item mean"]
EngineField = Literal["rank_mean_gradient", "naive_gradient", "global_gradient"]


class RunCheck(Run):
    """One DDP run on every rank, and what the engine says that run should give."""

    objective: Objective = Field(description="Which reduction this run computes.")
    engine_field: EngineField = Field(
        description="The /api/gradient field (top level, or in accumulation) holding it."
    )
    replicas_agree: bool = Field(description="Every rank holds the same gradient and w_new.")
    engine_grad: float = Field(description="The engine's gradient for this objective.")
    engine_w_new: float = Field(description="The engine's w_new for this objective.")
    matches_engine: bool = Field(
        description="Every rank's grad and w_new equal the engine's, within the tolerances."
    )
    matches_reference: bool = Field(
        description="Every rank's grad equals the global item-mean gradient, and its w_new that"
        " step's, within the tolerances: this run optimises the unpartitioned objective."
    )


class ReferenceCheck(BaseModel):
    """The single-process unpartitioned objective, against the engine's global item mean."""

    grad: float
    w_new: float
    engine_grad: float
    engine_w_new: float
    matches_engine: bool


class ConfirmResponse(BaseModel):
    """Real DistributedDataParallel on gloo (CPU, float64) beside the engine."""

    backend: Literal["gloo"]
    world_size: int = Field(description="P: ranks in the process group.")
    torch_version: str
    form: Form = Field(description="Which request form ran.")
    counts: list[float] = Field(description="nᵣ per rank, as the ranks counted them.")
    total: float = Field(description="N = Σ nᵣ, from an all_reduce of the counts.")
    ddp_default: RunCheck = Field(description="Local mean loss: DDP averages it over P ranks.")
    compensated: RunCheck = Field(description="Local mean scaled by P·nᵣ/N before DDP's mean.")
    comm_hook: RunCheck = Field(description="Local sum; a comm hook all-reduces and divides by N.")
    reference: ReferenceCheck
    replicas_agree: bool = Field(description="Every run's replicas agree with each other.")
    engine_agrees: bool = Field(description="Every run and the reference match the engine.")
    schemes_agree: bool = Field(
        description="The engine's two gradients for these items (the plain scheme DDP's"
        " default runs, and the global item mean) are exactly equal."
    )
    agreement: Reason = Field(
        description="Why they agree (one entry, proportional counts, equal means, zero means,"
        " coincidence) or differ (unequal counts, empty entries); entries are ranks, or"
        " microbatches with accumulation."
    )
    empty_entries: list[int] = Field(
        description="The entries (ranks, or microbatches in order) with no items."
    )
    tolerance: float = Field(
        description="Relative tolerance of every comparison, on the gradient's own scale."
    )
    gradient_scale: float = Field(
        description="The gradient's scale: the largest item gradient |w - y| of a weighted item."
    )
    gradient_tolerance: float = Field(
        description="Two gradients match when they differ by at most tolerance·gradient_scale."
    )
    w_new_tolerance: float = Field(
        description="Two w_new match within η·gradient_tolerance plus 4 units in the last"
        " place of |w| + η·gradient_scale (the rounding of the step itself)."
    )
    elapsed_ms: float = Field(
        description="Time the pool took for the job (the original run if cached)."
    )
    cached: bool = Field(description="Answered from the cache of identical requests.")
    attempts: int = Field(description="1, or 2 when a failed rank forced a rebuild and a retry.")
    notes: list[str] = Field(description="How the request became per-rank items.")

    @property
    def runs(self) -> dict[str, RunCheck]:
        """The three runs by name, in the panel's order."""
        return {
            "ddp_default": self.ddp_default,
            "compensated": self.compensated,
            "comm_hook": self.comm_hook,
        }


@dataclass(frozen=True, slots=True)
class Tolerances:
    """How far a run's gradient and w_new may be from a prediction and still match it."""

    scale: float
    gradient: float
    w_new: float

    def matches(self, run: Run, grad: float, w_new: float) -> bool:
        return all(abs(g - grad) <= self.gradient for g in run.grad) and all(
            abs(x - w_new) <= self.w_new for x in run.w_new
        )


def tolerances(job: Job) -> Tolerances:
    """Rounding errors scale with the item gradients summed, not with w or η: the largest
    ``|w - y|`` among the weighted items sets the gradient's scale."""
    scale = max(
        (
            abs(job.w - y)
            for batches in job.ranks
            for batch in batches
            for y, weight in zip(batch.targets, batch.weights, strict=True)
            if weight > 0
        ),
        default=0.0,
    )
    gradient = RELATIVE_TOLERANCE * scale
    step = job.eta * gradient + 4 * math.ulp(abs(job.w) + job.eta * scale)
    return Tolerances(scale=scale, gradient=gradient, w_new=step)


@dataclass(frozen=True, slots=True)
class Expected:
    """What each objective gives for the job's own items, by the engine."""

    plain: tuple[float, float]
    plain_objective: Objective
    plain_field: EngineField
    global_item_mean: tuple[float, float]
    agreement: Agreement


def expected(job: Job) -> Expected:
    """The engine on the items the ranks held (the means form's are ``w - ḡᵣ``, rounded):
    ``(gradient, w_new)`` of the plain scheme DDP's default runs and of the global item mean."""
    targets = [[batch.targets for batch in batches] for batches in job.ranks]
    weights = [[batch.weights for batch in batches] for batches in job.ranks]
    if job.accumulation:
        window = accumulate(targets, weights, eta=job.eta, w=job.w)
        return Expected(
            plain=(window.naive_gradient, window.w_new_naive),
            plain_objective="naive microbatch mean",
            plain_field="naive_gradient",
            global_item_mean=(window.window_gradient, window.w_new_window),
            agreement=window.agreement,
        )
    result = from_items(
        [rank[0] for rank in targets], [rank[0] for rank in weights], eta=job.eta, w=job.w
    )
    return Expected(
        plain=(result.rank_mean_gradient, result.w_new_rank_mean),
        plain_objective="rank mean",
        plain_field="rank_mean_gradient",
        global_item_mean=(result.global_gradient, result.w_new),
        agreement=result.agreement,
    )


def check_run(
    run: Run,
    objective: Objective,
    field: EngineField,
    predicted: tuple[float, float],
    reference: tuple[float, float],
    within: Tolerances,
) -> RunCheck:
    agree = len(set(run.grad)) == 1 and len(set(run.w_new)) == 1
    return RunCheck(
        **run.model_dump(),
        objective=objective,
        engine_field=field,
        replicas_agree=agree,
        engine_grad=predicted[0],
        engine_w_new=predicted[1],
        matches_engine=within.matches(run, *predicted),
        matches_reference=within.matches(run, *reference),
    )


def confirm_response(job: Job, outcome: Outcome, notes: list[str]) -> ConfirmResponse:
    """Compare the real run with the engine: the plain scheme for DDP's default, the global
    item mean for the others and for the single-process reference."""
    result: DistributedResult = outcome.result
    within = tolerances(job)
    want = expected(job)
    target = want.global_item_mean
    runs = {
        "ddp_default": check_run(
            result.ddp_default, want.plain_objective, want.plain_field, want.plain, target, within
        ),
        "compensated": check_run(
            result.compensated, "global item mean", "global_gradient", target, target, within
        ),
        "comm_hook": check_run(
            result.comm_hook, "global item mean", "global_gradient", target, target, within
        ),
    }
    reference_run = Run(grad=[result.reference.grad], w_new=[result.reference.w_new])
    reference = ReferenceCheck(
        grad=result.reference.grad,
        w_new=result.reference.w_new,
        engine_grad=target[0],
        engine_w_new=target[1],
        matches_engine=within.matches(reference_run, *target),
    )
    return ConfirmResponse(
        backend=result.backend,
        world_size=result.world_size,
        torch_version=result.torch_version,
        form=job.form,
        counts=result.counts,
        total=result.total,
        **runs,
        reference=reference,
        replicas_agree=all(run.replicas_agree for run in runs.values()),
        engine_agrees=reference.matches_engine and all(run.matches_engine for run in runs.values()),
        schemes_agree=want.agreement.agree,
        agreement=want.agreement.reason,
        empty_entries=list(want.agreement.empty),
        tolerance=RELATIVE_TOLERANCE,
        gradient_scale=within.scale,
        gradient_tolerance=within.gradient,
        w_new_tolerance=within.w_new,
        elapsed_ms=outcome.elapsed_ms,
        cached=outcome.cached,
        attempts=outcome.attempts,
        notes=notes,
    )
