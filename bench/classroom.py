"""A class presses "confirm" at once: concurrent confirmations against the image's two workers.

The server is started as the image starts it (scripts/docker-entrypoint, two uvicorn workers
sharing one confirmation pool, in a private runtime folder). Each round sends N (default 20)
POST /api/confirm at the same time, every body distinct so none comes from the cache. Every answer
must be 200, or 429 with Retry-After; the torch processes below the server are sampled from /proc
throughout and must never exceed the pool's world size. The floor, in the same run: N concurrent
GET /api/confirm/status (the same workers, no DDP job).

    python -m bench.classroom [--students 20] [--rounds 3]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench._classroom import (
    TorchSampler,
    confirm_body,
    post_all_at_once,
    start_like_the_image,
    wait_pool_ready,
)
from bench._http import TLS
from bench._servers import stop

RESULTS = Path(__file__).resolve().parent / "results"


def status_all_at_once(url: str, students: int) -> float:
    """Wall seconds for ``students`` concurrent GET /api/confirm/status."""
    with ThreadPoolExecutor(max_workers=students) as pool:
        started = time.monotonic()
        answers = list(
            pool.map(
                lambda _: httpx.get(f"{url}/api/confirm/status", timeout=60, verify=TLS),
                range(students),
            )
        )
        elapsed = time.monotonic() - started
    assert {answer.status_code for answer in answers} == {200}
    return elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.classroom", description="Class bench.")
    parser.add_argument("--students", type=int, default=20, help="confirmations sent at once")
    parser.add_argument("--rounds", type=int, default=3, help="how many times")
    args = parser.parse_args(argv)
    rounds = []
    problems = []
    with tempfile.TemporaryDirectory() as folder:
        server = start_like_the_image(Path(folder))
        try:
            bound = wait_pool_ready(server.url)
            print(f"{args.students} confirmations at once, 2 web workers, pool of {bound} ranks")
            print(
                f"{'round':>5}{'200':>5}{'429':>5}{'wall s':>8}{'floor s':>9}{'x':>7}"
                f"{'job ms p50':>12}{'max torch':>11}"
            )
            for number in range(1, args.rounds + 1):
                floor_s = status_all_at_once(server.url, args.students)
                bodies = [confirm_body(number * 1000 + n) for n in range(args.students)]
                with TorchSampler(server.process.pid) as sampler:
                    started = time.monotonic()
                    answers = post_all_at_once(server.url, bodies)
                    wall_s = time.monotonic() - started
                statuses = Counter(answer.status_code for answer in answers)
                jobs = [a.json()["elapsed_ms"] for a in answers if a.status_code == 200]
                busy = [a for a in answers if a.status_code == 429]
                if set(statuses) - {200, 429}:
                    problems.append(f"round {number}: statuses {dict(statuses)}")
                if any(int(a.headers.get("Retry-After", "0")) < 1 for a in busy):
                    problems.append(f"round {number}: a 429 without Retry-After")
                if max(sampler.counts) > bound:
                    problems.append(f"round {number}: {max(sampler.counts)} torch processes")
                rounds.append(
                    {
                        "statuses": dict(statuses),
                        "wall_s": wall_s,
                        "floor_s": floor_s,
                        "job_ms_median": statistics.median(jobs) if jobs else None,
                        "max_torch": max(sampler.counts),
                        "samples": len(sampler.counts),
                    }
                )
                print(
                    f"{number:>5}{statuses[200]:>5}{statuses[429]:>5}{wall_s:>8.2f}"
                    f"{floor_s:>9.2f}{wall_s / floor_s:>7.1f}"
                    f"{statistics.median(jobs) if jobs else float('nan'):>12.1f}"
                    f"{max(sampler.counts):>11d}",
                    flush=True,
                )
        finally:
            stop(server)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "classroom.json").write_text(
        json.dumps({"bound": bound, "rounds": rounds}, indent=2)
    )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
