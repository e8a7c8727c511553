"""Tail: is a new lab state's p99 the app's CPU cost, or something else the app does?

bench.load's "lab, new state" row misses issue 8's p99 goal (≤ 2.5x the floor's) by more than
its throughput goal. Under a saturating load (32 connections) a p99 is long for one of two
reasons: every request costs more CPU, so each waits behind more work; or the app stalls now
and then (a garbage collection, a lock, a slow path for some states). This benchmark tells them
apart. Four servers with the same uvicorn settings get the same traffic (bench.load's: a new
random state per request, the results pane, 32 connections), in rotating runs:

- **floor**: ``bench._floor`` answering the app's pane bytes, as in bench.load;
- **app**: the real app, its confirmation pool started and idle, as in bench.load;
- **burn**: the floor, spinning on each request for the app's extra CPU (the app's CPU per
  request less the floor's, from a calibration run of each): the app's cost as pure CPU and
  nothing else of the app;
- **goal**: the floor, spinning 1.5x its own CPU per request: a server costing 2.5x the floor
  per request, which is what an app exactly at the throughput goal (0.4x) costs, with no stall.

Every ratio is to the floor run of the same rotation; a row gives the medians over rotations.
Reading it: app ≈ burn says the app's tail is its CPU cost, and only cheaper requests shorten
it; app well above burn says the app stalls on its own. The goal row is what this host gives a
stall-free server at exactly 0.4x: a p99 ratio above 2.5x there says the two halves of the goal
cannot both be met on this host by making requests cheaper.

    python -m bench.tail [--seconds 10] [--pairs 3] [--workers 1] [--tries 3]
"""

import json
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from bench._servers import APP, ROOT, Server, serve
from bench._wrk import wrk_available
from bench.load import (
    GOAL_P99_RATIO,
    GOAL_RPS_RATIO,
    GOAL_TARGET,
    RESULTS,
    TARGETS,
    Measured,
    capture_floor_bodies,
    paired_runs_parser,
    run_once,
    wait_pool_settled,
)

TARGET = next(target for target in TARGETS if target.name == GOAL_TARGET)
WAYS = ("floor", "app", "burn", "goal")
# The goal server's extra CPU per request, in floor requests: 1 + 1.5 = 2.5x the floor's cost,
# the cost at which a server without stalls runs at 0.4x the floor's throughput.
GOAL_EXTRA = 1 / GOAL_RPS_RATIO - 1
# Tries to bring each spinning floor within 3 % of its aimed cost; the last is kept whatever it
# measured (calibrated_floor).
TRIES = 3


@dataclass(frozen=True)
class Way:
    """One server's runs, each beside the floor run of its rotation."""

    name: str
    spin_us: float
    runs: tuple[Measured, ...]
    floors: tuple[Measured, ...]

    def ratio(self, figure: str) -> float:
        """Median over rotations of this way's figure ÷ the floor's, on the same rotation."""
        return statistics.median(
            _figure(run, figure) / _figure(floor, figure)
            for run, floor in zip(self.runs, self.floors, strict=True)
        )

    def median(self, figure: str) -> float:
        return statistics.median(_figure(run, figure) for run in self.runs)


def _figure(measured: Measured, figure: str) -> float:
    if figure == "cpu_ms":
        return measured.cpu_ms_per_request
    return float(getattr(measured.wrk, figure))


def spin_for(floor_cpu_ms: float, app_cpu_ms: float) -> dict[str, float]:
    """µs of CPU each spinning floor adds per request: the app's extra cost (burn), and the
    cost that puts a stall-free server at exactly the throughput goal (goal)."""
    return {
        "burn": max(0.0, app_cpu_ms - floor_cpu_ms) * 1000,
        "goal": GOAL_EXTRA * floor_cpu_ms * 1000,
    }


@contextmanager
def spinning_floor(index: Path, spin_us: float, workers: int) -> Iterator[Server]:
    env = {"ATLAS_BENCH_FLOOR": str(index), "ATLAS_BENCH_FLOOR_BURN_US": f"{spin_us:.1f}"}
    with serve("bench._floor:app", workers=workers, ready_path="/lab", env=env) as server:
        yield server


def calibrated_floor(
    stack: ExitStack,
    index: Path,
    floor: Server,
    workers: int,
    floor_ms: float,
    spin_us: float,
    seconds: float,
    tries: int = TRIES,
) -> tuple[Server, float]:
    """A spinning floor that costs (floor_ms + spin_us) / floor_ms times the floor per request,
    within 3 %, kept open on ``stack``, and the spin that does it. A spin's measured cost
    drifts from its sum (the clock reads, the floor's own cost moving between runs), so each
    try runs the floor and the spinning floor for ``seconds`` each and corrects the spin by the
    error against that floor run; the last of ``tries`` is kept whatever it measured."""
    ratio = 1 + spin_us / 1000 / floor_ms
    for attempt in range(tries):
        server_stack = ExitStack()
        server = server_stack.enter_context(spinning_floor(index, spin_us, workers))
        run_once(server, TARGET, 1)  # its first answers build what later ones reuse
        floor_now = run_once(floor, TARGET, seconds).cpu_ms_per_request
        error_us = (run_once(server, TARGET, seconds).cpu_ms_per_request - ratio * floor_now) * 1000
        if abs(error_us) <= 0.03 * ratio * floor_now * 1000 or attempt == tries - 1:
            stack.push(server_stack)
            return server, spin_us
        server_stack.close()
        spin_us = max(0.0, spin_us - error_us)
    raise AssertionError("unreachable: tries is at least 1")


def measure(
    workers: int, seconds: float, pairs: int, app_dir: Path = ROOT, tries: int = TRIES
) -> list[Way]:
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        pool_env = {"ATLAS_CONFIRM_RUNTIME_DIR": str(Path(folder) / "pool")}
        app = stack.enter_context(
            serve(APP, workers=workers, ready_path="/healthz", env=pool_env, cwd=app_dir)
        )
        wait_pool_settled(app)
        index = capture_floor_bodies(app, Path(folder), [TARGET])
        floor = stack.enter_context(spinning_floor(index, 0, workers))
        # Warm both (as long as a run, up to 2 s), then calibrate: what a request costs each.
        for server in (floor, app):
            run_once(server, TARGET, min(2, seconds))
        cost = {
            name: run_once(server, TARGET, seconds)
            for name, server in (("floor", floor), ("app", app))
        }
        floor_ms, app_ms = cost["floor"].cpu_ms_per_request, cost["app"].cpu_ms_per_request
        spins = spin_for(floor_ms, app_ms)
        servers = {"floor": floor, "app": app}
        for name, spin_us in spins.items():
            servers[name], spins[name] = calibrated_floor(
                stack, index, floor, workers, floor_ms, spin_us, max(0.5, seconds / 2), tries
            )
        rotations = [
            {name: run_once(server, TARGET, seconds) for name, server in servers.items()}
            for _ in range(pairs)
        ]
    floors = tuple(rotation["floor"] for rotation in rotations)
    return [
        Way(name, spins.get(name, 0.0), tuple(rotation[name] for rotation in rotations), floors)
        for name in WAYS
    ]


HEADER = (
    f"{'way':<7}{'spin µs':>8}{'r/s':>8}{'x':>6}{'p50 ms':>8}{'x':>6}{'p99 ms':>8}{'x':>6}"
    f"{'cpu ms/req':>11}{'x':>6}{'errors':>7}"
)


def format_way(way: Way) -> str:
    errors = sum(run.wrk.errors for run in way.runs)
    return (
        f"{way.name:<7}{way.spin_us:>8.0f}{way.median('rps'):>8.0f}{way.ratio('rps'):>6.2f}"
        f"{way.median('p50_ms'):>8.1f}{way.ratio('p50_ms'):>6.2f}"
        f"{way.median('p99_ms'):>8.1f}{way.ratio('p99_ms'):>6.2f}"
        f"{way.median('cpu_ms'):>11.2f}{way.ratio('cpu_ms'):>6.2f}{errors:>7d}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = paired_runs_parser("python -m bench.tail", __doc__.splitlines()[0], 10.0)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of each server")
    parser.add_argument(
        "--tries",
        type=int,
        default=TRIES,
        help=f"tries to bring each spinning floor within 3 %% of its aimed cost (default {TRIES})",
    )
    args = parser.parse_args(argv)
    if args.tries < 1:
        parser.error(f"--tries must be at least 1, not {args.tries}")
    if not wrk_available():
        print("wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    print(
        f"app from {args.app_dir}; {TARGET.name}, {TARGET.connections} connections,"
        f" {args.workers} worker(s); medians of {args.pairs} rotation(s) of {args.seconds:g} s runs"
    )
    measured = measure(args.workers, args.seconds, args.pairs, args.app_dir, args.tries)
    ways = {way.name: way for way in measured}
    print(HEADER)
    for way in ways.values():
        print(format_way(way))
    app, burn, goal = ways["app"], ways["burn"], ways["goal"]
    app_to_burn = statistics.median(
        a.wrk.p99_ms / b.wrk.p99_ms for a, b in zip(app.runs, burn.runs, strict=True)
    )
    print(
        f"app's p99 ÷ burn's (its CPU cost spun, measured {burn.ratio('cpu_ms'):.2f}x the floor's"
        f" against the app's {app.ratio('cpu_ms'):.2f}x): {app_to_burn:.2f}"
    )
    print(
        f"a stall-free server at {goal.ratio('cpu_ms'):.2f}x the floor's cost (aimed at"
        f" {1 / GOAL_RPS_RATIO:g}x): throughput {goal.ratio('rps'):.2f}x"
        f" (goal ≥ {GOAL_RPS_RATIO}x), p99 {goal.ratio('p99_ms'):.2f}x (goal ≤ {GOAL_P99_RATIO}x)"
    )
    RESULTS.mkdir(exist_ok=True)
    report = {
        "app_dir": str(args.app_dir),
        "workers": args.workers,
        "ways": {
            name: {
                "spin_us": way.spin_us,
                "ratios": {f: way.ratio(f) for f in ("rps", "p50_ms", "p99_ms", "cpu_ms")},
                "runs": [asdict(run) for run in way.runs],
            }
            for name, way in ways.items()
        },
    }
    (RESULTS / "tail.json").write_text(json.dumps(report, indent=2))
    errors = sum(run.wrk.errors for way in ways.values() for run in way.runs)
    if errors:
        print(f"ERRORS: {errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
