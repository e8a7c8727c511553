"""``python -m app`` with two web workers and the pool's owner in a process of its own, started by
one of them: every job size, a class of pollers, a flooding client, the owner killed, and a clean
stop.

Each scenario is a load that broke a pool owned by a web worker: a job over 64 KiB, 300 status
pollers (a full socket backlog), and one client's 20 jobs beside another's confirmations.
"""

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from itsdangerous import URLSafeSerializer

from app.live.access import STUDENT_SALT, student_cookie
from bench._http import TLS
from bench._procs import uvicorn_workers
from bench._servers import launch
from tests.confirming import run_own_loop
from tests.conftest import free_port
from tests.test_confirm_server import (
    POOL_READY_SECONDS,
    descendants,
    maps_torch,
    parents,
    roles_seen,
    torch_processes,
    wait_gone,
    wait_ready,
    wait_status,
)

pytestmark = pytest.mark.distributed


@dataclass
class App:
    process: subprocess.Popen[bytes]
    url: str
    runtime: str


def large(salt: int) -> dict[str, Any]:
    """``counts`` 5000,5000: a 50-byte request whose job is about 200 KB."""
    return {"counts": [5000, 5000], "means": [1, salt], "eta": 0.1, "w": 1}


def host_pid(app: App) -> int | None:
    """The pool's owner: the process below python -m app running app.confirm.host, if any."""
    for pid in descendants(app.process.pid):
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"app.confirm.host" in arguments:
            return pid
    return None


def the_host(app: App) -> int:
    pid = host_pid(app)
    assert pid is not None, "no app.confirm.host process under python -m app"
    return pid


def serve(runtime: str, **settings: str) -> App:
    """``python -m app --workers 2`` with its own runtime folder; waits for /healthz."""
    port = free_port()
    env = {**os.environ, "ATLAS_CONFIRM_RUNTIME_DIR": runtime, **settings}
    command = [sys.executable, "-m", "app", "--workers", "2", "--port", str(port)]
    server = launch([*command, "--no-access-log"], port=port, ready_path="/healthz", env=env)
    return App(server.process, server.url, runtime)


def stop(live: App) -> None:
    """SIGTERM, as a container's stop: exit 0, and no process of the server left behind."""
    tree = descendants(live.process.pid)
    live.process.send_signal(signal.SIGTERM)
    assert live.process.wait(timeout=60) == 0
    assert wait_gone(tree) == set(), "python -m app left a process behind"


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    runtime = tempfile.mkdtemp(prefix="atlas-confirm-owner-")
    settings = {
        "ATLAS_CONFIRM_CACHE_SIZE": "0",
        "ATLAS_CONFIRM_JOB_TIMEOUT_S": "20",
        "ATLAS_SECRET_KEY": SECRET_KEY,
    }
    live = serve(runtime, **settings)
    try:
        wait_ready(live.url)
        yield live
        assert len([pid for pid in descendants(live.process.pid) if maps_torch(pid)]) == 8
        stop(live)
    finally:
        if live.process.poll() is None:
            live.process.kill()
            live.process.wait()
        shutil.rmtree(runtime, ignore_errors=True)


def test_turned_off_no_owner_starts_and_every_worker_says_why(tmp_path: Path) -> None:
    live = serve(str(tmp_path), ATLAS_CONFIRM_ENABLED="false")
    try:
        for _ in range(4):  # fresh connections: both web workers answer
            response = httpx.post(f"{live.url}/api/confirm", json=large(1), timeout=30, verify=TLS)
            assert response.status_code == 503
            assert "ATLAS_CONFIRM_ENABLED=false" in response.json()["detail"]
        # A web worker decides before it serves: turned off, it starts no owner, ever.
        workers = uvicorn_workers(live.process.pid)
        assert len(workers) == 2
        assert not any(descendants(pid) for pid in workers), "a web worker started a process"
        assert not any(maps_torch(pid) for pid in descendants(live.process.pid))
        stop(live)
    finally:
        if live.process.poll() is None:
            live.process.kill()
            live.process.wait()


def test_no_web_worker_holds_torch_and_one_owner_holds_eight_ranks(app: App) -> None:
    owner = the_host(app)
    table = parents()
    # The web workers: none imports torch; one started the owner.
    workers = uvicorn_workers(app.process.pid)
    assert table[owner] in workers
    assert len(workers) == 2
    assert not any(maps_torch(pid) for pid in [app.process.pid, owner, *workers])
    others = [pid for pid in workers if pid != table[owner]]
    assert not any(descendants(pid) for pid in others), "a second web worker started a process"
    assert torch_processes(app.process.pid) == torch_processes(owner)
    assert len(torch_processes(owner)) == 8
    assert roles_seen(app.url) == {"owner", "peer"}


def test_a_job_over_64_kib_confirms_from_either_worker(app: App) -> None:
    for salt in range(20):  # fresh connections: the kernel spreads them over both workers
        response = httpx.post(f"{app.url}/api/confirm", json=large(salt), timeout=60, verify=TLS)
        assert response.status_code == 200, response.text
        assert response.json()["engine_agrees"]


ROUNDS = 2


def test_three_hundred_status_pollers_all_get_an_answer(app: App) -> None:
    async def poll() -> list[int | str]:
        limits = httpx.Limits(max_connections=300)
        async with httpx.AsyncClient(limits=limits, timeout=30, verify=TLS) as client:

            async def one() -> list[int | str]:
                # Twice each: the second asks again on the kept-alive connection.
                answers: list[int | str] = []
                for _ in range(ROUNDS):
                    answers.append(await ask())
                return answers

            async def ask() -> int | str:
                # A kept-alive connection the server closes as it is reused is asked again once,
                # as a browser asks again for a GET; a 5xx never is.
                url = f"{app.url}/api/confirm/status"
                with contextlib.suppress(httpx.TransportError):
                    return (await client.get(url)).status_code
                try:
                    return (await client.get(url)).status_code
                except httpx.TransportError as exc:
                    return type(exc).__name__

            pollers = await asyncio.gather(*(one() for _ in range(300)))
            return [answer for answers in pollers for answer in answers]

    answers = Counter(run_own_loop(poll))
    assert answers == {200: 300 * ROUNDS}


SECRET_KEY = "test-confirm-owner-key"


def from_address(address: str) -> httpx.Client:
    """A client whose connections come from ``address`` (any of 127/8 reaches 127.0.0.1)."""
    return httpx.Client(
        transport=httpx.HTTPTransport(local_address=address, verify=TLS), timeout=120
    )


def as_student(token: str) -> httpx.Client:
    """A live class's student on 127.0.0.1, as the class's join leaves them: the signed cookie."""
    signed = URLSafeSerializer(SECRET_KEY, salt=STUDENT_SALT).dumps(token)
    client = from_address("127.0.0.1")
    client.cookies.set(student_cookie("ABCDEF"), signed)
    return client


def heavy(salt: int) -> dict[str, Any]:
    """Eight ranks of 400 items: slow enough to keep a queue full."""
    return {"counts": [400] * 8, "means": [0] * 8, "eta": 0.1, "w": salt}


@pytest.mark.parametrize(
    ("flooder", "other"),
    [
        (lambda: from_address("127.0.0.1"), lambda: from_address("127.0.0.2")),
        # A school's NAT: both on one address, told apart by their class's cookies.
        (lambda: as_student("flooding-student"), lambda: as_student("other-student")),
    ],
    ids=["two-addresses", "two-students-one-address"],
)
def test_a_flooding_client_never_stops_another_ones_confirmation(
    app: App, flooder: Callable[[], httpx.Client], other: Callable[[], httpx.Client]
) -> None:
    flood: list[int] = []
    done = threading.Event()

    def keep_sending(thread: int) -> None:
        # Twenty threads of one client, each sending its next job as soon as one is answered.
        with flooder() as client:
            for salt in range(thread * 10_000, (thread + 1) * 10_000):
                if done.is_set():
                    return
                flood.append(client.post(f"{app.url}/api/confirm", json=heavy(salt)).status_code)

    threads = [threading.Thread(target=keep_sending, args=(thread,)) for thread in range(20)]
    for thread in threads:
        thread.start()
    try:
        # The other client asks once the flood holds its whole share: one running, one waiting.
        wait_status(app.url, lambda status: status["running"] and status["waiting"] >= 1)
        with other() as client:
            answers = [
                client.post(f"{app.url}/api/confirm", json=heavy(500_000 + salt))
                for salt in range(8)
            ]
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=120)
    assert [answer.status_code for answer in answers] == [200] * 8, answers[0].text
    # The flood kept its own share (2 at a time); the rest were told when to come back.
    assert set(flood) == {200, 429}


def test_the_owner_killed_is_restarted_and_nothing_answers_500(app: App) -> None:
    before = the_host(app)
    ranks = descendants(before)
    os.kill(before, signal.SIGKILL)
    deadline = time.monotonic() + POOL_READY_SECONDS
    codes = []
    while time.monotonic() < deadline:
        response = httpx.post(f"{app.url}/api/confirm", json=large(3000), timeout=60, verify=TLS)
        codes.append(response.status_code)
        if response.status_code == 200:
            break
        assert response.status_code == 503, response.text
        assert int(response.headers["Retry-After"]) >= 1
        time.sleep(0.5)
    assert codes[-1] == 200, codes
    assert the_host(app) != before
    assert wait_gone(ranks) == set(), "the dead owner's ranks were ended"
