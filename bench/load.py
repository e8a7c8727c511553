"""Load: the lesson page and the lab fragment under wrk, as ratios to a bare FastAPI floor.

For 1 and 2 uvicorn workers, the real app and the floor (bench/_floor.py: the same bytes from a
bare endpoint, same uvicorn settings) are started side by side; every target is loaded with wrk
on the floor and then on the app. Any non-2xx answer or socket error fails the run. The lab
fragment is loaded twice at 32 connections: one state over and over (the app answers it from its
cache of rendered fragments) and a new state on every request (each one rendered afresh). The
app runs as in a classroom: its confirmation pool started and idle (in a private runtime folder).

Besides throughput and latency, each run reports the server's CPU time per request (uvicorn and
its workers, from /proc): on a machine shared with other work the wall-clock figures move with
the neighbours, the CPU cost of a request much less.

    python -m bench.load                     # 30 s per run, as in bench/README.md
    python -m bench.load --seconds 5         # a quick look
"""

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from bench._procs import cpu_seconds, web_processes
from bench._servers import Server, serve
from bench._wrk import WrkResult, run_wrk, wrk_available

RESULTS = Path(__file__).resolve().parent / "results"
LAB_QUERY = "counts=2,6&means=1,3&eta=0.1&w=10"
HX = {"HX-Request": "true"}

# Issue 3's target for the lab fragment at 32 connections.
GOAL_RPS_RATIO = 0.8
GOAL_P99_RATIO = 1.5


# Every request a lab state the app has not seen: rank 1's mean drawn from a million values
# (0.000 to 999.999), against a fragment cache of a few thousand answers (32 MiB, 8 KB each), so
# the app renders each answer afresh (a repeat is rarer than 1 in 200). Seeded from the clock, so
# the warm-up and the run draw different states. The floor answers its fixed bytes whatever the
# query.
MISS_LUA = """
math.randomseed(os.time())

function request()
  local mean = math.random(0, 999999) / 1000
  return wrk.format(nil, string.format("/lab?counts=2,6&means=1,%.3f&eta=0.1&w=10", mean))
end
"""


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    headers: dict[str, str]
    connections: int
    request_lua: str = ""


TARGETS = (
    Target("lesson page", "/", {}, 64),
    Target("lab fragment", f"/lab?{LAB_QUERY}", HX, 64),
    Target("lab fragment", f"/lab?{LAB_QUERY}", HX, 32),
    Target("lab, uncached", f"/lab?{LAB_QUERY}", HX, 32, MISS_LUA),
)


@dataclass(frozen=True)
class Measured:
    """One wrk run and the server's CPU time per request during it."""

    wrk: WrkResult
    cpu_ms_per_request: float


@dataclass(frozen=True)
class Row:
    target: str
    workers: int
    connections: int
    floor: WrkResult
    app: WrkResult
    floor_cpu_ms: float
    app_cpu_ms: float

    @property
    def cpu_ratio(self) -> float:
        return self.app_cpu_ms / self.floor_cpu_ms

    @property
    def rps_ratio(self) -> float:
        return self.app.rps / self.floor.rps

    @property
    def p50_ratio(self) -> float:
        return self.app.p50_ms / self.floor.p50_ms

    @property
    def p99_ratio(self) -> float:
        return self.app.p99_ms / self.floor.p99_ms

    @property
    def is_goal(self) -> bool:
        return self.target == "lab fragment" and self.connections == 32

    @property
    def meets_goal(self) -> bool:
        return self.rps_ratio >= GOAL_RPS_RATIO and self.p99_ratio <= GOAL_P99_RATIO


def capture_floor_bodies(app: Server, folder: Path) -> Path:
    """Fetch what the app answers on each target and write the floor's index of those bytes."""
    index = {}
    for number, target in enumerate(TARGETS):
        response = httpx.get(app.url + target.path, headers=target.headers, timeout=10)
        response.raise_for_status()
        body_file = f"body{number}.bin"
        (folder / body_file).write_bytes(response.content)
        route = target.path.split("?", 1)[0]
        index[route] = {"file": body_file, "media_type": response.headers["content-type"]}
    index_file = folder / "index.json"
    index_file.write_text(json.dumps(index))
    return index_file


def wait_pool_settled(app: Server, timeout: float = 120.0) -> None:
    """Let the pool finish starting (torch import in its ranks) so it does not share the run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = httpx.get(f"{app.url}/api/confirm/status", timeout=10).json()["state"]
        if state != "starting":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the confirmation pool was still starting after {timeout} s")


STARTUP: dict[str, float] = {}


def measure(workers: int, seconds: float) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        pool_env = {"ATLAS_CONFIRM_RUNTIME_DIR": str(Path(folder) / "pool")}
        with serve("app.main:app", workers=workers, ready_path="/healthz", env=pool_env) as app:
            STARTUP[f"app, {workers} worker(s)"] = app.startup_s
            wait_pool_settled(app)
            floor_env = {"ATLAS_BENCH_FLOOR": str(capture_floor_bodies(app, Path(folder)))}
            ready = TARGETS[0].path.split("?", 1)[0]
            with serve(
                "bench._floor:app", workers=workers, ready_path=ready, env=floor_env
            ) as floor:
                STARTUP[f"floor, {workers} worker(s)"] = floor.startup_s
                return [load_target(target, workers, seconds, floor, app) for target in TARGETS]


def load_target(target: Target, workers: int, seconds: float, floor: Server, app: Server) -> Row:
    results = []
    for server in (floor, app):
        url = server.url + target.path
        load = {
            "connections": target.connections,
            "headers": target.headers,
            "request_lua": target.request_lua,
        }
        # A short warm-up so both sides have imported and cached what they need.
        run_wrk(url, seconds=2, **load)
        processes = web_processes(server.process.pid)
        cpu_before = cpu_seconds(processes)
        result = run_wrk(url, seconds=seconds, **load)
        cpu_ms = (cpu_seconds(processes) - cpu_before) * 1000 / max(1, result.requests)
        results.append(Measured(result, cpu_ms))
    floor_run, app_run = results
    row = Row(
        target.name,
        workers,
        target.connections,
        floor_run.wrk,
        app_run.wrk,
        floor_run.cpu_ms_per_request,
        app_run.cpu_ms_per_request,
    )
    print(format_row(row), flush=True)
    return row


HEADER = (
    f"{'target':<14}{'wk':>3}{'conn':>5}{'floor r/s':>11}{'app r/s':>9}{'r/s x':>7}"
    f"{'p50 ms':>8}{'x':>6}{'p99 ms':>8}{'x':>6}{'cpu ms/req':>11}{'x':>6}{'errors':>8}"
)


def format_row(row: Row) -> str:
    return (
        f"{row.target:<14}{row.workers:>3}{row.connections:>5}{row.floor.rps:>11.0f}"
        f"{row.app.rps:>9.0f}{row.rps_ratio:>7.2f}{row.app.p50_ms:>8.1f}{row.p50_ratio:>6.2f}"
        f"{row.app.p99_ms:>8.1f}{row.p99_ratio:>6.2f}{row.app_cpu_ms:>11.2f}{row.cpu_ratio:>6.2f}"
        f"{row.app.errors:>8d}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description="Load benchmark.")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each wrk run")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2], help="uvicorn worker counts to run"
    )
    args = parser.parse_args(argv)
    if not wrk_available():
        print("wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    print(HEADER, flush=True)
    rows = [row for workers in args.workers for row in measure(workers, args.seconds)]
    print()
    for name, elapsed in STARTUP.items():
        print(f"launch to first 200: {name}: {elapsed:.2f} s")
    for row in rows:
        if row.is_goal:
            verdict = "meets" if row.meets_goal else "MISSES"
            print(
                f"lab fragment, 32 connections, {row.workers} worker(s): {verdict} the goal"
                f" (throughput {row.rps_ratio:.2f}x ≥ {GOAL_RPS_RATIO}x,"
                f" p99 {row.p99_ratio:.2f}x ≤ {GOAL_P99_RATIO}x)"
            )
    RESULTS.mkdir(exist_ok=True)
    report = {
        "rows": [
            asdict(row) | {"rps_ratio": row.rps_ratio, "cpu_ratio": row.cpu_ratio} for row in rows
        ],
        "startup_s": STARTUP,
    }
    (RESULTS / "load.json").write_text(json.dumps(report, indent=2))
    failed = [row for row in rows if row.app.errors or row.floor.errors]
    for row in failed:
        print(f"ERRORS: {row.target} with {row.workers} worker(s): {row.app} / {row.floor}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
