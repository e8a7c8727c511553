"""A server starting, and a worker replaced: ``python -m app --workers N`` from nothing to both
workers listening, then one worker killed (SIGKILL) until its replacement listens.

For each round: the wall seconds until every worker listens on its own socket, the CPU seconds
its processes used to get there (the supervisor, the fork server, the workers and
multiprocessing's helper: every process below the server), their proportional memory (PSS: a
page shared by the forked workers counted once in all), and the wall and CPU seconds of the
replacement worker. The confirmation is off (no torch pool: its start is ``bench.confirm``'s).

    python -m bench.start [--workers 2] [--rounds 3] [--app-dir OTHER]
"""

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench._procs import LISTEN, cpu_seconds, descendants, pss_bytes, sockets_on, uvicorn_workers
from bench._servers import ROOT, free_port, launch, stop

RESULTS = Path(__file__).resolve().parent / "results"
WAIT_S = 60.0


def listening_sockets(port: int) -> int:
    """How many sockets listen on 127.0.0.1:``port`` (one per worker)."""
    return sum(state == LISTEN for state in sockets_on(port).values())


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {WAIT_S:g} s")
        time.sleep(0.01)


def one_round(workers: int, app_dir: Path) -> dict[str, float]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data, open(os.devnull, "wb") as quiet:
        env = {**os.environ, "ATLAS_CONFIRM_ENABLED": "false", "ATLAS_DATA_DIR": data}
        command = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers)]
        started = time.monotonic()
        server = launch(
            [*command, "--log-level", "warning"],
            port=port,
            ready_path="/healthz",
            env=env,
            cwd=app_dir,
            log=quiet,
        )
        try:
            wait_until(lambda: listening_sockets(port) == workers, "every worker listening")
            ready_s = time.monotonic() - started
            tree = [server.process.pid, *descendants(server.process.pid)]
            start_cpu = cpu_seconds(tree)
            pss = pss_bytes(tree)
            victim = uvicorn_workers(server.process.pid)[0]
            rest = [pid for pid in tree if pid != victim]
            rest_cpu = cpu_seconds(rest)
            killed = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            fresh: list[int] = []

            def replaced() -> bool:
                # One look at the processes: the killed worker may be listed as it exits.
                now = uvicorn_workers(server.process.pid)
                fresh[:] = [pid for pid in now if pid not in tree]
                return len(now) == workers and len(fresh) == 1

            wait_until(replaced, "the killed worker replaced")
            wait_until(lambda: listening_sockets(port) == workers, "the replacement listening")
            replaced_s = time.monotonic() - killed
            # The replacement's own CPU, and what the supervisor and the fork server spent on it
            # (a spawned worker's import is all in the replacement itself).
            restart_cpu = cpu_seconds(fresh) + cpu_seconds(rest) - rest_cpu
        finally:
            stop(server)
    return {
        "ready_s": ready_s,
        "start_cpu_s": start_cpu,
        "pss_mib": pss / 2**20,
        "replaced_s": replaced_s,
        "restart_cpu_s": restart_cpu,
    }


FIGURES = ("ready_s", "start_cpu_s", "pss_mib", "replaced_s", "restart_cpu_s")
HEADER = (
    f"{'round':<7}{'ready s':>9}{'start CPU s':>13}{'PSS MiB':>9}{'replaced s':>12}"
    f"{'restart CPU s':>15}"
)


def format_round(name: str, figures: dict[str, float]) -> str:
    return (
        f"{name:<7}{figures['ready_s']:>9.2f}{figures['start_cpu_s']:>13.2f}"
        f"{figures['pss_mib']:>9.0f}{figures['replaced_s']:>12.2f}{figures['restart_cpu_s']:>15.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.start", description=__doc__)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn workers (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="servers started (default 3)")
    parser.add_argument(
        "--app-dir", type=Path, default=ROOT, help="the checkout whose app is served"
    )
    args = parser.parse_args(argv)
    if args.workers < 2 or args.rounds < 1:
        parser.error("--workers must be at least 2 and --rounds at least 1")
    print(f"python -m app --workers {args.workers} from {args.app_dir}")
    print(HEADER, flush=True)
    rounds = []
    for number in range(1, args.rounds + 1):
        rounds.append(one_round(args.workers, args.app_dir.resolve()))
        print(format_round(str(number), rounds[-1]), flush=True)
    medians = {name: statistics.median(r[name] for r in rounds) for name in FIGURES}
    print(format_round("median", medians))
    RESULTS.mkdir(exist_ok=True)
    report = {"workers": args.workers, "app_dir": str(args.app_dir), "rounds": rounds}
    (RESULTS / "start.json").write_text(json.dumps({**report, "median": medians}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
