"""CLI: the same real DDP job from a terminal, on local ranks or as one rank under torchrun.

    python -m app.confirm --counts 2,6 --means 1,3 --eta 0.1 --w 10     # starts P local ranks
    python -m app.confirm body.json                                      # any /api/gradient body
    echo '{"targets": [[9, 9], [7, 7]], "eta": 0.1, "w": 10}' | python -m app.confirm -
    torchrun --nproc-per-node 2 -m app.confirm --counts 2,6 --means 1,3 --eta 0.1 --w 10

Without ``RANK``/``WORLD_SIZE`` in the environment it reads and validates the input, then runs
it on P local ranks, the server's own pool (:mod:`app.confirm.pool`, gloo on loopback). With
them (torchrun) it is one rank: it joins the group through ``MASTER_ADDR``/``MASTER_PORT``, so
the same command runs across machines. Only rank 0 prints the JSON result (the
``/api/confirm`` answer). Exit status: 0 when every replica agrees and every run matches the
engine, 1 when a comparison fails, 2 for bad input or a failed run.
"""

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.confirm.check import confirm_response
from app.confirm.convert import job_from_request
from app.confirm.jobs import DistributedResult, Job, Outcome, RankReport, assemble
from app.confirm.pool import Pool, RefusalError, WorkerFaultError
from app.engine import EngineError
from app.lab.compute import compute
from app.lab.state import GradientRequest
from app.settings import Settings


def numbers(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()] if text.strip() else []


def per_rank(text: str) -> list[list[float]]:
    """``9,9;7,7,7`` as ``[[9, 9], [7, 7, 7]]``: ranks split by ``;``, items by ``,``."""
    return [numbers(rank) for rank in text.split(";")]


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="atlas-confirm",
        description=(
            "Run one update on real DistributedDataParallel (gloo, CPU, float64) three ways and"
            " compare with the engine. Input: a JSON body of POST /api/gradient, or flags."
        ),
    )
    cli.add_argument("input", nargs="?", help="JSON file with the request body, or - for stdin")
    cli.add_argument("--counts", help="valid-item count per rank, e.g. 2,6")
    cli.add_argument("--means", help="mean local gradient per rank, e.g. 1,3")
    cli.add_argument("--targets", help="targets per rank: ranks by ';', items by ',' (9,9;7,7)")
    cli.add_argument("--weights", help="per-item weights, nested like --targets")
    cli.add_argument("--eta", type=float, help="learning rate η")
    cli.add_argument("--w", type=float, help="the shared parameter w")
    cli.add_argument("--timeout", type=seconds, default=60.0, help="process group timeout, s")
    return cli


def seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse names the option when this refuses)."""
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(text)
    return value


def read_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.input is not None:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
        body: dict[str, Any] = json.loads(text)
        return body
    body = {name: value for name in ("eta", "w") if (value := getattr(args, name)) is not None}
    if args.counts is not None:
        body |= {"counts": numbers(args.counts), "means": numbers(args.means or "")}
    if args.targets is not None:
        body["targets"] = per_rank(args.targets)
        if args.weights is not None:
            body["weights"] = per_rank(args.weights)
    return body


def field_message(error: Any) -> str:
    """A validation error as ``field: message``, so the field is named."""
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"])
    return message if not where or message.startswith(where) else f"{where}: {message}"


def fail(message: str) -> int:
    print(f"atlas-confirm: {message}", file=sys.stderr)
    return 2


async def on_local_ranks(job: Job, timeout: float) -> DistributedResult:
    """The job on P local ranks: the server's pool (one process imports torch, forks the rest)."""
    with tempfile.TemporaryDirectory(prefix="atlas-confirm-") as folder:
        settings = Settings(
            confirm_world_size=job.world_size,
            confirm_runtime_dir=Path(folder),
            confirm_group_timeout_s=timeout,
            confirm_job_timeout_s=timeout,
        )
        pool = Pool(settings)
        pool.start()
        try:
            await pool.wait_ready(settings.confirm_start_timeout_s)
            return await pool.run(job)
        finally:
            await pool.stop()


def report(job: Job, notes: list[str], result: DistributedResult, started: float) -> int:
    """Print the ``/api/confirm`` answer; 0 when every run agrees, else 1."""
    elapsed_ms = (time.perf_counter() - started) * 1000
    outcome = Outcome(result=result, elapsed_ms=elapsed_ms, attempts=1)
    response = confirm_response(job, outcome, notes)
    print(response.model_dump_json(indent=2))
    return 0 if response.replicas_agree and response.engine_agrees else 1


def run_rank(job: Job, notes: list[str], timeout: float) -> int:
    """One rank: join through env:// (torchrun's variables), run the job, rank 0 reports."""
    from datetime import timedelta

    import torch.distributed as dist

    from app.confirm import worker

    started = time.perf_counter()
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        if job.world_size != world:
            if rank == 0:
                fail(f"the input has {job.world_size} ranks but WORLD_SIZE is {world}")
            return 2
        replicas = worker.make_replicas(dist.group.WORLD)
        rank_report = worker.run_rank(job, rank, replicas)
        gathered: list[Any] = [None] * world if rank == 0 else []
        dist.gather_object(rank_report.model_dump(), gathered if rank == 0 else None, dst=0)
        if rank != 0:
            return 0
        reports = [RankReport.model_validate(item) for item in gathered]
        return report(job, notes, assemble(job, reports, worker.TORCH_VERSION), started)
    finally:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        request = GradientRequest.model_validate(read_body(args))
    except (OSError, json.JSONDecodeError) as exc:
        return fail(f"cannot read the input: {exc}")
    except ValidationError as exc:
        return fail("; ".join(field_message(error) for error in exc.errors()))
    try:
        compute(request)  # the engine's checks, before any process starts
        job, notes = job_from_request(request)
    except EngineError as exc:
        return fail(exc.message)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return run_rank(job, notes, args.timeout)
    started = time.perf_counter()
    try:
        result = asyncio.run(on_local_ranks(job, args.timeout))
    except (RefusalError, WorkerFaultError) as exc:
        return fail(f"the run failed: {exc}")
    except ValidationError as exc:  # an ATLAS_* setting of the environment the pool reads
        named = (f"ATLAS_{str(error['loc'][0]).upper()}: {error['msg']}" for error in exc.errors())
        return fail("; ".join(named))
    return report(job, notes, result, started)


if __name__ == "__main__":
    sys.exit(main())
