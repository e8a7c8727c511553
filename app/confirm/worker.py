"""The torch side: one rank's three DDP runs, the single-process reference, and the warm pool.

Each rank builds ``nn.Linear(1, 1, bias=False)`` in float64 holding w (an input of 1 makes its
output w), wraps it in real ``DistributedDataParallel`` over a gloo process group, and runs
backward three ways on the loss ``Σ weight·½(w - y)²`` of its own items:

- ``ddp_default``: the local mean (``sum / nᵣ``, or ``sum / 1`` on an empty rank so it still
  joins the all-reduce); with accumulation the mean of the microbatch means, as a plain training
  loop computes it. DDP then averages over P ranks: the rank mean.
- ``compensated``: the same local mean scaled by ``P·nᵣ/N`` (N from an all_reduce of the counts).
- ``comm_hook``: the local sum, with a DDP communication hook that all-reduces the sum and
  divides by N instead of P.

Then SGD with η on every replica. Run as ``python -m app.confirm.worker`` by the server's pool
(:mod:`app.confirm.pool`), which talks to every rank over its own socket in length-prefixed JSON
frames (:mod:`app.confirm.frames`).
"""

import argparse
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch._dynamo  # DDP's constructor imports it (~2 s); the pool preloads it once
import torch.distributed as dist
from torch import nn
from torch._C._distributed_c10d import (
    FileStore,
    GradBucket,
    PrefixStore,
    ProcessGroup,
    ProcessGroupGloo,
    Store,
)
from torch.nn.parallel import DistributedDataParallel

from app.confirm.frames import receive, send
from app.confirm.jobs import (
    REDUCTIONS,
    Job,
    Microbatch,
    RankReport,
    Reduction,
    ReductionReport,
    Reference,
)

TORCH_VERSION = str(torch.__version__)
DTYPE = torch.float64


@dataclass
class HookState:
    """The comm hook's state: its process group and this update's global count N."""

    group: Any
    total: float = 1.0


def sum_then_divide_by_total(
    state: HookState, bucket: GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: all-reduce the gradient sums and divide by N (DDP's default divides by P)."""
    future = dist.all_reduce(bucket.buffer(), group=state.group, async_op=True).get_future()

    def divide(done: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
        return done.value()[0].div_(state.total)

    divided: torch.futures.Future[torch.Tensor] = future.then(divide)
    return divided


def scalar_model(w: float) -> nn.Linear:
    model = nn.Linear(1, 1, bias=False, dtype=DTYPE)
    with torch.no_grad():
        model.weight.fill_(w)
    return model


@dataclass
class Replicas:
    """One rank's DDP modules for one process group: plain, and with the divide-by-N hook."""

    group: Any
    plain: DistributedDataParallel
    hooked: DistributedDataParallel
    hook_state: HookState


def make_replicas(group: Any) -> Replicas:
    plain = DistributedDataParallel(scalar_model(0.0), process_group=group)
    hooked = DistributedDataParallel(scalar_model(0.0), process_group=group)
    state = HookState(group)
    hooked.register_comm_hook(state, sum_then_divide_by_total)
    return Replicas(group=group, plain=plain, hooked=hooked, hook_state=state)


def weighted_loss_sum(model: Callable[[torch.Tensor], torch.Tensor], batch: Microbatch) -> Any:
    """``Σ weight·½(w - y)²`` over the microbatch, through the model (0 with a graph if empty)."""
    targets = torch.tensor(batch.targets, dtype=DTYPE)
    weights = torch.tensor(batch.weights, dtype=DTYPE)
    prediction = model(torch.ones(len(batch.targets), 1, dtype=DTYPE)).reshape(-1)
    return (weights * 0.5 * (prediction - targets) ** 2).sum()


def guarded(count: float) -> float:
    """The divisor of a local mean: the count, or 1 when it is 0 (an empty rank's sum is 0)."""
    return count if count > 0 else 1.0


def run_reduction(
    reduction: Reduction, job: Job, rank: int, replicas: Replicas, total: float
) -> ReductionReport:
    """One rank's backward passes and SGD step for one way of scaling the loss."""
    ddp = replicas.hooked if reduction == "comm_hook" else replicas.plain
    replicas.hook_state.total = total
    parameter = ddp.module.weight
    with torch.no_grad():
        parameter.fill_(job.w)
    parameter.grad = None
    batches = job.ranks[rank]
    world = job.world_size
    count = job.rank_count(rank)
    for index, batch in enumerate(batches):
        last = index == len(batches) - 1
        # Only the last backward of the window all-reduces; the others accumulate locally.
        with nullcontext() if last else ddp.no_sync():
            loss_sum = weighted_loss_sum(ddp, batch)
            if reduction == "ddp_default":
                loss = loss_sum / guarded(batch.count) / len(batches)
            elif reduction == "compensated":
                loss = loss_sum / guarded(count) * (world * count / total)
            else:
                loss = loss_sum
            loss.backward()
    assert parameter.grad is not None
    grad = float(parameter.grad.item())
    torch.optim.SGD([parameter], lr=job.eta).step()
    return ReductionReport(grad=grad, w_new=float(parameter.item()))


def reference(job: Job) -> Reference:
    """The unpartitioned objective in one process: ``Σ weight·½(w - y)² / N`` over every item."""
    model = scalar_model(job.w)
    total = sum(batch.count for batches in job.ranks for batch in batches)
    loss = sum(weighted_loss_sum(model, batch) for batches in job.ranks for batch in batches)
    (loss / total).backward()
    assert model.weight.grad is not None
    grad = float(model.weight.grad.item())
    torch.optim.SGD(model.parameters(), lr=job.eta).step()
    return Reference(grad=grad, w_new=float(model.weight.item()))


def run_rank(job: Job, rank: int, replicas: Replicas) -> RankReport:
    """This rank's part of a job: N by all_reduce, the three runs, and (rank 0) the reference."""
    counts = torch.zeros(job.world_size, dtype=DTYPE)
    counts[rank] = job.rank_count(rank)
    dist.all_reduce(counts, group=replicas.group)
    total = float(counts.sum().item())
    runs = {
        reduction: run_reduction(reduction, job, rank, replicas, total) for reduction in REDUCTIONS
    }
    return RankReport(
        rank=rank,
        count=job.rank_count(rank),
        total=total,
        runs=runs,
        reference=reference(job) if rank == 0 else None,
    )


def warm_job(world_size: int) -> Job:
    """A small job for each group: the first DDP construction and backward are the slow ones."""
    batch = Microbatch(targets=[9.0, 7.0], weights=[1.0, 1.0])
    return Job(ranks=[[batch, batch]] * world_size, eta=0.1, w=10.0, form="accumulation")


# ---- the warm pool -------------------------------------------------------------------------


def die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when ``parent`` (the pool's owner for rank 0, rank 0
    for the others) dies, and exit now if it already has: a rank stopped or stuck in a
    collective could not notice by itself, and would outlive its pool."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def process_groups(
    rank: int, world: int, store: Store, timeout: timedelta, connect_timeout: timedelta
) -> dict[int, ProcessGroup]:
    """A gloo process group for each P this rank is in (ranks 0 … P-1, P from rank + 1 to
    ``world``), every one on this rank's one gloo device; keyed by P, largest first (the order
    :func:`serve_rank` warms them in).

    Gloo gives each device a network thread that wakes every 10 ms, busy or not; a device per
    group (what ``init_process_group`` and ``new_group`` make) would be up to nine such threads
    in each of eight ranks, waking an idle pool's cores for nothing. Each group meets its
    members under its own prefix of the store, so building them takes no collective over the
    world. A group waits up to ``connect_timeout`` for its members to arrive (a rank may start
    late on a busy machine), then each collective up to ``timeout``.
    """
    device = ProcessGroupGloo.create_default_device()
    groups = {}
    for size in range(world, rank, -1):
        # Gloo's own options (a device list); torch's stubs know only the backends' common ones.
        options = ProcessGroupGloo._Options()  # type: ignore[attr-defined]
        options._devices = [device]
        options._timeout = connect_timeout
        prefix = PrefixStore(f"group-{size}/", store)
        gloo = ProcessGroupGloo(prefix, rank, size, options)
        gloo._set_default_timeout(timeout)
        group = ProcessGroup(prefix, rank, size)
        group._set_default_backend(ProcessGroup.BackendType.GLOO)
        group._register_backend(torch.device("cpu"), ProcessGroup.BackendType.GLOO, gloo)
        groups[size] = group
    return groups


def serve_rank(rank: int, fd: int, args: argparse.Namespace) -> None:
    """One pool rank: meet the others, build a group per P, warm each, then answer job frames."""
    stream = socket.socket(fileno=fd).makefile("rwb")
    torch.set_num_threads(1)
    start = timedelta(seconds=args.init_timeout)
    store = FileStore(args.store, args.world)
    store.set_timeout(start)
    groups = process_groups(rank, args.world, store, timedelta(seconds=args.group_timeout), start)
    replicas: dict[int, Replicas] = {}
    # Largest group first: ranks of each group then arrive at its warm-up together.
    for size, group in groups.items():
        replicas[size] = make_replicas(group)
        run_rank(warm_job(size), rank, replicas[size])
    send(stream, {"event": "ready", "torch": TORCH_VERSION})
    while (message := receive(stream)) is not None:
        job = Job.model_validate(message)
        try:
            report = run_rank(job, rank, replicas[job.world_size])
        except Exception as exc:  # a failed collective leaves the group unusable: report, exit
            send(stream, {"event": "error", "rank": rank, "message": str(exc)})
            return
        send(stream, {"event": "result", "report": report.model_dump()})


def serve(args: argparse.Namespace) -> None:
    """Rank 0 forks ranks 1…W-1 (sharing the already imported torch), then serves as rank 0."""
    fds: list[int] = args.fds
    children = []
    parent = os.getpid()
    for rank in range(1, args.world):
        pid = os.fork()
        if pid == 0:
            die_with(parent)
            for other, fd in enumerate(fds):
                if other != rank:
                    os.close(fd)
            code = 0
            try:
                serve_rank(rank, fds[rank], args)
            except BaseException:  # the pool notices the closed socket
                code = 1
            os._exit(code)
        children.append(pid)
    for fd in fds[1:]:
        os.close(fd)
    # Let the kernel reap dead ranks: the server kills them by pid and needs no zombies left.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    stream = os.fdopen(os.dup(fds[0]), "wb")
    send(stream, {"event": "spawned", "pids": [parent, *children]})
    stream.close()
    serve_rank(0, fds[0], args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="A warm pool of gloo ranks (started by the server)."
    )
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--store", required=True, help="FileStore path for the rendezvous")
    parser.add_argument(
        "--fds", type=lambda text: [int(fd) for fd in text.split(",")], required=True
    )
    parser.add_argument("--group-timeout", type=float, required=True)
    parser.add_argument("--init-timeout", type=float, required=True)
    parser.add_argument("--owner", type=int, required=True, help="the pool owner's pid")
    args = parser.parse_args(argv)
    if len(args.fds) != args.world:
        parser.error("--fds needs one socket per rank")
    die_with(args.owner)
    serve(args)


if __name__ == "__main__":
    main(sys.argv[1:])
