"""Several workers, each on a socket of its own (app/web/listeners.py): real sockets, and a real
``python -m app --workers 2`` whose connections the kernel spreads across both workers."""

import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.web.listeners import WorkerSocket, check_free, spreads_connections
from bench._procs import ESTABLISHED, LISTEN, cpu_seconds, sockets_on, uvicorn_workers
from bench._servers import ROOT, Server, free_port, launch, stop

pytestmark = pytest.mark.skipif(not spreads_connections(), reason="SO_REUSEPORT spreads on Linux")


def inodes_of(pid: int) -> set[int]:
    """The socket inodes process ``pid`` holds open."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            held.add(int(target[8:-1]))
    return held


def by_worker(port: int, workers: list[int], state: str) -> Counter[int]:
    """How many sockets in ``state`` on ``port`` each worker holds."""
    on_port = {inode for inode, s in sockets_on(port).items() if s == state}
    return Counter({pid: len(inodes_of(pid) & on_port) for pid in workers})


def workers_of(server: Server) -> list[int]:
    return uvicorn_workers(server.process.pid)


def start(port: int, workers: int = 2) -> Server:
    env = {**os.environ, "ATLAS_CONFIRM_ENABLED": "false"}
    command = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers)]
    return launch([*command, "--log-level", "warning"], port=port, ready_path="/healthz", env=env)


@pytest.fixture(scope="module")
def two_workers() -> Iterator[tuple[Server, int]]:
    port = free_port()
    server = start(port)
    try:
        # /healthz answered once one worker was up; the other takes connections once it is too.
        wait_for(lambda: sum(by_worker(port, workers_of(server), LISTEN).values()) == 2)
        yield server, port
    finally:
        stop(server)
        assert server.process.returncode == 0


def wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("not within the time")


# ---- the sockets -------------------------------------------------------------------------------


def test_each_unpickled_stand_in_is_a_socket_of_its_own_on_the_address() -> None:
    port = check_free("127.0.0.1", 0)
    stand_in = WorkerSocket("127.0.0.1", port)
    # What a spawned worker gets: the stand-in pickled by the supervisor, unpickled there.
    first, second = (pickle.loads(pickle.dumps(stand_in)) for _ in range(2))
    try:
        for sock in (first, second):
            assert isinstance(sock, socket.socket)
            assert sock.getsockname() == ("127.0.0.1", port)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
        assert first.fileno() != second.fileno()
        first.listen()
        second.listen()
        listening = {inode for inode, s in sockets_on(port).items() if s == LISTEN}
        assert len(listening) == 2
        # Listening, the workers' sockets hold the address: the next server's check fails.
        with pytest.raises(OSError, match="Address already in use"):
            check_free("127.0.0.1", port)
    finally:
        first.close()
        second.close()
    assert check_free("127.0.0.1", port) == port  # free again


def test_a_taken_port_is_refused_before_any_worker_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "ATLAS_CONFIRM_ENABLED": "false"}
        done = subprocess.run(
            [sys.executable, "-m", "app", "--port", str(port), "--workers", "2"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3  # uvicorn's start-up failure
    assert f"cannot listen on 127.0.0.1 port {port}" in done.stderr
    assert "Address already in use" in done.stderr
    assert "Started server process" not in done.stderr


# ---- a real server -----------------------------------------------------------------------------


def test_each_worker_listens_on_its_own_socket(two_workers: tuple[Server, int]) -> None:
    server, port = two_workers
    workers = workers_of(server)
    assert len(workers) == 2
    assert by_worker(port, workers, LISTEN) == Counter(dict.fromkeys(workers, 1))
    listening = {inode for inode, s in sockets_on(port).items() if s == LISTEN}
    assert len(listening) == 2  # not one socket shared by both
    assert not inodes_of(server.process.pid) & listening  # the supervisor accepts nothing


def test_a_class_connecting_at_once_is_spread_across_both_workers(
    two_workers: tuple[Server, int],
) -> None:
    server, port = two_workers
    workers = workers_of(server)
    students = []
    try:
        for _ in range(128):  # opened together, each asking for /healthz and kept open
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            students.append(sock)
        for sock in students:
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
        held = by_worker(port, workers, ESTABLISHED)
        assert sum(held.values()) == 128
        # Spread by a hash of each connection's addresses: about half each. Fewer than 40 of
        # 128 on either worker has a chance of about 1 in 10⁵ by that hash.
        assert min(held.values()) >= 40, held
    finally:
        for sock in students:
            sock.close()


def test_a_worker_that_dies_is_replaced_by_one_on_a_socket_of_its_own(
    two_workers: tuple[Server, int],
) -> None:
    server, port = two_workers
    first, second = workers_of(server)
    os.kill(first, signal.SIGKILL)
    seen: list[list[int]] = [[]]

    def replaced() -> bool:
        # One look at the processes: the killed worker may still be listed as it exits, and
        # gone by a second look that moment.
        seen[0] = workers_of(server)
        return len(seen[0]) == 2 and first not in seen[0]

    wait_for(replaced)
    workers = seen[0]
    wait_for(lambda: sum(by_worker(port, workers, LISTEN).values()) == 2)
    assert by_worker(port, workers, LISTEN) == Counter(dict.fromkeys(workers, 1))
    assert second in workers
    for _ in range(20):  # fresh connections: whichever worker takes one answers it
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert sock.recv(64).startswith(b"HTTP/1.1 200")


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def test_the_app_is_imported_once_and_each_worker_forked_from_that_import() -> None:
    """The fork server below the supervisor imports the app (about a CPU-second); each worker is
    forked from it and only builds the app, where a spawned worker would import it all again."""
    port = free_port()
    server = start(port)
    try:
        wait_for(lambda: sum(by_worker(port, workers_of(server), LISTEN).values()) == 2)
        workers = workers_of(server)
        assert len(workers) == 2
        (fork_server,) = {parent_of(pid) for pid in workers}
        assert parent_of(fork_server) == server.process.pid
        command = Path(f"/proc/{fork_server}/cmdline").read_bytes()
        assert b"multiprocessing.forkserver" in command
        imported = cpu_seconds([fork_server])
        started = {pid: cpu_seconds([pid]) for pid in workers}
        assert all(cpu < imported / 3 for cpu in started.values()), (imported, started)
    finally:
        stop(server)
    assert server.process.returncode == 0
