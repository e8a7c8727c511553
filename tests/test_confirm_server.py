"""The pool in a real uvicorn: no torch in the server, faults, queue bound, shutdown, workers."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.confirm.pool import process_gone
from bench._http import TLS
from bench._procs import uvicorn_workers
from bench._servers import stop
from tests.conftest import ROOT, start_server

pytestmark = pytest.mark.distributed

POOL_READY_SECONDS = 90.0


def parents() -> dict[int, int]:
    """Every live process's parent pid, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            table[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return table


def descendants(pid: int) -> set[int]:
    table = parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in table.items() if parent in frontier} - found
        found |= frontier
    return {p for p in found if not process_gone(p)}


def maps_torch(pid: int) -> bool:
    """Whether the process has libtorch mapped: it imported torch."""
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def torch_processes(root: int) -> set[int]:
    return {pid for pid in descendants(root) if maps_torch(pid)}


def runtime_env(**extra: str) -> dict[str, str]:
    runtime = tempfile.mkdtemp(prefix="atlas-confirm-test-")
    return {"ATLAS_CONFIRM_RUNTIME_DIR": runtime, "ATLAS_CONFIRM_CACHE_SIZE": "0", **extra}


def wait_ready(url: str, timeout: float = POOL_READY_SECONDS) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/api/confirm/status", timeout=5, verify=TLS).json()
        if status["state"] == "ready":
            return status
        assert status["state"] in ("starting", "stopped"), status
        time.sleep(0.2)
    raise AssertionError(f"the pool was not ready within {timeout} s: {status}")


def post(url: str, body: dict[str, Any], timeout: float = 60.0) -> httpx.Response:
    return httpx.post(f"{url}/api/confirm", json=body, timeout=timeout, verify=TLS)


def body_for(ranks: int, salt: int) -> dict[str, Any]:
    """A distinct job on ``ranks`` ranks (distinct so no cache could answer it)."""
    return {"counts": [r + 1 for r in range(ranks)], "means": [salt] * ranks, "eta": 0.1, "w": 1}


def wait_status(url: str, holds: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The pool's status once ``holds`` is true of it (asked every 20 ms, for at most 60 s)."""
    deadline = time.monotonic() + 60
    while not holds(
        status := httpx.get(f"{url}/api/confirm/status", timeout=10, verify=TLS).json()
    ):
        assert time.monotonic() < deadline, f"the pool's status never changed: {status}"
        time.sleep(0.02)
    return status


def wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(process_gone(pid) for pid in pids):
        time.sleep(0.05)
    return {pid for pid in pids if not process_gone(pid)}


@dataclass
class PoolServer:
    url: str
    process: subprocess.Popen[bytes]
    state_at_start: str  # the pool's state when /healthz first answered


@pytest.fixture(scope="module")
def server() -> Iterator[PoolServer]:
    """One uvicorn and pool for the tests that leave the pool whole (they may kill ranks: it
    rebuilds): short deadlines, a queue of one, no cache."""
    env = runtime_env(
        ATLAS_CONFIRM_JOB_TIMEOUT_S="2",
        ATLAS_CONFIRM_GROUP_TIMEOUT_S="1.5",
        ATLAS_CONFIRM_QUEUE_LIMIT="1",
    )
    live = start_server(env)
    try:
        state = httpx.get(f"{live.url}/api/confirm/status", timeout=10, verify=TLS).json()["state"]
        yield PoolServer(live.url, live.process, state)
    finally:
        stop(live)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)


def test_server_answers_at_once_and_never_imports_torch(server: PoolServer) -> None:
    # start_server returned on the first /healthz: the pool was still loading torch then.
    assert server.state_at_start == "starting"
    wait_ready(server.url)
    assert post(server.url, body_for(8, 1)).status_code == 200
    assert not maps_torch(server.process.pid), "the uvicorn process mapped libtorch"
    owner = pool_owner(server.process.pid)
    assert not maps_torch(owner), "the pool's owner mapped libtorch"
    pool = torch_processes(server.process.pid)
    assert len(pool) == 8
    assert pool == torch_processes(owner)
    # The server process's imports, checked in a fresh interpreter that builds the same app.
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, app.main; print('torch' in sys.modules)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "False"


def pool_owner(root: int) -> int:
    """The pool's owner below ``root``: the process running app.confirm.host."""
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            if b"app.confirm.host" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise AssertionError(f"no app.confirm.host process below {root}")


def thread_names(pid: int) -> list[str]:
    """The names of a process's threads (what ``top -H`` shows), from /proc."""
    tasks = Path(f"/proc/{pid}/task")
    return [(task / "comm").read_text().strip() for task in tasks.iterdir()]


def test_each_rank_has_one_gloo_network_thread(server: PoolServer) -> None:
    # Gloo's network thread wakes every 10 ms, busy or not: one per rank, not one per group
    # (nine per rank, a tenth of a core for an idle pool), whatever sizes of job have run.
    wait_ready(server.url)
    for ranks in (8, 3):
        assert post(server.url, body_for(ranks, 5)).status_code == 200
    pool = torch_processes(server.process.pid)
    assert len(pool) == 8
    loops = {pid: thread_names(pid).count("gloo_tcp_loop") for pid in pool}
    assert loops == dict.fromkeys(pool, 1)


def forked_ranks(pool: set[int]) -> set[int]:
    """The pool's ranks 1…7: rank 0 is the owner's child, it forked the others."""
    table = parents()
    return {pid for pid in pool if table.get(pid) in pool}


def test_killed_idle_worker_is_replaced_before_the_next_job(server: PoolServer) -> None:
    wait_ready(server.url)
    before = torch_processes(server.process.pid)
    victim = max(forked_ranks(before))
    os.kill(victim, signal.SIGKILL)
    # No request needed: the closed socket alone makes the pool kill every rank and rebuild.
    assert wait_gone(before) == set(), "every old rank was killed by pid"
    wait_ready(server.url)
    after = torch_processes(server.process.pid)
    assert len(after) == 8
    assert not (after & before)
    response = post(server.url, body_for(8, 3))
    assert response.status_code == 200
    assert response.json()["attempts"] == 1
    assert response.json()["engine_agrees"]


def test_stopped_worker_hits_the_deadline_and_the_queue_bound_holds(server: PoolServer) -> None:
    wait_ready(server.url)
    before = torch_processes(server.process.pid)
    stopped = min(forked_ranks(before))
    os.kill(stopped, signal.SIGSTOP)
    answers: dict[str, httpx.Response] = {}

    def send(name: str, body: dict[str, Any]) -> None:
        answers[name] = post(server.url, body)

    hung = threading.Thread(target=send, args=("hung", body_for(8, 4)))
    hung.start()
    # The hung job holds the pool until its 2 s deadline; the next one waits behind it.
    wait_status(server.url, lambda status: status["running"])
    queued = threading.Thread(target=send, args=("queued", body_for(2, 5)))
    queued.start()
    wait_status(server.url, lambda status: status["waiting"] == 1)
    # From another address: its own share of the queue is free, the whole queue is not.
    with httpx.Client(
        transport=httpx.HTTPTransport(local_address="127.0.0.2", verify=TLS)
    ) as other:
        refused = other.post(f"{server.url}/api/confirm", json=body_for(2, 6), timeout=60)
    assert refused.status_code == 429, refused.text
    assert "queue is full" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1
    hung.join(timeout=60)
    queued.join(timeout=60)
    # The deadline killed every rank, the stopped one by pid; the retry ran on a fresh pool.
    assert answers["hung"].status_code == 200, answers["hung"].text
    assert answers["hung"].json()["attempts"] == 2
    assert answers["queued"].status_code == 200
    assert process_gone(stopped), "the stopped rank was killed by pid"
    recovered = post(server.url, body_for(8, 7))
    assert recovered.status_code == 200
    assert recovered.json()["attempts"] == 1
    assert len(torch_processes(server.process.pid)) == 8


def test_a_dead_owner_leaves_no_rank_behind_and_is_restarted(server: PoolServer) -> None:
    wait_ready(server.url)
    owner = pool_owner(server.process.pid)
    pool = torch_processes(owner)
    rank0 = next(iter(pool - forked_ranks(pool)))
    # A stopped rank 0 cannot notice that its owner died: the kernel ends it, then the rest.
    os.kill(rank0, signal.SIGSTOP)
    try:
        os.kill(owner, signal.SIGKILL)
        assert wait_gone(pool) == set()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(rank0, signal.SIGKILL)
    # The web worker starts a new owner, which builds a new pool.
    wait_ready(server.url)
    assert pool_owner(server.process.pid) != owner
    assert len(torch_processes(server.process.pid)) == 8


@pytest.mark.parametrize(
    ("stop_signal", "exit_status"),
    # After its shutdown uvicorn raises a SIGTERM again (a supervisor sees it), a SIGINT not.
    [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 0)],
    ids=["SIGTERM", "SIGINT"],
)
def test_shutdown_leaves_no_process_behind(stop_signal: signal.Signals, exit_status: int) -> None:
    env = runtime_env()
    server = start_server(env)
    try:
        wait_ready(server.url)
        assert post(server.url, body_for(3, 8)).status_code == 200
        tree = descendants(server.process.pid)
        assert len({pid for pid in tree if maps_torch(pid)}) == 8
        server.process.send_signal(stop_signal)
        assert server.process.wait(timeout=30) == exit_status
        assert wait_gone(tree) == set()
    finally:
        stop(server)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)


def test_shutdown_while_the_pool_is_still_starting() -> None:
    env = runtime_env()
    server = start_server(env)
    try:
        # Stopped as soon as the pool's rank 0 runs, long before the pool is ready.
        deadline = time.monotonic() + 60
        while not ranks_anywhere(env["ATLAS_CONFIRM_RUNTIME_DIR"]):
            assert time.monotonic() < deadline, "the pool's rank 0 never started"
            time.sleep(0.01)
        tree = descendants(server.process.pid)
        assert (
            httpx.get(f"{server.url}/api/confirm/status", verify=TLS).json()["state"] == "starting"
        )
        stop(server)
        assert wait_gone(tree) == set()
        assert descendants(server.process.pid) == set()
    finally:
        stop(server)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)


def ranks_anywhere(runtime: str) -> set[int]:
    """Every pool rank on this machine that uses ``runtime`` (orphans included)."""
    found = set()
    for pid in parents():
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "app.confirm.worker" in arguments and runtime in arguments and not process_gone(pid):
            found.add(pid)
    return found


def roles_seen(url: str, attempts: int = 200) -> set[str]:
    """Ask /api/confirm/status on fresh connections until both web workers have answered."""
    seen: set[str] = set()
    for _ in range(attempts):
        seen.add(httpx.get(f"{url}/api/confirm/status", timeout=10, verify=TLS).json()["role"])
        if seen == {"owner", "peer"}:
            break
    return seen


def test_two_web_workers_share_one_pool_and_take_it_over() -> None:
    env = {**os.environ, **runtime_env()}
    server = start_server(env, options=["--workers", "2"])
    process, url = server.process, server.url
    try:
        wait_ready(url)
        assert len(torch_processes(process.pid)) == 8, "one pool for both web workers"
        assert roles_seen(url) == {"owner", "peer"}
        for salt in range(10):  # fresh connections land on both workers; all reach the pool
            assert post(url, body_for(2 + salt % 7, 10 + salt)).status_code == 200
        workers = uvicorn_workers(process.pid)
        assert len(workers) == 2
        owner = next(pid for pid in workers if torch_processes(pid))
        pool = torch_processes(owner)
        os.kill(owner, signal.SIGKILL)
        # Its orphaned owner stops its ranks and frees the lock; the other worker takes it and
        # starts a fresh owner and pool: never more than 8 ranks of this runtime folder, anywhere.
        assert wait_gone(pool) == set()
        runtime = env["ATLAS_CONFIRM_RUNTIME_DIR"]
        deadline = time.monotonic() + POOL_READY_SECONDS
        while time.monotonic() < deadline:
            assert len(ranks_anywhere(runtime)) <= 8
            response = post(url, body_for(4, 99))
            if response.status_code == 200:
                break
            assert response.status_code == 503, response.text
            time.sleep(0.5)
        assert response.status_code == 200
        assert len(torch_processes(process.pid)) == 8
        tree = descendants(process.pid)
    finally:
        stop(server)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)
    assert wait_gone(tree) == set()


def test_without_torch_installed_confirm_is_503_with_the_install_hint(tmp_path: Path) -> None:
    """A real environment without torch: the venv's packages minus torch, with site disabled."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    packages = tmp_path / "site-packages-without-torch"
    packages.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("torch", "functorch", "torchgen")):
            (packages / entry.name).symlink_to(entry)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{packages}", **runtime_env()}
    server = start_server(env, interpreter=[sys.executable, "-S"])
    process, url = server.process, server.url
    try:
        assert httpx.get(f"{url}/healthz", verify=TLS).json()["torch_installed"] is False
        response = post(url, body_for(2, 1))
        assert response.status_code == 503
        assert "pip install -e '.[torch]'" in response.json()["detail"]
        assert "make run" in response.json()["detail"]
        page = httpx.get(f"{url}/", verify=TLS).text
        assert "pip install -e &#39;.[torch]&#39;" in page
        assert httpx.post(f"{url}/api/gradient", json=body_for(2, 1), verify=TLS).status_code == 200
        assert descendants(process.pid) == set(), "no pool process without torch"
    finally:
        stop(server)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)


def test_turned_off_by_setting_is_503_and_starts_no_process() -> None:
    env = runtime_env(ATLAS_CONFIRM_ENABLED="false")
    server = start_server(env)
    try:
        response = post(server.url, body_for(2, 1))
        assert response.status_code == 503
        assert "ATLAS_CONFIRM_ENABLED=false" in response.json()["detail"]
        assert descendants(server.process.pid) == set()
    finally:
        stop(server)
        shutil.rmtree(env["ATLAS_CONFIRM_RUNTIME_DIR"], ignore_errors=True)
