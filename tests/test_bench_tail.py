"""bench.tail's spinning floors cost what they are told to: the floor's spin adds at least its
CPU time per request (and stays bounded), the goal's spin puts a server at exactly 2.5x the
floor's cost, and the whole benchmark runs under real wrk with every way measured."""

import json
from pathlib import Path

import httpx
import pytest

from bench import tail
from bench._http import TLS
from bench._procs import cpu_seconds, web_processes
from bench.load import GOAL_RPS_RATIO
from tests.conftest import ROOT, require_wrk, run_benchmark

# Real floor and goal servers, under wrk.
pytestmark = pytest.mark.server


def floor_index(folder: Path) -> Path:
    (folder / "pane").write_bytes(b"<p>pane</p>")
    entry = {"file": "pane", "media_type": "text/html; charset=utf-8", "encoding": ""}
    index = folder / "index.json"
    index.write_text(json.dumps({"/lab": {"": entry}}))
    return index


def cpu_ms_per_request(spin_us: float, index: Path, requests: int = 20) -> float:
    with tail.spinning_floor(index, spin_us, workers=1) as server:
        processes = web_processes(server.process.pid)
        with httpx.Client(base_url=server.url, verify=TLS) as client:
            client.get("/lab")  # the first answer builds what later ones reuse
            before = cpu_seconds(processes)
            for _ in range(requests):
                assert client.get("/lab").content == b"<p>pane</p>"
            return (cpu_seconds(processes) - before) * 1000 / requests


def test_a_spinning_floor_costs_its_spin_on_every_request(tmp_path: Path) -> None:
    index = floor_index(tmp_path)
    still = cpu_ms_per_request(0, index)
    spinning = cpu_ms_per_request(30_000, index)
    # CPU time, not wall time: a spin the scheduler interrupts still costs its 30 ms of CPU.
    assert spinning >= 30
    assert spinning < 30 + 30, "the spin overran its CPU time by more than a whole spin"
    assert still < 10


def test_the_goal_server_costs_the_floor_over_the_throughput_goal() -> None:
    for floor_ms, app_ms in ((0.25, 0.75), (0.1, 0.1), (0.3, 0.2)):
        spins = tail.spin_for(floor_ms, app_ms)
        # At equal work per CPU second, throughput goes as 1 / cost: 0.4x needs 2.5x the cost.
        assert floor_ms + spins["goal"] / 1000 == pytest.approx(floor_ms / GOAL_RPS_RATIO)
        # The burn server costs what the app costs, and a cheaper app than its floor spins 0.
        assert floor_ms + spins["burn"] / 1000 == pytest.approx(max(app_ms, floor_ms))


def test_the_benchmark_measures_every_way_under_wrk() -> None:
    require_wrk()
    # One calibration try: what is tested is that every way runs and is measured, not how close
    # the spins come to their aim (each try is two more saturating wrk runs on two cores).
    run = run_benchmark("bench.tail", "--seconds", "1", "--pairs", "1", "--tries", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((ROOT / "bench" / "results" / "tail.json").read_text())
    ways = report["ways"]
    assert list(ways) == list(tail.WAYS)
    for name, way in ways.items():
        (measured,) = way["runs"]
        assert measured["wrk"]["requests"] > 0, name
        assert measured["wrk"]["non_2xx"] == measured["wrk"]["socket_errors"] == 0, name
        # A spinning way costs at least its spin per request on top of nothing.
        assert measured["cpu_ms_per_request"] >= way["spin_us"] / 1000, name
    assert ways["burn"]["spin_us"] > 0
    assert ways["goal"]["spin_us"] > 0
    assert "a stall-free server at " in run.stdout


def test_fewer_than_one_calibration_try_is_refused_naming_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        tail.main(["--tries", "0"])
    assert exited.value.code == 2
    assert "--tries must be at least 1, not 0" in capsys.readouterr().err
