"""Soak: minutes of mixed classroom traffic, hostile clients included, with the server's memory
sampled: ``python -m bench.soak [--seconds 300] [--warmup 60]``.

The server is ``python -m app`` (one worker, its own confirmation pool). Traffic, from threads:

- students: the lesson page, new lab states (fragment and whole page, each state new), quiz
  answers (htmx and plain), the ring panel, /healthz, /docs and its assets;
- confirmations: ``POST /api/confirm`` and ``POST /lab/confirm`` with new states, one at a time;
- bad inputs: subnormal and out-of-range numbers, too many ranks, a URL over the limit (414), a
  body over the limit (413), a cross-site POST (403), malformed JSON;
- slow clients: connections that send half a request head and wait, and bodies that stall.

The RSS of the server process is sampled every 5 s. Passes (exit 0) when no answer was a 5xx and
the RSS grew by at most 20 MB between the end of the warm-up and the end of the run.
"""

import argparse
import contextlib
import os
import random
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._classroom import wait_pool_ready
from bench._http import TLS
from bench._procs import rss_bytes
from bench._servers import Server, free_port, launch, stop

MAX_GROWTH = 20 * 2**20
SAMPLE_EVERY_S = 5.0


@dataclass
class Tally:
    """Answers by status and kind; transport errors by kind (slow clients expect them)."""

    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, status: int) -> None:
        with self.lock:
            self.statuses[(kind, status)] += 1

    def fail(self, kind: str) -> None:
        with self.lock:
            self.errors[kind] += 1

    def server_errors(self) -> int:
        return sum(n for (_, status), n in self.statuses.items() if status >= 500)

    def total(self) -> int:
        return sum(self.statuses.values())


def lab_state(rng: random.Random) -> str:
    ranks = rng.randint(1, 8)
    counts = ",".join(str(rng.randint(0, 64)) for _ in range(ranks))
    means = ",".join(f"{rng.uniform(-10, 10):.6g}" for _ in range(ranks))
    return f"counts={counts}&means={means}&eta={rng.uniform(0.01, 1):.4g}&w={rng.randint(-5, 20)}"


def items_state(rng: random.Random) -> str:
    ranks = [
        ",".join(f"{rng.uniform(0, 10):.4g}" for _ in range(rng.randint(0, 6)))
        for _ in range(rng.randint(1, 6))
    ]
    return f"targets={';'.join(ranks) or '1'}&eta=0.1&w=10&steps={rng.randint(1, 200)}"


BAD_QUERIES = (
    "counts=5e-309,0,0,0,0,0&means=1,2,3,4,5,6&eta=0.1&w=10",
    "ring_mb=1e-320&ring_us=0",
    "counts=1e308&means=1&eta=1e308&w=1e308",
    "counts=" + ",".join(["1"] * 5000),
    "targets=inf;nan&eta=-1&w=x",
    "counts=2,6&means=1,3&eta=0&w=10&P=99",
)


def student(base: str, rng: random.Random, tally: Tally, stop_at: float) -> None:
    hx = {"HX-Request": "true"}
    with httpx.Client(base_url=base, timeout=30, verify=TLS) as client:
        while time.monotonic() < stop_at:
            choice = rng.random()
            try:
                if choice < 0.25:
                    kind, response = "lab", client.get(f"/lab?{lab_state(rng)}", headers=hx)
                elif choice < 0.35:
                    query = items_state(rng)
                    kind, response = "lab items", client.get(f"/lab?{query}", headers=hx)
                elif choice < 0.45:
                    kind, response = "page", client.get(f"/?{lab_state(rng)}")
                elif choice < 0.55:
                    kind = "quiz"
                    data = {
                        "question": f"section-{rng.randint(1, 14)}",
                        "choice": str(rng.randint(1, 4)),
                    }
                    response = client.post(
                        "/quiz", data=data, headers=hx if rng.random() < 0.7 else {}
                    )
                elif choice < 0.62:
                    query = f"ring_mb={rng.uniform(1, 1000):.4g}&ring_p={rng.randint(2, 64)}"
                    kind, response = "ring", client.get(f"/lab?{query}", headers=hx)
                elif choice < 0.70:
                    kind, response = "bad query", client.get(f"/?{rng.choice(BAD_QUERIES)}")
                elif choice < 0.74:
                    kind, response = "long url", client.get("/?pad=" + "x" * 20_000)
                elif choice < 0.77:
                    kind = "big body"
                    response = client.post(
                        "/api/gradient",
                        content=b"[" + b"1," * 600_000 + b"1]",
                        headers={"content-type": "application/json"},
                    )
                elif choice < 0.80:
                    kind = "cross-site"
                    response = client.post(
                        "/quiz",
                        data={"question": "section-1", "choice": "1"},
                        headers={"Sec-Fetch-Site": "cross-site"},
                    )
                elif choice < 0.84:
                    kind = "bad json"
                    response = client.post(
                        "/api/gradient",
                        content=b'{"counts": [1,',
                        headers={"content-type": "application/json"},
                    )
                elif choice < 0.90:
                    kind, response = "healthz", client.get("/healthz")
                elif choice < 0.95:
                    kind, response = (
                        "api",
                        client.post(
                            "/api/gradient",
                            json={
                                "counts": [rng.randint(0, 9) for _ in range(3)],
                                "means": [rng.uniform(-1, 1) for _ in range(3)],
                                "eta": 0.1,
                                "w": 1,
                            },
                        ),
                    )
                else:
                    kind, response = "docs", client.get("/docs")
                tally.add(kind, response.status_code)
            except httpx.HTTPError:
                tally.fail("student")
                client.close()
                client = httpx.Client(base_url=base, timeout=30, verify=TLS)


def confirmer(base: str, rng: random.Random, tally: Tally, stop_at: float) -> None:
    wait_pool_ready(base)  # a pool still starting answers 503, by design
    with httpx.Client(base_url=base, timeout=60, verify=TLS) as client:
        while time.monotonic() < stop_at:
            counts = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
            means = [round(rng.uniform(-5, 5), 3) for _ in counts]
            try:
                if rng.random() < 0.5:
                    body = {"counts": counts, "means": means, "eta": 0.1, "w": 10}
                    tally.add("confirm api", client.post("/api/confirm", json=body).status_code)
                else:
                    form = {
                        "counts": ",".join(map(str, counts)),
                        "means": ",".join(map(str, means)),
                        "eta": "0.1",
                        "w": "10",
                    }
                    response = client.post(
                        "/lab/confirm", data=form, headers={"HX-Request": "true"}
                    )
                    tally.add("confirm lab", response.status_code)
            except httpx.HTTPError:
                tally.fail("confirm")
            time.sleep(rng.uniform(0.5, 2.0))


def slow_clients(address: tuple[str, int], tally: Tally, stop_at: float) -> None:
    """Waves of 100 half-sent heads and a few stalled bodies, each held until the server acts."""
    while time.monotonic() < stop_at:
        held = []
        for number in range(100):
            with contextlib.suppress(OSError):
                sock = socket.create_connection(address, timeout=5)
                if number % 10 == 0:
                    sock.sendall(
                        b"POST /api/gradient HTTP/1.1\r\nHost: lab\r\n"
                        b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
                    )
                else:
                    sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
                held.append(sock)
        for sock in held:
            sock.settimeout(max(1.0, stop_at - time.monotonic() + 15))
            try:
                answer = sock.recv(64)
                tally.add("slow client", int(answer[9:12]) if answer[:5] == b"HTTP/" else 0)
            except (OSError, ValueError):
                tally.fail("slow client")
            finally:
                sock.close()


def run(seconds: float, warmup: float, students: int) -> int:
    runtime = Path(tempfile.mkdtemp(prefix="atlas-soak-"))
    port = free_port()
    env = {
        **os.environ,
        "ATLAS_CONFIRM_RUNTIME_DIR": str(runtime),
        "ATLAS_HEADER_TIMEOUT_S": "5",
        "ATLAS_BODY_TIMEOUT_S": "5",
    }
    command = [
        sys.executable,
        "-m",
        "app",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    server: Server = launch(command, port=port, ready_path="/healthz", env=env)
    tally = Tally()
    started = time.monotonic()
    stop_at = started + seconds
    workers: list[threading.Thread] = []
    rng = random.Random(11)

    def spawn(target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        workers.append(thread)

    try:
        for _ in range(students):
            spawn(student, server.url, random.Random(rng.random()), tally, stop_at)
        spawn(confirmer, server.url, random.Random(rng.random()), tally, stop_at)
        spawn(slow_clients, ("127.0.0.1", port), tally, stop_at)
        samples: list[tuple[float, int]] = []
        while time.monotonic() < stop_at:
            samples.append((time.monotonic() - started, rss_bytes(server.process.pid)))
            time.sleep(SAMPLE_EVERY_S)
        samples.append((time.monotonic() - started, rss_bytes(server.process.pid)))
        for thread in workers:
            thread.join(timeout=60)
    finally:
        stop(server)
    return report(samples, tally, warmup)


def report(samples: list[tuple[float, int]], tally: Tally, warmup: float) -> int:
    mib = 2**20
    after_warmup = next(rss for at, rss in samples if at >= warmup)
    end = samples[-1][1]
    peak = max(rss for _, rss in samples)
    growth = end - after_warmup
    print(f"{tally.total()} answers in {samples[-1][0]:.0f} s, RSS every {SAMPLE_EVERY_S:g} s")
    print("\n| kind | status | answers |\n| --- | --: | --: |")
    for (kind, status), count in sorted(tally.statuses.items()):
        print(f"| {kind} | {status} | {count} |")
    print(f"\ntransport errors: {dict(tally.errors) or 'none'}")
    print("\n| at s | RSS MiB |\n| --: | --: |")
    for at, rss in [*samples[:: max(1, len(samples) // 12)], samples[-1]]:
        print(f"| {at:.0f} | {rss / mib:.1f} |")
    print(
        f"\nRSS after warm-up ({warmup:g} s) {after_warmup / mib:.1f} MiB, at the end"
        f" {end / mib:.1f} MiB, growth {growth / mib:+.1f} MiB (limit {MAX_GROWTH / mib:.0f}),"
        f" peak {peak / mib:.1f} MiB; 5xx answers: {tally.server_errors()}"
    )
    ok = tally.server_errors() == 0 and growth <= MAX_GROWTH
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seconds", type=float, default=300.0, help="length of the run (300)")
    parser.add_argument("--warmup", type=float, default=60.0, help="warm-up excluded (60)")
    parser.add_argument("--students", type=int, default=6, help="student threads (6)")
    args = parser.parse_args()
    return run(args.seconds, args.warmup, args.students)


if __name__ == "__main__":
    sys.exit(main())
