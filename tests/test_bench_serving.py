"""bench.serving splits a pane request's CPU into computing and serving: the split is real (the
table of contexts answers byte for byte what computing does, checked inside the benchmark) and
it reports each of its three ways on a short run."""

import pytest

from tests.conftest import run_benchmark

# Runs bench.serving against a real server.
pytestmark = pytest.mark.server


def test_serving_alone_is_measured_on_the_same_answers() -> None:
    run = run_benchmark("bench.serving", "--requests", "300", "--rounds", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    figures = {
        line.split()[0]: float(line.split()[1])
        for line in run.stdout.splitlines()
        if line.startswith("  ")
    }
    assert set(figures) == {"floor", "app", "serving"}
    # Speed itself is the benchmark's report, not this test's: each way only has to have run.
    assert all(value > 0 for value in figures.values())
    assert "computing:" in run.stdout
