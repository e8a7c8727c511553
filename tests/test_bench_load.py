"""bench.load end to end: one row alone (``--only``), under real wrk, against the real app and
its floor."""

import json
import os
import time

import pytest

from bench._procs import machine_ticks, stolen_and_total, stolen_share
from bench.load import GOAL_TARGET
from tests.conftest import ROOT, require_wrk, run_benchmark


@pytest.mark.server
def test_the_goal_row_runs_alone_and_reports_its_verdict() -> None:
    require_wrk()
    run = run_benchmark(
        "bench.load", "--seconds", "1", "--pairs", "1", "--workers", "1", "--only", GOAL_TARGET
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((ROOT / "bench" / "results" / "load.json").read_text())
    assert [(row["target"], row["workers"]) for row in report["rows"]] == [(GOAL_TARGET, 1)]
    (row,) = report["rows"]
    (pair,) = row["runs"]
    for side in ("floor", "app"):
        wrk = pair[side]["wrk"]
        assert wrk["requests"] > 0, side
        assert wrk["non_2xx"] == wrk["socket_errors"] == 0, side
        assert 0 <= pair[side]["stolen_share"] < 1, side
        assert row[f"{side}_stolen_pct"] == pytest.approx(100 * pair[side]["stolen_share"])
    assert f"{GOAL_TARGET}, 32 connections, 1 worker(s): " in run.stdout
    assert "lesson page" not in run.stdout


def test_a_row_that_does_not_exist_is_refused_by_name() -> None:
    run = run_benchmark("bench.load", "--only", "lab, no such row")
    assert run.returncode == 2
    assert "--only" in run.stderr
    assert "lab, no such row" in run.stderr


def test_stolen_time_is_the_machine_lines_eighth_field_and_guests_count_once() -> None:
    # proc(5): user nice system idle iowait irq softirq steal guest guest_nice; a guest's time
    # is already in user (and guest_nice in nice).
    stat = "cpu  100 2 30 400 5 0 6 7 50 1\ncpu0 50 1 15 200 2 0 3 4 25 0\nintr 123\n"
    assert stolen_and_total(stat) == (7, 100 + 2 + 30 + 400 + 5 + 0 + 6 + 7)
    with pytest.raises(ValueError, match="cpu0"):
        stolen_and_total("cpu0 50 1 15 200 2 0 3 4\n")


def test_the_machine_ticks_follow_the_clock_and_the_stolen_share_is_a_share() -> None:
    before, started = machine_ticks(), time.monotonic()
    spin_until = time.process_time() + 0.3
    while time.process_time() < spin_until:
        pass
    after, wall = machine_ticks(), time.monotonic() - started
    # Every CPU's ticks count, busy or idle: the total grows with the wall clock on each CPU.
    expected = wall * os.sysconf("SC_CLK_TCK") * os.cpu_count()
    assert 0.5 * expected <= after[1] - before[1] <= 1.5 * expected
    assert 0 <= after[0] - before[0] <= after[1] - before[1]
    assert 0 <= stolen_share(before, after) <= 1
    assert stolen_share(after, after) == 0.0
