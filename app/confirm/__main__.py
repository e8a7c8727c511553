"""CLI: the same real DDP job from a terminal, as a local launcher or as one rank under torchrun.

    python -m app.confirm --counts 2,6 --means 1,3 --eta 0.1 --w 10     # starts P local ranks
    python -m app.confirm body.json                                      # any /api/gradient body
    echo '{"targets": [[9, 9], [7, 7]], "eta": 0.1, "w": 10}' | python -m app.confirm -
    torchrun --nproc-per-node 2 -m app.confirm --counts 2,6 --means 1,3 --eta 0.1 --w 10

Without ``RANK``/``WORLD_SIZE`` in the environment it is the launcher: it reads and validates the
input once, then starts P local processes of itself with those variables set (gloo on
127.0.0.1). With them (torchrun, or the launcher's children) it is one rank: it joins the group
through ``MASTER_ADDR``/``MASTER_PORT``, so the same command runs across machines. Only rank 0
prints the JSON result (the ``/api/confirm`` answer). Exit status: 0 when every replica agrees
and every run matches the engine, 1 when a comparison fails, 2 for bad input or a failed run.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.confirm.convert import job_from_request
from app.confirm.jobs import Job, Outcome, RankReport, assemble
from app.engine import EngineError
from app.lab.compute import compute
from app.lab.state import GradientRequest


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
            " compare with the NumPy engine. Input: a JSON body of POST /api/gradient, or flags."
        ),
    )
    cli.add_argument("input", nargs="?", help="JSON file with the request body, or - for stdin")
    cli.add_argument("--counts", help="valid-item count per rank, e.g. 2,6")
    cli.add_argument("--means", help="mean local gradient per rank, e.g. 1,3")
    cli.add_argument("--targets", help="targets per rank: ranks by ';', items by ',' (9,9;7,7)")
    cli.add_argument("--weights", help="per-item weights, nested like --targets")
    cli.add_argument("--eta", type=float, help="learning rate η")
    cli.add_argument("--w", type=float, help="the shared parameter w")
    cli.add_argument("--timeout", type=float, default=60.0, help="process group timeout, s")
    cli.add_argument("--body", help=argparse.SUPPRESS)  # the launcher's children get the body
    return cli


def read_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.body is not None:
        body: dict[str, Any] = json.loads(args.body)
        return body
    if args.input is not None:
        text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
        body = json.loads(text)
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(job: Job, body: str, timeout: float) -> int:
    """Start P local ranks of this module with the torchrun variables set; wait for them all."""
    port = free_port()
    processes = []
    for rank in range(job.world_size):
        env = {
            **os.environ,
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(job.world_size),
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "OMP_NUM_THREADS": "1",
        }
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        command = [sys.executable, "-m", "app.confirm", "--body", body, "--timeout", str(timeout)]
        processes.append(subprocess.Popen(command, env=env))
    codes = []
    try:
        for process in processes:
            codes.append(process.wait())
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return max(codes)


def run_rank(job: Job, notes: list[str], timeout: float) -> int:
    """One rank: join through env:// (torchrun's variables), run the job, rank 0 reports."""
    from datetime import timedelta

    import torch.distributed as dist

    from app.confirm import worker
    from app.confirm.check import confirm_response

    started = time.perf_counter()
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        if job.world_size != world:
            if rank == 0:
                fail(f"the input has {job.world_size} ranks but WORLD_SIZE is {world}")
            return 2
        replicas = worker.make_replicas(dist.group.WORLD)
        report = worker.run_rank(job, rank, replicas)
        gathered: list[Any] = [None] * world if rank == 0 else []
        dist.gather_object(report.model_dump(), gathered if rank == 0 else None, dst=0)
        if rank != 0:
            return 0
        reports = [RankReport.model_validate(item) for item in gathered]
        outcome = Outcome(
            result=assemble(job, reports, worker.TORCH_VERSION),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            attempts=1,
        )
        response = confirm_response(job, outcome, notes)
        print(response.model_dump_json(indent=2))
        return 0 if response.replicas_agree and response.engine_agrees else 1
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
    return launch(job, request.model_dump_json(exclude_none=True), args.timeout)


if __name__ == "__main__":
    sys.exit(main())
