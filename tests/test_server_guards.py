"""``GuardedHttpProtocol`` served by a real uvicorn in this process (a thread, on loopback), with
deadlines of a fraction of a second: each refusal's status and words, the head size at its
limit, the connection cap, the streams it does not count, an unread answer dropped.

tests/test_server.py runs the shipped ``python -m app`` in a child process; these run the
protocol where the test runs, which is also where mutation testing (docs/testing.md) sees which
tests run which of its functions."""

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from app.settings import Settings
from app.web import server
from bench._servers import free_port
from tests import stream_app
from tests.test_server import answered, head_of_size, read_all, still_streaming, trickle_to

HEAD_TIMEOUT_S = 0.5
BODY_TIMEOUT_S = 0.3
MIN_RATE = 1_000
REQUEST_TIMEOUT_S = 1.0
WRITE_TIMEOUT_S = 1.0
HEAD_LIMIT = 4_096
# How long a test waits for what the server owes it before it fails (a bug, not a deadline).
EVENT_WAIT_S = 10

Address = tuple[str, int]

pytestmark = [pytest.mark.server, pytest.mark.xdist_group("clock")]


@contextmanager
def guarded(**limits: float) -> Iterator[Address]:
    """A uvicorn with ``GuardedHttpProtocol`` serving tests/stream_app.py under ``limits``."""
    settings = Settings(confirm_enabled=False, **limits)
    port = free_port()
    config = uvicorn.Config(
        stream_app.app,
        host="127.0.0.1",
        port=port,
        http=server.GuardedHttpProtocol,
        lifespan="off",
        log_level="warning",
        timeout_keep_alive=300,
    )
    instance = uvicorn.Server(config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server, "get_settings", lambda: settings)
        thread = threading.Thread(target=instance.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + EVENT_WAIT_S
        while not instance.started:
            assert thread.is_alive(), "uvicorn stopped before it started"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        try:
            yield ("127.0.0.1", port)
        finally:
            instance.should_exit = True
            thread.join(EVENT_WAIT_S)


@pytest.fixture(scope="module")
def timed() -> Iterator[Address]:
    with guarded(
        header_timeout_s=HEAD_TIMEOUT_S,
        body_timeout_s=BODY_TIMEOUT_S,
        min_upload_rate=MIN_RATE,
        request_timeout_s=REQUEST_TIMEOUT_S,
        write_timeout_s=WRITE_TIMEOUT_S,
        max_header_bytes=HEAD_LIMIT,
    ) as address:
        yield address


def parsed(answer: bytes) -> tuple[str, dict[str, str], str]:
    """The status line, the headers (names in lower case) and the body of one whole answer."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body.decode()


def assert_refused(answer: bytes, status: str, words: str) -> None:
    """A whole answer of ``status`` saying ``words``, as text, and then the connection closed."""
    assert not answer.endswith(b"<still open>"), answer[:200]
    line, headers, body = parsed(answer)
    assert (line, body) == (f"HTTP/1.1 {status}", words)
    assert headers == {
        "content-type": "text/plain; charset=utf-8",
        "content-length": str(len(words.encode())),
        "x-content-type-options": "nosniff",
        "connection": "close",
    }


def test_a_head_not_completed_in_time_gets_408_in_words(timed: Address) -> None:
    started = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
        answer = read_all(sock, EVENT_WAIT_S)
    assert time.monotonic() - started >= HEAD_TIMEOUT_S
    assert_refused(answer, "408 Request Timeout", "Request headers not completed in time.")


def test_a_silent_connection_and_an_idle_kept_alive_one_are_closed_without_a_word(
    timed: Address,
) -> None:
    started = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        assert read_all(sock, EVENT_WAIT_S) == b""
    assert time.monotonic() - started >= HEAD_TIMEOUT_S
    with socket.create_connection(timed) as sock:
        started = time.monotonic()  # the idle clock starts once the answer is sent: later
        assert answered(sock, b"/")
        assert read_all(sock, EVENT_WAIT_S) == b""
    assert time.monotonic() - started >= HEAD_TIMEOUT_S


@pytest.mark.parametrize("size", [HEAD_LIMIT - 1, HEAD_LIMIT, HEAD_LIMIT + 1])
def test_the_head_size_limit_counts_the_url_and_each_header_line(timed: Address, size: int) -> None:
    with socket.create_connection(timed) as sock:
        sock.sendall(head_of_size(size))
        answer = read_all(sock, EVENT_WAIT_S)
    if size <= HEAD_LIMIT:
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    else:
        assert_refused(
            answer,
            "431 Request Header Fields Too Large",
            f"Request line and headers larger than {HEAD_LIMIT} bytes (ATLAS_MAX_HEADER_BYTES).",
        )


def test_a_stalled_body_gets_408_naming_its_setting(timed: Address) -> None:
    started = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\nsome")
        answer = read_all(sock, EVENT_WAIT_S)
    assert time.monotonic() - started >= BODY_TIMEOUT_S
    assert_refused(
        answer,
        "408 Request Timeout",
        f"Request body stalled: nothing arrived for {BODY_TIMEOUT_S:g} s (ATLAS_BODY_TIMEOUT_S).",
    )


def test_a_body_under_the_minimum_rate_gets_408_after_the_grace(timed: Address) -> None:
    # A byte every 0.05 s never pauses for the stall deadline but is far under the rate.
    started = time.monotonic()
    answer = trickle_to(timed, 1_000, b" ", every_s=0.05, limit_s=EVENT_WAIT_S)
    assert time.monotonic() - started >= BODY_TIMEOUT_S
    assert_refused(
        answer,
        "408 Request Timeout",
        f"Request body too slow: under {MIN_RATE:g} bytes a second (ATLAS_MIN_UPLOAD_RATE).",
    )


def test_a_body_at_a_fair_rate_but_too_long_meets_the_request_deadline(timed: Address) -> None:
    # 500 bytes every 0.05 s is ten times the minimum rate; the request still ends in time.
    started = time.monotonic()
    answer = trickle_to(timed, 900_000, b" " * 500, every_s=0.05, limit_s=EVENT_WAIT_S)
    assert time.monotonic() - started >= REQUEST_TIMEOUT_S
    assert_refused(
        answer,
        "408 Request Timeout",
        f"Request not completed within {REQUEST_TIMEOUT_S:g} s (ATLAS_REQUEST_TIMEOUT_S).",
    )


def test_a_body_at_a_fair_rate_is_answered(timed: Address) -> None:
    body = b"x" * 600
    with socket.create_connection(timed) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 600\r\n\r\n")
        for start in range(0, 600, 100):
            time.sleep(BODY_TIMEOUT_S / 4)  # the client's pace: pauses inside the deadline
            sock.sendall(body[start : start + 100])
        sock.settimeout(EVENT_WAIT_S)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_an_answer_nobody_reads_is_dropped_after_the_write_timeout(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    with sock:
        sock.connect(timed)
        peer = "{}:{}".format(*sock.getsockname())
        started = time.monotonic()
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\n\r\n")
        time.sleep(WRITE_TIMEOUT_S + 0.5)  # the client that never reads, past the deadline
        received = read_all(sock, EVENT_WAIT_S)
    # The connection ended (reset or closed) with most of the megabyte never sent.
    assert not received.endswith(b"<still open>")
    assert len(received) < len(stream_app.BIG) // 2
    assert time.monotonic() - started >= WRITE_TIMEOUT_S
    # The operator's debug log names the client and the deadline.
    assert f"{peer}: answer not read within {WRITE_TIMEOUT_S:g} s; dropped" in caplog.messages


def test_the_cap_closes_the_connection_longest_without_progress_not_the_oldest() -> None:
    with (
        guarded(max_connections=2, header_timeout_s=300) as address,
        socket.create_connection(address) as first,
        socket.create_connection(address) as second,
    ):
        assert answered(first, b"/")
        assert answered(second, b"/")
        assert answered(first, b"/")
        with socket.create_connection(address) as third:
            assert answered(third, b"/")
            assert answered(first, b"/"), "the oldest connection was closed, not the idlest"
            assert read_all(second, EVENT_WAIT_S) == b"", "the idlest connection is still open"


def open_stream(address: Address, path: bytes = b"/stream") -> socket.socket:
    sock = socket.create_connection(address)
    sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: lab\r\n\r\n")
    sock.settimeout(EVENT_WAIT_S)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    return sock


def test_past_the_cap_a_slow_body_is_cut_a_reading_stream_never_and_else_503() -> None:
    with guarded(max_connections=2, header_timeout_s=300, body_timeout_s=300) as address:
        streams = [open_stream(address)]
        with socket.create_connection(address) as slow:
            slow.sendall(b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n ")
            streams.append(open_stream(address))
            assert_refused(
                read_all(slow, EVENT_WAIT_S),
                "408 Request Timeout",
                "Request too slow: closed to make room for other connections.",
            )
        try:
            with socket.create_connection(address) as extra:
                assert_refused(
                    read_all(extra, EVENT_WAIT_S),
                    "503 Service Unavailable",
                    "Too many connections; try again shortly.",
                )
            assert all(still_streaming(stream) for stream in streams)
        finally:
            for stream in streams:
                stream.close()


def test_a_live_class_stream_leaves_the_cap_to_requests() -> None:
    # It says so once it streams (it has a cap of its own): a third connection still fits.
    with guarded(max_connections=1) as address:
        streams = [open_stream(address, b"/stream?own-cap") for _ in range(2)]
        try:
            with socket.create_connection(address) as request:
                assert answered(request, b"/")
            assert all(still_streaming(stream) for stream in streams)
        finally:
            for stream in streams:
                stream.close()


def test_an_answer_before_the_body_still_times_the_next_request(timed: Address) -> None:
    with socket.create_connection(timed) as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nHost: lab\r\nContent-Length: 10\r\n\r\n")
        sock.settimeout(EVENT_WAIT_S)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        sock.sendall(b"x" * 10)
        assert read_all(sock, EVENT_WAIT_S) == b""
        assert time.monotonic() - started >= HEAD_TIMEOUT_S


def pipeline(sock: socket.socket, count: int) -> None:
    sock.sendall(b"".join(b"GET /%d HTTP/1.1\r\nHost: lab\r\n\r\n" % n for n in range(count)))


def answers(sock: socket.socket, count: int) -> int:
    """Read until ``count`` whole answers have come (or the server closes): how many came."""
    received = b""
    sock.settimeout(EVENT_WAIT_S)
    while received.count(b"HTTP/1.1 200") < count or not received.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received.count(b"HTTP/1.1 200")


def test_pipelined_requests_of_several_clients_are_all_answered(timed: Address) -> None:
    # They take turns across the worker; one client that pipelines and hangs up at once
    # leaves its turns to the others.
    with (
        socket.create_connection(timed) as first,
        socket.create_connection(timed) as second,
    ):
        with socket.create_connection(timed) as gone:
            pipeline(gone, 8)
        pipeline(first, 8)
        pipeline(second, 8)
        assert (answers(first, 8), answers(second, 8)) == (8, 8)


def test_a_client_that_reads_in_pieces_inside_the_write_deadline_gets_the_whole_answer(
    timed: Address,
) -> None:
    # The megabyte fills the server's buffers (its writes pause) and is taken in pieces with
    # pauses; the deadline counts from when the writes stalled.
    with socket.create_connection(timed) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\n\r\n")
        received = b""
        sock.settimeout(EVENT_WAIT_S)
        while not received.endswith(b"0\r\n\r\n"):
            time.sleep(WRITE_TIMEOUT_S / 100)
            chunk = sock.recv(65536)
            assert chunk, f"cut after {len(received)} bytes"
            received += chunk
    assert received.count(b"x") == len(stream_app.BIG)


def test_a_malformed_request_gets_uvicorns_400(timed: Address) -> None:
    with socket.create_connection(timed) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.endswith(b"Invalid HTTP request received.")


def test_a_deadline_after_the_answer_began_closes_without_a_second_answer(
    timed: Address,
) -> None:
    # /early answers before reading its body; the body then stalls: a 408 after the 200 would
    # be read as part of it, so the connection just closes.
    with socket.create_connection(timed) as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nHost: lab\r\nContent-Length: 10\r\n\r\nhalf")
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.count(b"HTTP/1.1") == 1, answer
    assert not answer.endswith(b"<still open>")


def test_a_client_that_hangs_up_mid_answer_costs_one_debug_line(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    stream = open_stream(timed)
    peer = "{}:{}".format(*stream.getsockname())
    stream.close()
    said = f"{peer} hung up before its answer was sent"
    deadline = time.monotonic() + EVENT_WAIT_S
    while said not in caplog.messages:
        assert time.monotonic() < deadline, caplog.messages
        time.sleep(0.01)
    assert not [record for record in caplog.records if record.exc_info]
