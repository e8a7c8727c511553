"""Run every benchmark in this folder, one after another: ``python -m bench [name ...]``.

A benchmark is a public module here (``bench/load.py`` → ``load``) runnable as
``python -m bench.<name>``; each runs in its own process and prints its own table.
"""

import argparse
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benchmarks() -> list[str]:
    return sorted(
        module.name
        for module in pkgutil.iter_modules([str(HERE)])
        if not module.name.startswith("_")
    )


def main() -> int:
    available = benchmarks()
    parser = argparse.ArgumentParser(prog="python -m bench", description="Run the benchmarks.")
    parser.add_argument(
        "names", nargs="*", metavar="name", help=f"which to run (default: {', '.join(available)})"
    )
    chosen = parser.parse_args().names or available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; there are {', '.join(available)}")
    failed = []
    for name in chosen:
        print(f"\n== bench.{name}", flush=True)
        started = time.monotonic()
        code = subprocess.run([sys.executable, "-m", f"bench.{name}"], check=False).returncode
        print(f"== bench.{name}: exit {code} after {time.monotonic() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
