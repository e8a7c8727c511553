"""bench.live runs, at a small class's size, and reports what it measured: every answer
accepted, stored and counted, the question's latency and the memory per student."""

import re

import pytest

from tests.conftest import run_benchmark
from tests.servers import required_postgres_bin

# Runs bench.live: real servers (python -m app, PostgreSQL).
pytestmark = pytest.mark.server


def test_the_class_benchmark_runs_and_meets_its_goals_for_a_small_class() -> None:
    done = run_benchmark("bench.live", "--students", "20")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20/20 accepted, 20 stored, 20 counted" in done.stdout
    p99 = re.search(r"question p99\s+([\d.]+) s", done.stdout)
    assert p99 is not None
    assert 0 < float(p99.group(1)) <= 1.0
    assert re.search(r"errors\s+0\n", done.stdout)
    assert "every goal met" in done.stdout
    assert "answer → dashboard" in done.stdout


def test_two_replicas_on_postgresql_show_each_answer_on_the_other_dashboard() -> None:
    required_postgres_bin()
    done = run_benchmark("bench.live", "--students", "20", "--replicas", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replicas 2, workers 1 each, PostgreSQL\n" in done.stdout
    assert "20/20 accepted, 20 stored, 20 counted" in done.stdout
    shown = re.search(r"p99 ([\d.]+) s \(goal ≤ 1 s; 10/10 answers given on another", done.stdout)
    assert shown is not None, done.stdout
    assert 0 < float(shown.group(1)) <= 1.0
    assert "every goal met" in done.stdout


def test_the_dragging_class_benchmark_takes_every_state_it_sends() -> None:
    # A small class dragging for two seconds: every state sent is taken (204), the dashboard's
    # pictures stay within their rate, the last picture counts every student.
    done = run_benchmark("bench.live", "--students", "10", "--drag", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every goal met" in done.stdout
    sent = re.search(r"states sent\s+(\d+) \(\d+/s\), (\d+) taken \(204\)", done.stdout)
    assert sent is not None, done.stdout + done.stderr
    assert int(sent.group(1)) > 0
    assert sent.group(1) == sent.group(2)
    assert re.search(r"last picture\s+10 states", done.stdout), done.stdout
    assert re.search(r"errors\s+0\n", done.stdout)
