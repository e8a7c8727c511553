"""bench.start end to end: a real ``python -m app --workers 2`` started, one worker killed and
replaced, each figure measured."""

import json

import pytest

from bench.start import FIGURES
from tests.conftest import ROOT, run_benchmark


@pytest.mark.server
def test_a_start_and_a_replaced_worker_are_measured() -> None:
    run = run_benchmark("bench.start", "--rounds", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((ROOT / "bench" / "results" / "start.json").read_text())
    (measured,) = report["rounds"]
    assert report["workers"] == 2
    assert all(measured[figure] > 0 for figure in FIGURES), measured
    assert report["median"] == measured
    # The app is imported once, by the fork server: a replacement worker is forked from that
    # import and costs a sliver of the start (a spawned one imports it all again: about 40 %).
    assert measured["restart_cpu_s"] < measured["start_cpu_s"] / 4, measured
    assert "median" in run.stdout


@pytest.mark.parametrize("argument", [("--workers", "1"), ("--rounds", "0")])
def test_a_run_without_a_second_worker_or_a_round_is_refused(argument: tuple[str, str]) -> None:
    run = run_benchmark("bench.start", *argument)
    assert run.returncode == 2
    assert "--workers must be at least 2 and --rounds at least 1" in run.stderr
