"""The confirmation under ``python -m app --workers 2``: the three loads that broke a pool owned by
whichever web worker took the lock, counted by answer.

- ``large``: 20 ``counts`` 5000,5000 jobs (a 50-byte request, a job of about 200 KB), one at a
  time on fresh connections, so both web workers forward some.
- ``pollers``: 300 pollers at once, each asking ``GET /api/confirm/status`` 10 times.
- ``flood``: one address (127.0.0.1) keeps 20 distinct 8-rank jobs of 3,200 items in flight (each
  thread sends its next as soon as one is answered; under 64 KiB, so the old lines carried them)
  while another (127.0.0.2) confirms 8 times, one after another; the other's answers and their
  round trips.

Serves the checkout given by ``--app-dir`` (default this one), so the same script measures the
code before and after: ``.venv/bin/python -m bench.owner --app-dir /path/to/older/checkout``.
Every server gets a private runtime folder and no cache.
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench._http import TLS
from bench._servers import ROOT, free_port


def large(salt: int) -> dict[str, Any]:
    return {"counts": [5000, 5000], "means": [1, salt], "eta": 0.1, "w": 1}


def heavy(salt: int) -> dict[str, Any]:
    """Eight ranks of 400 items: slow enough to keep a queue full, under 64 KiB as a job."""
    return {"counts": [400] * 8, "means": [0] * 8, "eta": 0.1, "w": salt}


def start(app_dir: Path, runtime: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "ATLAS_CONFIRM_RUNTIME_DIR": runtime, "ATLAS_CONFIRM_CACHE_SIZE": "0"}
    command = [sys.executable, "-m", "app", "--workers", "2", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--no-access-log", "--log-level", "warning"], cwd=app_dir, env=env
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            # Both workers ready: the other one may still be waiting for its owner.
            states = [
                httpx.get(f"{url}/api/confirm/status", timeout=5, verify=TLS).json()["state"]
                for _ in range(10)
            ]
            if states == ["ready"] * 10:
                return process, url
        except (httpx.TransportError, ValueError):
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("the pool was not ready within 120 s")


def codes(answers: list[int]) -> dict[str, int]:
    return {str(code): count for code, count in sorted(Counter(answers).items())}


def large_jobs(url: str) -> dict[str, int]:
    answers = []
    for salt in range(20):
        try:
            answers.append(
                httpx.post(
                    f"{url}/api/confirm", json=large(salt), timeout=60, verify=TLS
                ).status_code
            )
        except httpx.TransportError:
            answers.append(0)
    return codes(answers)


def pollers(url: str) -> dict[str, int]:
    async def poll() -> list[int]:
        limits = httpx.Limits(max_connections=300)
        async with httpx.AsyncClient(limits=limits, timeout=60, verify=TLS) as client:

            async def one() -> list[int]:
                answers = []
                for _ in range(10):
                    try:
                        answers.append((await client.get(f"{url}/api/confirm/status")).status_code)
                    except httpx.TransportError:
                        answers.append(0)
                return answers

            return [
                code
                for answers in await asyncio.gather(*(one() for _ in range(300)))
                for code in answers
            ]

    return codes(asyncio.run(poll()))


def client(address: str) -> httpx.Client:
    return httpx.Client(
        transport=httpx.HTTPTransport(local_address=address, verify=TLS), timeout=120
    )


def flood(url: str) -> dict[str, Any]:
    flooded: list[int] = []
    done = threading.Event()

    def keep_sending(thread: int) -> None:
        with client("127.0.0.1") as flooder:
            for salt in range(thread * 10_000, (thread + 1) * 10_000):
                if done.is_set():
                    return
                answer = flooder.post(f"{url}/api/confirm", json=heavy(salt))
                flooded.append(answer.status_code)

    threads = [threading.Thread(target=keep_sending, args=(thread,)) for thread in range(20)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    answers, trips = [], []
    with client("127.0.0.2") as other:
        for salt in range(8):
            started = time.perf_counter()
            answers.append(other.post(f"{url}/api/confirm", json=heavy(500_000 + salt)).status_code)
            trips.append((time.perf_counter() - started) * 1000)
    done.set()
    for thread in threads:
        thread.join()
    return {
        "other_client": codes(answers),
        "other_round_trip_median_ms": round(statistics.median(trips), 1),
        "flooding_client": codes(flooded),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="checkout to serve")
    args = parser.parse_args()
    runtime = tempfile.mkdtemp(prefix="atlas-bench-owner-")
    process, url = start(args.app_dir.resolve(), runtime)
    try:
        results = {
            "app_dir": str(args.app_dir),
            "large": large_jobs(url),
            "pollers": pollers(url),
            "flood": flood(url),
        }
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(runtime, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
