"""bench.live runs, at a small class's size, and reports what it measured: every answer
accepted, stored and counted, the question's latency and the memory per student."""

import re

from tests.conftest import run_benchmark


def test_the_class_benchmark_runs_and_meets_its_goals_for_a_small_class() -> None:
    done = run_benchmark("bench.live", "--students", "20")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20/20 accepted, 20 stored, 20 counted" in done.stdout
    p99 = re.search(r"question p99\s+([\d.]+) s", done.stdout)
    assert p99 is not None
    assert 0 < float(p99.group(1)) <= 1.0
    assert re.search(r"errors\s+0\n", done.stdout)
    assert "every goal met" in done.stdout
