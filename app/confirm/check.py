"""The real run beside the NumPy engine: replica consistency and agreement, per run. No torch."""

import math
from typing import Literal

from pydantic import BaseModel, Field

from app.confirm.jobs import DistributedResult, Job, Run
from app.confirm.pool import Outcome
from app.lab.compute import GradientResponse
from app.lab.state import Form

# float64 sums in another order: agreement to ~1e-12 relative; 1e-9 leaves room for cancellation.
RELATIVE_TOLERANCE = 1e-9

Objective = Literal["rank mean", "global item mean"]


class RunCheck(Run):
    """One DDP run on every rank, and what the engine says that run should give."""

    objective: Objective = Field(description="Which reduction this run computes.")
    replicas_agree: bool = Field(description="Every rank holds the same gradient and w_new.")
    engine_grad: float = Field(description="The engine's gradient for this objective.")
    engine_w_new: float = Field(description="The engine's w_new for this objective.")
    matches_engine: bool = Field(description="Every rank's grad and w_new equal the engine's.")
    matches_reference: bool = Field(description="Every rank's w_new equals the reference's.")


class ReferenceCheck(BaseModel):
    """The single-process unpartitioned objective, against the engine's global item mean."""

    grad: float
    w_new: float
    engine_grad: float
    engine_w_new: float
    matches_engine: bool


class ConfirmResponse(BaseModel):
    """Real DistributedDataParallel on gloo (CPU, float64) beside the NumPy engine."""

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
    tolerance: float = Field(description="Relative tolerance of the comparisons with the engine.")
    elapsed_ms: float = Field(
        description="Time the pool took for the job (the original run if cached)."
    )
    cached: bool = Field(description="Answered from the cache of identical requests.")
    attempts: int = Field(description="1, or 2 when a failed rank forced a rebuild and a retry.")
    notes: list[str] = Field(description="How the request became per-rank items.")


def close(a: float, b: float, scale: float) -> bool:
    return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=RELATIVE_TOLERANCE * scale)


def job_scale(job: Job) -> float:
    """The magnitude rounding errors scale with: the largest |w| or |target|."""
    largest = max(
        (abs(y) for batches in job.ranks for batch in batches for y in batch.targets), default=0.0
    )
    return max(1.0, abs(job.w), largest)


def check_run(
    run: Run, objective: Objective, grad: float, w_new: float, reference_w_new: float, scale: float
) -> RunCheck:
    agree = len(set(run.grad)) == 1 and len(set(run.w_new)) == 1
    return RunCheck(
        **run.model_dump(),
        objective=objective,
        replicas_agree=agree,
        engine_grad=grad,
        engine_w_new=w_new,
        matches_engine=all(close(g, grad, scale) for g in run.grad)
        and all(close(x, w_new, scale) for x in run.w_new),
        matches_reference=all(close(x, reference_w_new, scale) for x in run.w_new),
    )


def confirm_response(
    job: Job, engine: GradientResponse, outcome: Outcome, notes: list[str]
) -> ConfirmResponse:
    """Compare the real run with the engine: rank mean for DDP's default, g for the others."""
    result: DistributedResult = outcome.result
    scale = job_scale(job)
    if engine.accumulation is not None:
        naive, naive_w = engine.accumulation.naive_gradient, engine.accumulation.w_new_naive
    else:
        naive, naive_w = engine.rank_mean_gradient, engine.w_new_rank_mean
    target, target_w = engine.global_gradient, engine.w_new
    reference_w = result.reference.w_new
    runs = {
        "ddp_default": check_run(
            result.ddp_default, "rank mean", naive, naive_w, reference_w, scale
        ),
        "compensated": check_run(
            result.compensated, "global item mean", target, target_w, reference_w, scale
        ),
        "comm_hook": check_run(
            result.comm_hook, "global item mean", target, target_w, reference_w, scale
        ),
    }
    reference = ReferenceCheck(
        grad=result.reference.grad,
        w_new=result.reference.w_new,
        engine_grad=target,
        engine_w_new=target_w,
        matches_engine=close(result.reference.grad, target, scale)
        and close(result.reference.w_new, target_w, scale),
    )
    return ConfirmResponse(
        backend=result.backend,
        world_size=result.world_size,
        torch_version=result.torch_version,
        form=engine.form,
        counts=result.counts,
        total=result.total,
        **runs,
        reference=reference,
        replicas_agree=all(run.replicas_agree for run in runs.values()),
        engine_agrees=reference.matches_engine and all(run.matches_engine for run in runs.values()),
        tolerance=RELATIVE_TOLERANCE,
        elapsed_ms=outcome.elapsed_ms,
        cached=outcome.cached,
        attempts=outcome.attempts,
        notes=notes,
    )
