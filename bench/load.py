"""Load: the lesson page and the lab fragment under wrk, as ratios to a bare FastAPI floor.

For 1 and 2 uvicorn workers, the real app and the floor (bench/floor.py: the same bytes from a
bare endpoint, same uvicorn settings) are started side by side; every target is loaded with wrk
on the floor and then on the app. Any non-2xx answer or socket error fails the run.

    python -m bench.load                     # 30 s per run, as in bench/README.md
    python -m bench.load --seconds 5         # a quick look
"""

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from bench._servers import Server, serve
from bench._wrk import WrkResult, run_wrk, wrk_available

RESULTS = Path(__file__).resolve().parent / "results"
LAB_QUERY = "counts=2,6&means=1,3&eta=0.1&w=10"
HX = {"HX-Request": "true"}

# Issue 3's target for the lab fragment at 32 connections.
GOAL_RPS_RATIO = 0.8
GOAL_P99_RATIO = 1.5


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    headers: dict[str, str]
    connections: int


TARGETS = (
    Target("lesson page", "/", {}, 64),
    Target("lab fragment", f"/lab?{LAB_QUERY}", HX, 64),
    Target("lab fragment", f"/lab?{LAB_QUERY}", HX, 32),
)


@dataclass(frozen=True)
class Row:
    target: str
    workers: int
    connections: int
    floor: WrkResult
    app: WrkResult

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


def measure(workers: int, seconds: float) -> list[Row]:
    rows = []
    with (
        tempfile.TemporaryDirectory() as folder,
        serve("app.main:app", workers=workers, ready_path="/healthz") as app,
    ):
        index_file = capture_floor_bodies(app, Path(folder))
        floor_env = {"ATLAS_BENCH_FLOOR": str(index_file)}
        ready = TARGETS[0].path.split("?", 1)[0]
        with serve("bench.floor:app", workers=workers, ready_path=ready, env=floor_env) as floor:
            for target in TARGETS:
                results = []
                for server in (floor, app):
                    url = server.url + target.path
                    # A short warm-up so both sides have imported and cached what they need.
                    run_wrk(url, connections=target.connections, seconds=2, headers=target.headers)
                    results.append(
                        run_wrk(
                            url,
                            connections=target.connections,
                            seconds=seconds,
                            headers=target.headers,
                        )
                    )
                rows.append(Row(target.name, workers, target.connections, *results))
                print(format_row(rows[-1]), flush=True)
    return rows


HEADER = (
    f"{'target':<14}{'wk':>3}{'conn':>5}{'floor r/s':>11}{'app r/s':>9}{'r/s x':>7}"
    f"{'p50 ms':>8}{'x':>6}{'p99 ms':>8}{'x':>6}{'errors':>8}"
)


def format_row(row: Row) -> str:
    return (
        f"{row.target:<14}{row.workers:>3}{row.connections:>5}{row.floor.rps:>11.0f}"
        f"{row.app.rps:>9.0f}{row.rps_ratio:>7.2f}{row.app.p50_ms:>8.1f}{row.p50_ratio:>6.2f}"
        f"{row.app.p99_ms:>8.1f}{row.p99_ratio:>6.2f}{row.app.errors:>8d}"
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
    for row in rows:
        if row.is_goal:
            verdict = "meets" if row.meets_goal else "MISSES"
            print(
                f"lab fragment, 32 connections, {row.workers} worker(s): {verdict} the goal"
                f" (throughput {row.rps_ratio:.2f}x ≥ {GOAL_RPS_RATIO}x,"
                f" p99 {row.p99_ratio:.2f}x ≤ {GOAL_P99_RATIO}x)"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load.json").write_text(
        json.dumps([asdict(row) | {"rps_ratio": row.rps_ratio} for row in rows], indent=2)
    )
    failed = [row for row in rows if row.app.errors or row.floor.errors]
    for row in failed:
        print(f"ERRORS: {row.target} with {row.workers} worker(s): {row.app} / {row.floor}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
