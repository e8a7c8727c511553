"""Slow and greedy clients against a real ``python -m app``: half-sent heads time out, huge heads
get 431, a flood of half-sent connections neither exhausts the server nor delays /healthz."""

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench._servers import Server, free_port, launch, stop

HEAD_TIMEOUT_S = 2.0
HEAD_LIMIT = 4_096
CAP = 1_000
HALF_SENT = 1_500


def start(command_tail: list[str], env: dict[str, str]) -> Server:
    port = free_port()
    command = [sys.executable, *command_tail, "--host", "127.0.0.1", "--port", str(port)]
    return launch(command, port=port, ready_path="/healthz", env={**os.environ, **env})


LIMITS = {
    "ATLAS_CONFIRM_ENABLED": "false",
    "ATLAS_HEADER_TIMEOUT_S": str(HEAD_TIMEOUT_S),
    "ATLAS_MAX_HEADER_BYTES": str(HEAD_LIMIT),
    "ATLAS_MAX_CONNECTIONS": str(CAP),
}


@pytest.fixture(scope="module")
def guarded() -> Iterator[Server]:
    server = start(["-m", "app", "--log-level", "warning", "--no-access-log"], LIMITS)
    try:
        yield server
    finally:
        stop(server)


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes (or ``timeout`` passes)."""
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return received + b"<still open>"
    return received


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_half_sent_head_gets_408_after_the_timeout(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
        started = time.monotonic()
        answer = read_all(sock, HEAD_TIMEOUT_S + 5)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert HEAD_TIMEOUT_S - 0.3 < time.monotonic() - started < HEAD_TIMEOUT_S + 2


def test_silent_connection_is_closed_after_the_timeout(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        started = time.monotonic()
        assert read_all(sock, HEAD_TIMEOUT_S + 5) == b""
    assert time.monotonic() - started < HEAD_TIMEOUT_S + 2


def test_next_request_on_a_kept_alive_connection_is_timed_too(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: lab\r\n\r\n")
        time.sleep(0.5)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        answers = read_all(sock, HEAD_TIMEOUT_S + 5)
    first, second = answers.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200")
    assert second.startswith(b"408")


def head_of_size(size: int) -> bytes:
    """A GET whose counted head (URL, then ``name: value\\r\\n`` per header) is ``size`` bytes."""
    url, host = b"/healthz", (b"host", b"lab")
    fixed = len(url) + len(host[0]) + len(host[1]) + 4 + len(b"x-pad") + 4
    pad = b"p" * (size - fixed)
    return b"GET " + url + b" HTTP/1.1\r\nHost: lab\r\nX-Pad: " + pad + b"\r\n\r\n"


@pytest.mark.parametrize(
    ("size", "status"), [(HEAD_LIMIT - 1, b"200"), (HEAD_LIMIT, b"200"), (HEAD_LIMIT + 1, b"431")]
)
def test_head_size_limit_at_under_and_over(guarded: Server, size: int, status: bytes) -> None:
    with socket.create_connection(address(guarded)) as sock:
        sock.sendall(head_of_size(size))
        sock.settimeout(5)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]


def test_a_megabyte_host_header_is_cut_short(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        # The server may answer and close before the whole megabyte is sent.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: " + b"h" * 2**20 + b"\r\n\r\n")
        answer = read_all(sock, 5)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]


def settle(pid: int, timeout: float = 10.0) -> None:
    """Wait until the server has taken in the connections (its open files stop changing)."""
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline and (count := open_fds(pid)) != last:
        last = count
        time.sleep(0.3)


def test_1500_half_sent_requests_do_not_delay_healthz(guarded: Server) -> None:
    pid = guarded.process.pid
    fds_before = open_fds(pid)
    held: list[socket.socket] = []
    try:
        for _ in range(HALF_SENT):
            sock = socket.create_connection(address(guarded))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
            held.append(sock)
        settle(pid)
        latencies = []
        with httpx.Client(base_url=guarded.url, timeout=10) as client:
            for _ in range(5):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                latencies.append(time.monotonic() - started)
                time.sleep(0.1)
        assert max(latencies) < 1.0, latencies
        # The cap held: the oldest half-sent connections were closed to make room.
        assert open_fds(pid) <= fds_before + CAP + 5
        time.sleep(HEAD_TIMEOUT_S + 1.5)
        assert open_fds(pid) <= fds_before + 5, "half-sent connections outlived the timeout"
        still_open = 0
        for sock in held:
            sock.setblocking(False)
            try:
                sock.recv(65536)
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        assert still_open == 0
    finally:
        for sock in held:
            sock.close()


def test_plain_uvicorn_takes_the_protocol_by_name(tmp_path: Path) -> None:
    tail = ["-m", "uvicorn", "app.main:app", "--http", "app.web.server:GuardedHttpProtocol"]
    server = start([*tail, "--log-level", "warning"], LIMITS)
    try:
        with socket.create_connection(address(server)) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHo")
            assert read_all(sock, HEAD_TIMEOUT_S + 5).startswith(b"HTTP/1.1 408")
    finally:
        stop(server)
