"""The torch.distributed confirmation: one cold job against the warm pool, and the pool's memory.

Cold: ``torchrun --nproc-per-node 2 -m app.confirm`` (fresh interpreters, each importing torch,
joining a gloo group, building DDP, running and exiting: what one runs without a warm pool), the
lesson example on P = 2. (``python -m app.confirm`` alone starts the server's own pool, so it is
no baseline for the pool's first request.) Warm: ``POST /api/confirm``
against a real uvicorn whose pool is up (cache off, every body distinct), on P = 2 and P = 8; the
floor is ``GET /healthz`` on the same server in the same run. Also: launch to first ``/healthz``,
launch to pool ready, the first confirmation sent right at launch, and the pool's RSS and PSS (from
``/proc/<pid>/smaps_rollup``; PSS splits pages shared between the forked ranks fairly).

Goals from the issue: warm median ≤ 50 ms; first request after start-up no slower than one cold
job; /healthz within 2 s of launch; never more than 8 torch processes.

Run: ``.venv/bin/python -m bench.confirm [--cold 3] [--warm 100]``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._http import TLS
from bench._procs import descendants, holds_torch
from bench._servers import APP, ROOT, free_port, launch, stop, uvicorn_command

LESSON_FLAGS = ["--counts", "2,6", "--means", "1,3", "--eta", "0.1", "--w", "10"]


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "median_ms": statistics.median(ordered), "p95_ms": p95}


TORCHRUN = str(Path(sys.executable).parent / "torchrun")


def cold_jobs(count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run(
            [TORCHRUN, "--nproc-per-node", "2", "-m", "app.confirm", *LESSON_FLAGS],
            cwd=ROOT,
            env={**os.environ, "GLOO_SOCKET_IFNAME": "lo"},  # one host: gloo on loopback
            check=True,
            capture_output=True,
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


def smaps_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def body(ranks: int, salt: int) -> dict[str, Any]:
    return {
        "counts": [r + 1 for r in range(ranks)],
        "means": [salt % 97] * ranks,
        "eta": 0.1,
        "w": salt,
    }


def warm(url: str, ranks: int, count: int, offset: int) -> tuple[list[float], list[float]]:
    """Round trips and the pool's own time (elapsed_ms), for ``count`` distinct jobs."""
    trips, pool = [], []
    with httpx.Client(base_url=url, timeout=60, verify=TLS) as client:
        for i in range(count):
            started = time.perf_counter()
            response = client.post("/api/confirm", json=body(ranks, offset + i))
            trips.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            pool.append(response.json()["elapsed_ms"])
    return trips, pool


def floor(url: str, count: int) -> list[float]:
    times = []
    with httpx.Client(base_url=url, timeout=10, verify=TLS) as client:
        for _ in range(count):
            started = time.perf_counter()
            client.get("/healthz").raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return times


def warm_server(count: int) -> dict[str, Any]:
    folder = tempfile.TemporaryDirectory(prefix="atlas-confirm-bench-", ignore_cleanup_errors=True)
    with folder as runtime:
        return warm_server_in(runtime, count)


def warm_server_in(runtime: str, count: int) -> dict[str, Any]:
    """The warm figures of a server whose pool runs in ``runtime``."""
    port = free_port()
    env = {**os.environ, "ATLAS_CONFIRM_RUNTIME_DIR": runtime, "ATLAS_CONFIRM_CACHE_SIZE": "0"}
    # Polled every 10 ms: the time to the first /healthz is a figure here, not only a wait.
    server = launch(
        uvicorn_command(APP, port, 1), port=port, ready_path="/healthz", env=env, poll_s=0.01
    )
    process, url, launched = server.process, server.url, time.monotonic() - server.startup_s
    try:
        healthz_s = server.startup_s
        # The first confirmation, sent as soon as the server answers: it waits for the pool.
        started = time.perf_counter()
        httpx.post(
            f"{url}/api/confirm", json=body(2, 10_000), timeout=120, verify=TLS
        ).raise_for_status()
        first_ms = (time.perf_counter() - started) * 1000
        ready_s = time.monotonic() - launched
        results: dict[str, Any] = {
            "healthz_after_launch_s": healthz_s,
            "first_request_ms": first_ms,
        }
        results["pool_ready_after_launch_s"] = ready_s
        results["floor_healthz"] = summary(floor(url, count))
        for ranks in (2, 8):
            trips, pool = warm(url, ranks, count, offset=ranks * 100_000)
            results[f"warm_p{ranks}_round_trip"] = summary(trips)
            results[f"warm_p{ranks}_pool"] = summary(pool)
        workers = [pid for pid in descendants(process.pid) if holds_torch(pid)]
        results["torch_processes"] = len(workers)
        results["server_holds_torch"] = holds_torch(process.pid)
        results["pool_rss_mib"] = sum(smaps_kib(pid, "Rss") for pid in workers) / 1024
        results["pool_pss_mib"] = sum(smaps_kib(pid, "Pss") for pid in workers) / 1024
        results["server_rss_mib"] = smaps_kib(process.pid, "Rss") / 1024
        return results
    finally:
        stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=3, help="cold CLI jobs to time")
    parser.add_argument("--warm", type=int, default=100, help="warm requests per P")
    args = parser.parse_args()
    cold = summary(cold_jobs(args.cold))
    results = {"cold_job": cold, **warm_server(args.warm)}
    p2 = results["warm_p2_round_trip"]["median_ms"]
    results["ratio_cold_over_warm_p2"] = cold["median_ms"] / p2
    results["ratio_warm_p2_over_floor"] = p2 / results["floor_healthz"]["median_ms"]
    results["ratio_first_request_over_cold"] = results["first_request_ms"] / cold["median_ms"]
    print(json.dumps(results, indent=2))
    checks = {
        "warm P=2 median <= 50 ms": p2 <= 50,
        "warm P=8 median <= 50 ms": results["warm_p8_round_trip"]["median_ms"] <= 50,
        "first request no slower than one cold job": results["ratio_first_request_over_cold"] <= 1,
        "/healthz within 2 s of launch": results["healthz_after_launch_s"] <= 2,
        "at most 8 torch processes": results["torch_processes"] <= 8,
        "no torch in the server": not results["server_holds_torch"],
    }
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'MISS'} {name}")


if __name__ == "__main__":
    main()
