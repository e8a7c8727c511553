"""Slow and greedy clients against a real ``python -m app``: half-sent heads time out, huge heads
get 431, slow bodies get 408 (a pause, a minimum rate, a whole-request deadline), answers nobody
reads are dropped, a flood of slow connections neither exhausts the server nor delays /healthz,
the connection cap evicts the slowest (never a live stream that reads), a school's 500 students
behind one address all get answers, and a client that hangs up costs no traceback."""

import asyncio
import contextlib
import fcntl
import os
import re
import socket
import struct
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from app.web.server import SEND_BUFFER_BYTES
from bench import hostile
from bench._http import TLS
from bench._servers import Server, free_port, launch, stop

# Deadlines far shorter than the shipped ones: what is tested is that each one holds, not its
# default. A test waits for what the server does (an answer, a close, a file descriptor gone);
# only the slow clients' own pacing is a clock, kept well inside the deadline it must beat.
HEAD_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 0.5
MIN_RATE = 1_000
REQUEST_TIMEOUT_S = 2.0
WRITE_TIMEOUT_S = 3.0
# Longer than any wait here: a connection closed by these tests was closed by a deadline above.
KEEP_ALIVE_S = 120
# How long a test waits for an event the server owes it before it fails (a bug, not a deadline).
EVENT_WAIT_S = 30
HEAD_LIMIT = 4_096
CAP = 1_000
HALF_SENT = 1_500


def start(command_tail: list[str], env: dict[str, str], log: IO[bytes] | None = None) -> Server:
    port = free_port()
    command = [sys.executable, *command_tail, "--host", "127.0.0.1", "--port", str(port)]
    return launch(command, port=port, ready_path="/healthz", env={**os.environ, **env}, log=log)


CONFIRM_OFF = {"ATLAS_CONFIRM_ENABLED": "false"}
LIMITS = {
    **CONFIRM_OFF,
    "ATLAS_HEADER_TIMEOUT_S": str(HEAD_TIMEOUT_S),
    "ATLAS_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
    "ATLAS_MIN_UPLOAD_RATE": str(MIN_RATE),
    "ATLAS_REQUEST_TIMEOUT_S": str(REQUEST_TIMEOUT_S),
    "ATLAS_WRITE_TIMEOUT_S": str(WRITE_TIMEOUT_S),
    "ATLAS_MAX_HEADER_BYTES": str(HEAD_LIMIT),
    "ATLAS_MAX_CONNECTIONS": str(CAP),
    "ATLAS_KEEP_ALIVE_S": str(KEEP_ALIVE_S),
}

# Real servers, and clients whose pacing is timed: on one xdist worker, apart from each other.
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("clock")]


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server") / "server.log"


@pytest.fixture(scope="module")
def guarded(server_log: Path) -> Iterator[Server]:
    with server_log.open("wb") as log:
        server = start(["-m", "app", "--log-level", "info", "--no-access-log"], LIMITS, log)
    try:
        yield server
    finally:
        stop(server)


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes (or ``timeout`` passes). A server that closes
    with bytes of the client's unread (a refused body still trickling in) closes with a reset:
    that is a close too, after what it sent."""
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return received + b"<still open>"
    except ConnectionResetError:
        return received
    return received


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(condition: Callable[[], bool], limit_s: float = EVENT_WAIT_S) -> bool:
    """Poll ``condition`` until it holds (True) or ``limit_s`` passes (False: the event never
    came, a failure)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def fds_fall_to(pid: int, count: int) -> bool:
    """Whether the server's open files fall to ``count`` (its deadlines closed the rest)."""
    return wait_for(lambda: open_fds(pid) <= count, WRITE_TIMEOUT_S + EVENT_WAIT_S)


def test_half_sent_head_gets_408_after_the_timeout(guarded: Server) -> None:
    # Timed from before the connection: the server may accept it (and start the head's clock)
    # before this client's connect returns.
    started = time.monotonic()
    with socket.create_connection(address(guarded)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert time.monotonic() - started >= HEAD_TIMEOUT_S  # not before its deadline


def test_silent_connection_is_closed_after_the_timeout(guarded: Server) -> None:
    started = time.monotonic()  # before the connection, as above
    with socket.create_connection(address(guarded)) as sock:
        assert read_all(sock, EVENT_WAIT_S) == b""
    assert time.monotonic() - started >= HEAD_TIMEOUT_S


def test_next_request_on_a_kept_alive_connection_is_timed_too(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        # Timed from before the first request: the server starts the next head's clock when it
        # hands its first answer over, a moment before this client has read it.
        started = time.monotonic()
        assert answered(sock)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert time.monotonic() - started >= HEAD_TIMEOUT_S


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


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed this (non-blocking) connection: its end read, after any
    answer it sent first (a 408 or 503)."""
    try:
        while sock.recv(65536):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset: closed too
    return True


# The tests that hold /healthz (or a page) to 1 s of wall time run in make test's alone phase: a
# second test process would share that wall time (beside the parallel tests, two runs saw a first
# probe of 1.09 and 1.14 s, the others under 0.2 s).
healthz_within_a_second = pytest.mark.alone


@healthz_within_a_second
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
        with httpx.Client(base_url=guarded.url, timeout=10, verify=TLS) as client:
            for _ in range(5):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                latencies.append(time.monotonic() - started)
                time.sleep(0.1)
        assert max(latencies) < 1.0, latencies
        # The cap held: the oldest half-sent connections were closed to make room.
        assert open_fds(pid) <= fds_before + CAP + 5
        assert fds_fall_to(pid, fds_before + 5), "half-sent connections outlived the timeout"
        # And each one's close reaches its client: waited for, as under load the last ones
        # accepted reach their deadline last (a snapshot here once found 3 still open in CI).
        still_open = set(held)
        for sock in held:
            sock.setblocking(False)

        def all_closed() -> bool:
            still_open.difference_update([sock for sock in still_open if closed(sock)])
            return not still_open

        assert wait_for(all_closed), f"{len(still_open)} half-sent connections never closed"
    finally:
        for sock in held:
            sock.close()


def test_plain_uvicorn_takes_the_protocol_by_name(tmp_path: Path) -> None:
    tail = ["-m", "uvicorn", "--factory", "app.main:create_app"]
    tail += ["--http", "app.web.server:GuardedHttpProtocol"]
    server = start([*tail, "--log-level", "warning"], LIMITS)
    try:
        with socket.create_connection(address(server)) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHo")
            assert read_all(sock, EVENT_WAIT_S).startswith(b"HTTP/1.1 408")
    finally:
        stop(server)


# ---- bodies: a pause, a minimum rate, a whole-request deadline -------------------------------

POST_HEAD = (
    b"POST /api/gradient HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n"
)


def trickle_to(
    server: tuple[str, int], declared: int, chunk: bytes, every_s: float, limit_s: float
) -> bytes:
    """POST a body of ``declared`` bytes as ``chunk`` every ``every_s`` seconds to the
    ``server`` at this address; the answer."""
    with socket.create_connection(server) as sock:
        sock.sendall(POST_HEAD % declared)
        deadline = time.monotonic() + limit_s
        sock.settimeout(every_s)
        received = b""
        while time.monotonic() < deadline:
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            try:
                received += sock.recv(65536)
                if received.endswith(b"(ATLAS_MIN_UPLOAD_RATE).") or b"\r\n\r\n" in received:
                    return received + read_all(sock, 2)
            except TimeoutError:
                continue
        return received


def test_stalled_body_gets_408_after_the_pause(guarded: Server) -> None:
    with socket.create_connection(address(guarded)) as sock:
        started = time.monotonic()
        sock.sendall(POST_HEAD % 100 + b'{"counts": [2')
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"ATLAS_BODY_TIMEOUT_S" in answer
    assert time.monotonic() - started >= BODY_TIMEOUT_S


def test_a_body_slower_than_the_minimum_rate_gets_408(guarded: Server) -> None:
    # A byte every 0.1 s never pauses long enough for the stall timeout, but is far under the
    # rate: cut once the grace (BODY_TIMEOUT_S) and the few bytes' allowance are spent.
    started = time.monotonic()
    answer = trickle_to(address(guarded), 1_000, b" ", every_s=0.1, limit_s=EVENT_WAIT_S)
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"ATLAS_MIN_UPLOAD_RATE" in answer
    assert elapsed >= BODY_TIMEOUT_S  # the grace first


def test_a_body_at_a_fair_rate_but_too_long_meets_the_request_deadline(guarded: Server) -> None:
    # 1,000 bytes every 0.1 s is 10x the minimum rate; the request still ends at its deadline.
    started = time.monotonic()
    answer = trickle_to(address(guarded), 900_000, b" " * 1_000, every_s=0.1, limit_s=EVENT_WAIT_S)
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"ATLAS_REQUEST_TIMEOUT_S" in answer
    assert elapsed >= REQUEST_TIMEOUT_S


def test_a_body_at_a_fair_rate_is_answered(guarded: Server) -> None:
    body = b'{"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}'
    with socket.create_connection(address(guarded)) as sock:
        sock.sendall(POST_HEAD % len(body))
        for piece in (body[:20], body[20:]):
            time.sleep(BODY_TIMEOUT_S / 4)  # the client's pace: pauses inside the deadline
            sock.sendall(piece)
        sock.settimeout(5)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


# ---- readers that never read -----------------------------------------------------------------


def test_an_answer_nobody_reads_is_dropped_after_the_write_timeout(guarded: Server) -> None:
    pid = guarded.process.pid
    settle(pid)
    fds_before = open_fds(pid)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(address(guarded))
    try:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n" * 20)
        # Answers arrive, and the server's side fills while nobody reads.
        assert wait_for(lambda: unread_bytes(sock) > 0 and any(send_queues(address(guarded)[1])))
        assert open_fds(pid) == fds_before + 1, "the connection is held while it waits"
        assert fds_fall_to(pid, fds_before), "an unread answer outlived the write timeout"
        # The client sees its connection end before the twenty answers it asked for.
        with contextlib.suppress(ConnectionResetError):
            received = read_all(sock, 5)
            assert not received.endswith(b"<still open>")
            assert received.count(b"HTTP/1.1 200") < 20
    finally:
        sock.close()


def send_queues(port: int) -> list[int]:
    """Bytes waiting in the kernel's send queue of each of the server's connections on ``port``
    (``/proc/net/tcp``: ``tx_queue``)."""
    queues = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":  # ESTABLISHED
            queues.append(int(fields[4].split(":")[0], 16))
    return queues


def unread_bytes(sock: socket.socket) -> int:
    """Bytes that have arrived on ``sock`` and wait to be read (``FIONREAD``)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]


@healthz_within_a_second
def test_200_slow_readers_hold_little_and_do_not_delay_healthz(guarded: Server) -> None:
    pid = guarded.process.pid
    settle(pid)
    fds_before = open_fds(pid)
    held: list[socket.socket] = []
    try:
        for _ in range(200):
            # A small receive window, as a reader that never reads soon offers: its answers
            # back up into the server's side after a page or two, not after all twenty.
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(address(guarded))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n" * 20)
            held.append(sock)
        # Each has its first answer waiting unread (first requests are answered as any fresh
        # one: 200 at once are a moment's work); the pipelined rest wait their turn behind
        # anyone else's, one every few milliseconds.
        assert wait_for(lambda: all(unread_bytes(sock) for sock in held))
        # Each holds about its socket's send buffer in the kernel (Linux doubles the 64 KiB asked
        # for, and takes a last write whole), not the megabyte autotuning grants on loopback.
        queues = send_queues(address(guarded)[1])
        assert len(queues) >= 100, "most were dropped before their write timeout"
        assert max(queues) <= 3 * SEND_BUFFER_BYTES, max(queues)
        with httpx.Client(base_url=guarded.url, timeout=10, verify=TLS) as client:
            for path in ("/healthz", "/", "/healthz", "/"):
                started = time.monotonic()
                assert client.get(path).status_code == 200
                assert time.monotonic() - started < 1.0, path
        # Every one is dropped once its answers have waited the write timeout (their pipelined
        # requests are answered one every few milliseconds, so the last stall comes late).
        assert fds_fall_to(pid, fds_before + 2), "unread answers were never dropped"
    finally:
        for sock in held:
            sock.close()


# ---- a school's NAT, and clients that hang up -------------------------------------------------


@pytest.fixture(scope="module")
def as_shipped() -> Iterator[Server]:
    """``python -m app`` with its shipped limits (the guarded one's are short, for speed)."""
    server = start(["-m", "app", "--log-level", "warning", "--no-access-log"], CONFIRM_OFF)
    try:
        yield server
    finally:
        stop(server)


@healthz_within_a_second
def test_500_students_behind_one_address_all_get_answers(as_shipped: Server) -> None:
    # 500 clients on loopback, each 3 requests on its own kept-alive connection, all at once:
    # no per-address cap, and the connection cap (1,000) is not reached.
    school = asyncio.run(hostile.one_address(address(as_shipped)[1], clients=500, each=3))
    assert school["ok"] == school["requests"] == 1_500, school


def test_clients_that_pipeline_and_hang_up_leave_no_traceback(
    guarded: Server, server_log: Path
) -> None:
    size_before = server_log.stat().st_size
    asyncio.run(hostile.hang_ups(address(guarded)[1], clients=20, pipelined=5))
    with httpx.Client(base_url=guarded.url, verify=TLS) as client:
        assert client.get("/healthz").status_code == 200
    logged = server_log.read_bytes()[size_before:]
    assert b"Traceback" not in logged, logged[:2000].decode(errors="replace")
    assert len(logged) < 2_000


# ---- the connection cap: the slowest go first, never a live stream that reads ----------------


def test_1000_slow_bodies_do_not_delay_healthz(as_shipped: Server) -> None:
    # The shipped body deadlines (10 s) outlast the test: only eviction makes room.
    pid = as_shipped.process.pid
    fds_before = open_fds(pid)
    held: list[socket.socket] = []
    try:
        for _ in range(CAP + 100):
            sock = socket.create_connection(address(as_shipped))
            sock.sendall(POST_HEAD % 1_000 + b" ")
            held.append(sock)
        settle(pid)
        assert open_fds(pid) <= fds_before + CAP + 5
        with httpx.Client(base_url=as_shipped.url, timeout=10, verify=TLS) as client:
            for path in ("/healthz", "/", "/healthz"):
                started = time.monotonic()
                assert client.get(path).status_code == 200
                assert time.monotonic() - started < 1.0, path
    finally:
        for sock in held:
            sock.close()


@pytest.fixture(scope="module")
def capped_at_two() -> Iterator[Server]:
    """``python -m app`` (one worker) holding at most two connections; idle ones are kept far
    longer than the test runs, so only the cap closes one."""
    env = {
        **CONFIRM_OFF,
        "ATLAS_MAX_CONNECTIONS": "2",
        "ATLAS_HEADER_TIMEOUT_S": "300",
        "ATLAS_KEEP_ALIVE_S": "300",
    }
    tail = ["-m", "app", "--workers", "1", "--log-level", "warning", "--no-access-log"]
    server = start(tail, env)
    try:
        yield server
    finally:
        stop(server)


def answered(sock: socket.socket, path: bytes = b"/healthz") -> bool:
    """GET ``path`` on a kept-alive connection: whether a whole 200 came back (False once the
    server has closed it). The answer is whole at its Content-Length, or its last chunk."""
    try:
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: lab\r\n\r\n")
        sock.settimeout(10)
        received = b""
        while not whole(received):
            chunk = sock.recv(65536)
            if not chunk:
                return False
            received += chunk
    except (BrokenPipeError, ConnectionResetError):
        return False
    return received.startswith(b"HTTP/1.1 200")


def whole(answer: bytes) -> bool:
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    return len(body) >= int(length[1]) if length else body.endswith(b"0\r\n\r\n")


def test_the_cap_closes_the_connection_longest_without_progress_not_the_oldest(
    capped_at_two: Server,
) -> None:
    # Connected first but active last: ``first`` connects and is answered, then ``second``, then
    # ``first`` again. A third connection is one too many: the cap closes ``second``, idle the
    # longest, and keeps ``first``, older but busier.
    with (
        socket.create_connection(address(capped_at_two)) as first,
        socket.create_connection(address(capped_at_two)) as second,
    ):
        assert answered(first)
        assert answered(second)
        assert answered(first)
        with socket.create_connection(address(capped_at_two)) as third:
            # Answered, so the server has taken it in (the cap acts as it connects).
            assert answered(third)
            assert answered(first), "the oldest connection was closed, not the longest idle"
            assert read_all(second, 10) == b"", "the longest idle connection is still open"


STREAM_CAP = 20


@pytest.fixture(scope="module")
def streaming() -> Iterator[Server]:
    tail = ["-m", "uvicorn", "tests.stream_app:app", "--http", "app.web.server:GuardedHttpProtocol"]
    env = {**LIMITS, "ATLAS_MAX_CONNECTIONS": str(STREAM_CAP)}
    server = start(
        [*tail, "--timeout-keep-alive", str(KEEP_ALIVE_S), "--log-level", "warning"], env
    )
    try:
        yield server
    finally:
        stop(server)


def open_stream(server: Server) -> socket.socket:
    sock = socket.create_connection(address(server))
    sock.sendall(b"GET /stream HTTP/1.1\r\nHost: lab\r\n\r\n")
    sock.settimeout(2)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    return sock


def still_streaming(sock: socket.socket) -> bool:
    """Whether events keep arriving (what has come so far is read first)."""
    sock.settimeout(0.01)
    with contextlib.suppress(TimeoutError):
        while sock.recv(65536):
            pass
    sock.settimeout(1)
    try:
        return b"data: " in sock.recv(65536)
    except (TimeoutError, ConnectionResetError):
        return False


def test_a_stream_whose_client_reads_is_never_evicted(streaming: Server) -> None:
    stream = open_stream(streaming)
    slow: list[socket.socket] = []
    try:
        for _ in range(STREAM_CAP * 3):
            sock = socket.create_connection(address(streaming))
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n ")
            slow.append(sock)
            if len(slow) % 10 == 0:
                assert still_streaming(stream)
        assert still_streaming(stream)
        # The slow bodies made room for each other: the first ones were evicted with a 408.
        assert read_all(slow[0], 2).startswith(b"HTTP/1.1 408")
    finally:
        for sock in [stream, *slow]:
            sock.close()


def test_when_every_connection_is_a_reading_stream_the_new_one_gets_503(
    streaming: Server,
) -> None:
    streams = [open_stream(streaming) for _ in range(STREAM_CAP)]
    try:
        with socket.create_connection(address(streaming)) as extra:
            assert read_all(extra, 5).startswith(b"HTTP/1.1 503")
        assert all(still_streaming(stream) for stream in streams)
    finally:
        for stream in streams:
            stream.close()


def test_an_answer_before_the_body_still_times_the_next_request(streaming: Server) -> None:
    with socket.create_connection(address(streaming)) as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nHost: lab\r\nContent-Length: 10\r\n\r\n")
        sock.settimeout(2)
        started = time.monotonic()  # before the answer is read: its clock may start as it is sent
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.sendall(b"x" * 10)  # the body, after its answer: then nothing
        # Closed by the idle deadline (keep-alive is far longer), not left open.
        assert not read_all(sock, EVENT_WAIT_S).endswith(b"<still open>")
        assert time.monotonic() - started >= HEAD_TIMEOUT_S
