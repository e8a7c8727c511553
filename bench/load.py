"""Load: the lesson page and the lab under wrk, as ratios to a bare FastAPI floor.

For 1 and 2 uvicorn workers, the real app and the floor (bench/_floor.py: the same bytes from a
bare endpoint, same uvicorn settings) are started side by side. Each target is loaded in paired
runs that alternate floor and app (floor, app, floor, app, …), and the row gives the median of
the pairs' ratios, so a neighbour's burst on this shared machine lands on one pair, not on one
side. Any non-2xx answer or socket error fails the run. The lab is loaded at 32 connections two
ways: one state over and over, and a NEW random state on every request (2 to 8 ranks, every
count, mean, η and w drawn afresh), which is what a class dragging sliders sends: the results
pane, as the form asks on every input event. The pictures (asked for a few times a second
while the inputs change) and the details below the pane (asked for once the inputs pause) are
loaded the same way, each as a row of its own. The app runs as in a classroom: its
confirmation pool started and idle (in a private runtime folder).

Besides throughput and latency, each run reports the server's CPU time per request (uvicorn and
its workers, from /proc): on a machine shared with other work the wall-clock figures move with
the neighbours, the CPU cost of a request much less. It also reports how much the neighbours
took: the share of the machine's CPU time the hypervisor stole during the run (/proc/stat).

    python -m bench.load                           # as in bench/README.md
    python -m bench.load --seconds 5 --pairs 1     # a quick look
    python -m bench.load --app-dir /tmp/old        # the app of another checkout (same venv)
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

import httpx

from bench._http import TLS
from bench._procs import cpu_seconds, machine_ticks, stolen_share, web_processes
from bench._servers import APP, ROOT, Server, serve
from bench._wrk import SLIDER_VALUE_LUA, WrkResult, run_wrk, wrk_available

RESULTS = Path(__file__).resolve().parent / "results"
LAB_QUERY = "counts=2,6&means=1,3&eta=0.1&w=10"
# Every request asks for gzip as a browser does (Chromium's header), so the app pays for the
# compression a class gets; the floor answers the app's compressed bytes as they were sent.
BROWSER = {"Accept-Encoding": "gzip, deflate, br, zstd"}
# What the lab's form sends on each input event (the results pane) and what its details block
# sends once the inputs pause.
PANE = {**BROWSER, "HX-Request": "true", "HX-Target": "lab-results"}
DETAILS = {**BROWSER, "HX-Request": "true", "HX-Target": "lab-details"}
# What lab.js asks for a few times a second while the inputs change: the pictures.
CHARTS = {**BROWSER, "HX-Request": "true", "HX-Target": "lab-charts"}

# Issue 8's goal for a new lab state on every request, at 32 connections.
GOAL_RPS_RATIO = 0.4
GOAL_P99_RATIO = 2.5

# Every request a new lab state: P from 2 to 8, counts 0 to 64 (rank 0 at least 1, so N > 0),
# means -10 to 10 in tenths, η 0.01 to 2, w -20 to 20 in halves: the sliders' ranges and steps,
# each written as the browser writes a slider's value ("18", not "18.0").
# Seeded from the clock, so the warm-up and each run draw different states. The floor answers its
# fixed bytes whatever the query.
NEW_STATE_LUA = (
    SLIDER_VALUE_LUA
    + """
math.randomseed(os.time())

function request()
  local p = math.random(2, 8)
  local counts, means = {}, {}
  for r = 1, p do
    counts[r] = tostring(math.random(r == 1 and 1 or 0, 64))
    means[r] = slider_value(math.random(-100, 100) / 10, 1)
  end
  local path = string.format("/lab?counts=%s&means=%s&eta=%s&w=%s",
    table.concat(counts, ","), table.concat(means, ","),
    slider_value(math.random(1, 200) / 100, 2), slider_value(math.random(-40, 40) / 2, 1))
  return wrk.format(nil, path)
end
"""
)


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    headers: dict[str, str]
    connections: int
    request_lua: str = ""
    # Other answers its script asks for on the same route (headers, path): the floor answers
    # each with the app's bytes for them (the lab's pictures and details, by HX-Target).
    also: tuple[tuple[dict[str, str], str], ...] = ()


TARGETS = (
    Target("lesson page", "/", BROWSER, 64),
    Target("lab, one state", f"/lab?{LAB_QUERY}", PANE, 32),
    Target("lab, new state", f"/lab?{LAB_QUERY}", PANE, 32, NEW_STATE_LUA),
    Target("pictures, new", f"/lab?{LAB_QUERY}", CHARTS, 32, NEW_STATE_LUA),
    Target("details, new", f"/lab?{LAB_QUERY}", DETAILS, 32, NEW_STATE_LUA),
)
GOAL_TARGET = "lab, new state"


@dataclass(frozen=True)
class Measured:
    """One wrk run, the server's CPU time per request during it, and the share of the machine's
    CPU time the hypervisor gave to other guests meanwhile (0 on a machine of its own)."""

    wrk: WrkResult
    cpu_ms_per_request: float
    stolen_share: float


@dataclass(frozen=True)
class Pair:
    """A floor run and the app run right after it."""

    floor: Measured
    app: Measured

    @property
    def rps_ratio(self) -> float:
        return self.app.wrk.rps / self.floor.wrk.rps

    @property
    def p50_ratio(self) -> float:
        return self.app.wrk.p50_ms / self.floor.wrk.p50_ms

    @property
    def p99_ratio(self) -> float:
        return self.app.wrk.p99_ms / self.floor.wrk.p99_ms

    @property
    def cpu_ratio(self) -> float:
        return self.app.cpu_ms_per_request / self.floor.cpu_ms_per_request


@dataclass(frozen=True)
class Row:
    """One target: its paired runs; every figure is the median over the pairs."""

    target: str
    workers: int
    connections: int
    pairs: tuple[Pair, ...]

    def median(self, figure: str) -> float:
        return statistics.median(getattr(pair, figure) for pair in self.pairs)

    def app_median(self, figure: str) -> float:
        return statistics.median(getattr(pair.app.wrk, figure) for pair in self.pairs)

    @property
    def errors(self) -> int:
        return sum(pair.app.wrk.errors + pair.floor.wrk.errors for pair in self.pairs)

    def stolen(self, side: str) -> float:
        """The median share of the machine's CPU time stolen during one side's runs."""
        return statistics.median(getattr(pair, side).stolen_share for pair in self.pairs)

    @property
    def meets_goal(self) -> bool:
        return (
            self.median("rps_ratio") >= GOAL_RPS_RATIO
            and self.median("p99_ratio") <= GOAL_P99_RATIO
        )

    def summary(self) -> dict[str, float | int | str]:
        return {
            "target": self.target,
            "workers": self.workers,
            "connections": self.connections,
            "pairs": len(self.pairs),
            "floor_rps": statistics.median(pair.floor.wrk.rps for pair in self.pairs),
            "app_rps": self.app_median("rps"),
            "rps_ratio": self.median("rps_ratio"),
            "app_p50_ms": self.app_median("p50_ms"),
            "p50_ratio": self.median("p50_ratio"),
            "app_p99_ms": self.app_median("p99_ms"),
            "p99_ratio": self.median("p99_ratio"),
            "app_cpu_ms": statistics.median(pair.app.cpu_ms_per_request for pair in self.pairs),
            "cpu_ratio": self.median("cpu_ratio"),
            "floor_stolen_pct": 100 * self.stolen("floor"),
            "app_stolen_pct": 100 * self.stolen("app"),
            "errors": self.errors,
        }


def _answer(url: str, headers: dict[str, str]) -> dict[str, bytes | str]:
    """The app's answer as sent: its bytes (compressed, if it compressed them) and headers."""
    with httpx.stream("GET", url, headers=headers, timeout=10, verify=TLS) as response:
        response.raise_for_status()
        return {
            "body": b"".join(response.iter_raw()),
            "media_type": response.headers["content-type"],
            "encoding": response.headers.get("content-encoding", ""),
        }


def capture_floor_bodies(app: Server, folder: Path, targets: Sequence[Target]) -> Path:
    """Fetch what the app answers on each target and write the floor's index of those bytes:
    per route, per HX-Target, the body as sent and its media type and content encoding."""
    index: dict[str, dict[str, dict[str, str]]] = {}
    for number, target in enumerate(targets):
        route = target.path.split("?", 1)[0]
        answers = ((target.headers, target.path), *target.also)
        for variant, (headers, path) in enumerate(answers):
            answer = _answer(app.url + path, {**target.headers, **headers})
            body_file = f"body{number}-{variant}.bin"
            (folder / body_file).write_bytes(cast(bytes, answer.pop("body")))
            entry = {"file": body_file, **cast(dict[str, str], answer)}
            index.setdefault(route, {})[headers.get("HX-Target", "")] = entry
    index_file = folder / "index.json"
    index_file.write_text(json.dumps(index))
    return index_file


def wait_pool_settled(app: Server, timeout: float = 120.0) -> None:
    """Let the pool finish starting (torch import in its ranks) so it does not share the run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = httpx.get(f"{app.url}/api/confirm/status", timeout=10, verify=TLS).json()["state"]
        if state != "starting":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the confirmation pool was still starting after {timeout} s")


STARTUP: dict[str, float] = {}


def measure(
    workers: int,
    seconds: float,
    pairs: int,
    app_dir: Path = ROOT,
    targets: Sequence[Target] = TARGETS,
) -> list[Row]:
    """Start the app (from ``app_dir``) and its floor, and load each target in paired runs."""
    with tempfile.TemporaryDirectory() as folder:
        pool_env = {"ATLAS_CONFIRM_RUNTIME_DIR": str(Path(folder) / "pool")}
        with serve(APP, workers=workers, ready_path="/healthz", env=pool_env, cwd=app_dir) as app:
            STARTUP[f"app, {workers} worker(s)"] = app.startup_s
            wait_pool_settled(app)
            index = capture_floor_bodies(app, Path(folder), targets)
            floor_env = {"ATLAS_BENCH_FLOOR": str(index)}
            ready = targets[0].path.split("?", 1)[0]
            with serve(
                "bench._floor:app", workers=workers, ready_path=ready, env=floor_env
            ) as floor:
                STARTUP[f"floor, {workers} worker(s)"] = floor.startup_s
                return [
                    load_target(target, workers, seconds, pairs, floor, app) for target in targets
                ]


def run_once(server: Server, target: Target, seconds: float) -> Measured:
    load = {
        "connections": target.connections,
        "headers": target.headers,
        "request_lua": target.request_lua,
    }
    processes = web_processes(server.process.pid)
    cpu_before, machine_before = cpu_seconds(processes), machine_ticks()
    result = run_wrk(server.url + target.path, seconds=seconds, **load)
    cpu_ms = (cpu_seconds(processes) - cpu_before) * 1000 / max(1, result.requests)
    return Measured(result, cpu_ms, stolen_share(machine_before, machine_ticks()))


def load_target(
    target: Target, workers: int, seconds: float, pairs: int, floor: Server, app: Server
) -> Row:
    # A short warm-up (as long as a run, up to 2 s) so both sides have imported and compiled
    # what they need.
    for server in (floor, app):
        run_once(server, target, min(2, seconds))
    runs = tuple(
        Pair(run_once(floor, target, seconds), run_once(app, target, seconds)) for _ in range(pairs)
    )
    row = Row(target.name, workers, target.connections, runs)
    print(format_row(row), flush=True)
    return row


HEADER = (
    f"{'target':<16}{'wk':>3}{'conn':>5}{'floor r/s':>11}{'app r/s':>9}{'r/s x':>7}"
    f"{'p50 ms':>8}{'x':>6}{'p99 ms':>8}{'x':>6}{'cpu ms/req':>11}{'x':>6}{'errors':>8}"
    f"{'stolen %, floor/app':>20}"
)


def format_row(row: Row) -> str:
    s = row.summary()
    stolen = f"{s['floor_stolen_pct']:.1f}/{s['app_stolen_pct']:.1f}"
    return (
        f"{row.target:<16}{row.workers:>3}{row.connections:>5}{s['floor_rps']:>11.0f}"
        f"{s['app_rps']:>9.0f}{s['rps_ratio']:>7.2f}{s['app_p50_ms']:>8.1f}{s['p50_ratio']:>6.2f}"
        f"{s['app_p99_ms']:>8.1f}{s['p99_ratio']:>6.2f}{s['app_cpu_ms']:>11.2f}"
        f"{s['cpu_ratio']:>6.2f}{row.errors:>8d}"
        f"{stolen:>20}"
    )


def paired_runs_parser(prog: str, description: str, seconds: float) -> argparse.ArgumentParser:
    """The options every paired-run benchmark takes: run length, pairs, which checkout."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--seconds", type=float, default=seconds, help="length of each wrk run")
    parser.add_argument("--pairs", type=int, default=3, help="floor/app run pairs per target")
    parser.add_argument(
        "--app-dir", type=Path, default=ROOT, help="checkout whose app.main:create_app is served"
    )
    return parser


def ready_to_run(args: argparse.Namespace) -> bool:
    """False (with the reason) when wrk is missing; else print what runs and the table's head."""
    if not wrk_available():
        print("wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return False
    print(f"app from {args.app_dir}; medians of {args.pairs} pair(s) of {args.seconds:g} s runs")
    print(HEADER, flush=True)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = paired_runs_parser("python -m bench.load", "Load benchmark.", 10.0)
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2], help="uvicorn worker counts to run"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[target.name for target in TARGETS],
        metavar="TARGET",
        help=f"run only these rows, by name (e.g. '{GOAL_TARGET}': more pairs of the goal's row"
        " in the same time)",
    )
    args = parser.parse_args(argv)
    if not ready_to_run(args):
        return 2
    targets = [target for target in TARGETS if not args.only or target.name in args.only]
    rows = [
        row
        for workers in args.workers
        for row in measure(workers, args.seconds, args.pairs, args.app_dir, targets)
    ]
    print()
    for name, elapsed in STARTUP.items():
        print(f"launch to first 200: {name}: {elapsed:.2f} s")
    for row in rows:
        if row.target == GOAL_TARGET:
            verdict = "meets" if row.meets_goal else "MISSES"
            print(
                f"{GOAL_TARGET}, 32 connections, {row.workers} worker(s): {verdict} the goal"
                f" (throughput {row.median('rps_ratio'):.2f}x ≥ {GOAL_RPS_RATIO}x,"
                f" p99 {row.median('p99_ratio'):.2f}x ≤ {GOAL_P99_RATIO}x)"
            )
    RESULTS.mkdir(exist_ok=True)
    report = {
        "app_dir": str(args.app_dir),
        "rows": [row.summary() | {"runs": [asdict(pair) for pair in row.pairs]} for row in rows],
        "startup_s": STARTUP,
    }
    (RESULTS / "load.json").write_text(json.dumps(report, indent=2))
    failed = [row for row in rows if row.errors]
    for row in failed:
        print(f"ERRORS: {row.target} with {row.workers} worker(s): {row.errors}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
