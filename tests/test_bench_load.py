"""bench.load end to end: one row alone (``--only``), under real wrk, against the real app and
its floor."""

import json

from bench.load import GOAL_TARGET
from tests.conftest import ROOT, require_wrk, run_benchmark


def test_the_goal_row_runs_alone_and_reports_its_verdict() -> None:
    require_wrk()
    run = run_benchmark(
        "bench.load", "--seconds", "1", "--pairs", "1", "--workers", "1", "--only", GOAL_TARGET
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((ROOT / "bench" / "results" / "load.json").read_text())
    assert [(row["target"], row["workers"]) for row in report["rows"]] == [(GOAL_TARGET, 1)]
    ((pair,),) = (row["runs"] for row in report["rows"])
    for side in ("floor", "app"):
        wrk = pair[side]["wrk"]
        assert wrk["requests"] > 0, side
        assert wrk["non_2xx"] == wrk["socket_errors"] == 0, side
    assert f"{GOAL_TARGET}, 32 connections, 1 worker(s): " in run.stdout
    assert "lesson page" not in run.stdout


def test_a_row_that_does_not_exist_is_refused_by_name() -> None:
    run = run_benchmark("bench.load", "--only", "lab, no such row")
    assert run.returncode == 2
    assert "--only" in run.stderr
    assert "lab, no such row" in run.stderr
