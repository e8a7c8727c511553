"""Job and result types of the torch.distributed confirmation, shared by server, workers and CLI.

No torch here: the server process imports this module and must never load torch.

A job is what every rank needs: its own microbatches of weighted items (loss ``½(w - y)²`` per
item, times the item's weight), the shared parameter ``w`` and the learning rate ``eta``. The
three requests forms of ``/api/gradient`` all become jobs (see :mod:`app.confirm.convert`).
"""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Reduction = Literal["ddp_default", "compensated", "comm_hook"]
REDUCTIONS: tuple[Reduction, ...] = ("ddp_default", "compensated", "comm_hook")
MAX_WORLD_SIZE = 8


class Microbatch(BaseModel):
    """Targets of one microbatch and one weight per target (a weight 0 masks the item)."""

    model_config = ConfigDict(frozen=True)

    targets: list[float]
    weights: list[float]

    @property
    def count(self) -> float:
        """The microbatch's count ``n = Σ weights``."""
        return math.fsum(self.weights)


class Job(BaseModel):
    """One optimizer update on ``P = len(ranks)`` ranks; ``ranks[r]`` lists rank r's microbatches.

    Without accumulation every rank holds exactly one microbatch. With accumulation the first
    ``M_r - 1`` backward passes run under ``DistributedDataParallel.no_sync()``.
    """

    model_config = ConfigDict(frozen=True)

    ranks: list[list[Microbatch]] = Field(min_length=1, max_length=MAX_WORLD_SIZE)
    eta: float
    w: float
    form: Literal["means", "items", "accumulation"] = Field(
        description="The request form it came from: part of the cache key."
    )

    @property
    def accumulation(self) -> bool:
        return self.form == "accumulation"

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def rank_count(self, rank: int) -> float:
        """``nᵣ``: the sum of rank r's item weights over the whole update window."""
        return math.fsum(batch.count for batch in self.ranks[rank])

    def key(self) -> str:
        """A canonical text of the job, the key of the result cache: every field (the items,
        η, w, the form) is in it, so a request that differs in any of them is run anew."""
        return self.model_dump_json()


class ReductionReport(BaseModel):
    """One rank's outcome of one run: its synchronized gradient and its parameter after SGD."""

    grad: float
    w_new: float


class Reference(BaseModel):
    """The single-process, unpartitioned objective: its gradient and one SGD step."""

    grad: float = Field(description="Gradient of Σ weight·½(w - y)² / N over every item.")
    w_new: float = Field(description="w - η·grad.")


class RankReport(BaseModel):
    """What one rank sends back: its three runs, and (rank 0 only) the reference."""

    rank: int
    count: float
    total: float
    runs: dict[Reduction, ReductionReport]
    reference: Reference | None = None


class Run(BaseModel):
    """One way of computing the loss, as every replica saw it after DDP's all-reduce and SGD."""

    grad: list[float] = Field(description="param.grad on each rank after backward, by rank.")
    w_new: list[float] = Field(description="The parameter on each rank after the SGD step.")


class DistributedResult(BaseModel):
    """The real run: three DDP runs on every rank and the single-process reference."""

    backend: Literal["gloo"] = "gloo"
    world_size: int
    torch_version: str
    counts: list[float] = Field(description="nᵣ per rank (sum of item weights over the window).")
    total: float = Field(description="N: all_reduce (sum) of the local counts.")
    ddp_default: Run
    compensated: Run
    comm_hook: Run
    reference: Reference


class Outcome(BaseModel):
    """A finished job as the API reports it."""

    result: DistributedResult
    elapsed_ms: float
    attempts: int
    cached: bool = False


def assemble(job: Job, reports: list[RankReport], torch_version: str) -> DistributedResult:
    """Put the rank reports (any order, one per rank) into one result."""
    by_rank = sorted(reports, key=lambda report: report.rank)
    if [report.rank for report in by_rank] != list(range(job.world_size)):
        raise ValueError(f"expected one report per rank 0…{job.world_size - 1}")
    reference = by_rank[0].reference
    if reference is None:
        raise ValueError("rank 0 did not report the reference")

    def run(reduction: Reduction) -> Run:
        return Run(
            grad=[report.runs[reduction].grad for report in by_rank],
            w_new=[report.runs[reduction].w_new for report in by_rank],
        )

    return DistributedResult(
        world_size=job.world_size,
        torch_version=torch_version,
        counts=[report.count for report in by_rank],
        total=by_rank[0].total,
        ddp_default=run("ddp_default"),
        compensated=run("compensated"),
        comm_hook=run("comm_hook"),
        reference=reference,
    )
