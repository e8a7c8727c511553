"""``GuardedHttpProtocol`` served by a real uvicorn in this process (a thread, on loopback), with
deadlines of a fraction of a second: each refusal's status and words, the head size at its
limit, the connection cap, the streams it does not count, an unread answer dropped.

tests/test_server.py runs the shipped ``python -m app`` in a child process; these run the
protocol where the test runs, which is also where mutation testing (docs/testing.md) sees which
tests run which of its functions."""

import logging
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
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

# alone: the clients' pauses must stay inside deadlines of 0.3 to 1 s by wall time, which the
# parallel tests share: beside them, clean-clone CI runs on a slow day saw the server give up early.
pytestmark = [pytest.mark.server, pytest.mark.alone]


# Each server's settings, by the thread it runs in: the protocol reads them (get_settings) as a
# connection is made, in its server's thread, and two servers may run at once.
SETTINGS_BY_THREAD: dict[int | None, Settings] = {}


def settings_of_this_server() -> Settings:
    return SETTINGS_BY_THREAD[threading.get_ident()]


@contextmanager
def guarded(uds: str | None = None, **limits: float) -> Iterator[Address]:
    """A uvicorn with ``GuardedHttpProtocol`` serving tests/stream_app.py under ``limits``, on
    loopback (or on the Unix socket ``uds``)."""
    port = free_port()
    config = uvicorn.Config(
        stream_app.app,
        host="127.0.0.1",
        port=port,
        uds=uds,
        http=server.GuardedHttpProtocol,
        lifespan="off",
        log_config=None,  # the test's logging (caplog) stays as it is
        log_level="warning",
        timeout_keep_alive=300,
    )
    instance = uvicorn.Server(config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server, "get_settings", settings_of_this_server)
        thread = threading.Thread(target=instance.run, daemon=True)
        thread.start()
        SETTINGS_BY_THREAD[thread.ident] = Settings(confirm_enabled=False, **limits)
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
            SETTINGS_BY_THREAD.pop(thread.ident)


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


@pytest.fixture(scope="module")
def capped() -> Iterator[Address]:
    """Room for two connections; no deadline a test would meet."""
    with guarded(
        max_connections=2, header_timeout_s=300, body_timeout_s=300, write_timeout_s=300
    ) as address:
        yield address


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Wait until ``condition`` holds (an event in the server's thread); fail if it never does."""
    deadline = time.monotonic() + EVENT_WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def fresh(asked: str) -> str:
    """``asked`` made unique (mutation testing runs the tests again in one process, where the
    app's records stay): a tag added to its path, or to its query."""
    tag = uuid.uuid4().hex[:8]
    return f"{asked}&{tag}" if "?" in asked else f"{asked}-{tag}"


def get(asked: str) -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: lab\r\n\r\n" % asked.encode()


def started(asked: str) -> bool:
    """Whether the app has been given the request for ``asked`` (path and query)."""
    return any(path == asked for path, _ in stream_app.STARTED)


def peer_of(sock: socket.socket) -> str:
    """How the server's log names this client."""
    return "{}:{}".format(*sock.getsockname())


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The log's errors and tracebacks (the server's loop logs an exception in a callback so)."""
    return [
        record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR
    ]


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
    begun = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
        answer = read_all(sock, EVENT_WAIT_S)
    assert time.monotonic() - begun >= HEAD_TIMEOUT_S
    assert_refused(answer, "408 Request Timeout", "Request headers not completed in time.")


def test_a_silent_connection_and_an_idle_kept_alive_one_are_closed_without_a_word(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    peers = []
    begun = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        peers.append(peer_of(sock))
        assert read_all(sock, EVENT_WAIT_S) == b""
    assert time.monotonic() - begun >= HEAD_TIMEOUT_S
    with socket.create_connection(timed) as sock:
        peers.append(peer_of(sock))
        begun = time.monotonic()  # the idle clock starts once the answer is sent: later
        assert answered(sock, b"/")
        assert read_all(sock, EVENT_WAIT_S) == b""
    assert time.monotonic() - begun >= HEAD_TIMEOUT_S
    # The server closed them (the log has it before the client sees the close): nobody hung
    # up, nothing went wrong.
    assert not [said for said in caplog.messages if said.startswith(tuple(peers))]
    assert not errors(caplog)


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


def test_a_stalled_body_gets_408_naming_its_setting(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    begun = time.monotonic()  # before the server's clock: it starts as it accepts
    with socket.create_connection(timed) as sock:
        peer = peer_of(sock)
        # Half the body: the rate's allowance for it (50 ms past the grace) leaves the pause
        # the first deadline, even on a server slowed down (by mutation testing's tracing).
        sock.sendall(b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n" + b"x" * 50)
        answer = read_all(sock, EVENT_WAIT_S)
    assert time.monotonic() - begun >= BODY_TIMEOUT_S
    assert_refused(
        answer,
        "408 Request Timeout",
        f"Request body stalled: nothing arrived for {BODY_TIMEOUT_S:g} s (ATLAS_BODY_TIMEOUT_S).",
    )
    # Its app was reading the body when the server refused it: the client did not hang up.
    assert f"{peer} hung up before its answer was sent" not in caplog.messages


def test_a_body_under_the_minimum_rate_gets_408_after_the_grace(timed: Address) -> None:
    # A byte every 0.05 s never pauses for the stall deadline but is far under the rate.
    begun = time.monotonic()
    answer = trickle_to(timed, 1_000, b" ", every_s=0.05, limit_s=EVENT_WAIT_S)
    assert time.monotonic() - begun >= BODY_TIMEOUT_S
    assert_refused(
        answer,
        "408 Request Timeout",
        f"Request body too slow: under {MIN_RATE:g} bytes a second (ATLAS_MIN_UPLOAD_RATE).",
    )


def test_a_body_at_a_fair_rate_but_too_long_meets_the_request_deadline(timed: Address) -> None:
    # 500 bytes every 0.05 s is ten times the minimum rate; the request still ends in time.
    begun = time.monotonic()
    answer = trickle_to(timed, 900_000, b" " * 500, every_s=0.05, limit_s=EVENT_WAIT_S)
    assert time.monotonic() - begun >= REQUEST_TIMEOUT_S
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
        said = f"{peer_of(sock)}: answer not read within {WRITE_TIMEOUT_S:g} s; dropped"
        begun = time.monotonic()
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\n\r\n")
        # The client never reads; the operator's debug log names it and the deadline.
        wait_for(lambda: said in caplog.messages, "the unread answer was never dropped")
        assert time.monotonic() - begun >= WRITE_TIMEOUT_S
        received = read_all(sock, EVENT_WAIT_S)
    # The connection ended (reset or closed) with most of the megabyte never sent.
    assert not received.endswith(b"<still open>")
    assert len(received) < len(stream_app.BIG) // 2


def test_the_cap_closes_the_connection_longest_without_progress_not_the_oldest(
    capped: Address,
) -> None:
    with (
        socket.create_connection(capped) as first,
        socket.create_connection(capped) as second,
    ):
        assert answered(first, b"/")
        assert answered(second, b"/")
        assert answered(first, b"/")
        with socket.create_connection(capped) as third:
            assert answered(third, b"/")
            assert answered(first, b"/"), "the oldest connection was closed, not the idlest"
            assert read_all(second, EVENT_WAIT_S) == b"", "the idlest connection is still open"


def open_stream(address: Address, path: bytes = b"/stream") -> socket.socket:
    sock = socket.create_connection(address)
    sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: lab\r\n\r\n")
    sock.settimeout(EVENT_WAIT_S)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    return sock


def test_past_the_cap_a_slow_body_is_cut_a_reading_stream_never_and_else_503(
    capped: Address,
) -> None:
    streams = [open_stream(capped)]
    with socket.create_connection(capped) as slow:
        slow.sendall(b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n ")
        streams.append(open_stream(capped))
        assert_refused(
            read_all(slow, EVENT_WAIT_S),
            "408 Request Timeout",
            "Request too slow: closed to make room for other connections.",
        )
    try:
        with socket.create_connection(capped) as extra:
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
        begun = time.monotonic()
        sock.sendall(b"x" * 10)
        assert read_all(sock, EVENT_WAIT_S) == b""
        assert time.monotonic() - begun >= HEAD_TIMEOUT_S


def pipeline(sock: socket.socket, count: int) -> None:
    sock.sendall(b"".join(b"GET /%d HTTP/1.1\r\nHost: lab\r\n\r\n" % n for n in range(count)))


def read_answers(sock: socket.socket, count: int, received: bytes = b"") -> bytes:
    """Read on from ``received`` until ``count`` whole answers of tests/stream_app.py (chunked,
    all 200) have come, or the server closes: what came."""
    sock.settimeout(EVENT_WAIT_S)
    while received.count(b"HTTP/1.1 200") < count or not received.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def answers(sock: socket.socket, count: int) -> int:
    """Read until ``count`` whole answers have come (or the server closes): how many came."""
    return read_answers(sock, count).count(b"HTTP/1.1 200")


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


def test_an_answer_taken_to_its_end_is_not_dropped_when_its_write_deadline_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The answer's last bytes were still buffered as it ended, so the write deadline counts for
    # them; the client takes them all, and the deadline passes with nothing unsent: the
    # connection stays, until idle for ATLAS_HEADER_TIMEOUT_S, then closes without a word.
    with guarded(write_timeout_s=0.3, header_timeout_s=0.8) as address:
        caplog.set_level(logging.DEBUG, logger="uvicorn.error")  # uvicorn set its level
        with unread_socket(address) as sock:
            peer = peer_of(sock)
            sock.sendall(get("/big?pieces"))
            assert read_answers(sock, 1).count(b"x") == len(stream_app.BIG)
            assert read_all(sock, EVENT_WAIT_S) == b""
    assert not [said for said in caplog.messages if said.startswith(peer)]
    assert not errors(caplog)


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


def unread_socket(address: Address) -> socket.socket:
    """A connection to ``address`` whose client holds little unread (a 4 KiB receive buffer):
    an answer it does not read stays on the server."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(address)
    return sock


def served(address: Address) -> None:
    """Two requests pipelined on a fresh connection, both answered: the server has since read
    whatever other clients had sent before (and started any pipelined request queued before)."""
    with socket.create_connection(address) as sock:
        pipeline(sock, 2)
        assert answers(sock, 2) == 2


def test_a_request_sent_whole_reaches_the_app_though_its_client_hangs_up_at_once(
    timed: Address,
) -> None:
    # A form sent just before its tab closes still counts: the first request of a connection,
    # or one after an answer.
    first, later = fresh("/gone-first"), fresh("/gone-later")
    post = "POST {} HTTP/1.1\r\nHost: lab\r\nContent-Length: 2\r\n\r\nok"
    with socket.create_connection(timed) as sock:
        sock.sendall(post.format(first).encode())
    with socket.create_connection(timed) as sock:
        assert answered(sock, b"/")
        sock.sendall(post.format(later).encode())
    wait_for(lambda: started(first), "the first request never reached the app")
    wait_for(lambda: started(later), "the request after an answer never reached the app")


def test_pipelined_requests_start_one_gap_apart_across_the_worker(timed: Address) -> None:
    # Two clients pipeline 20 requests each: after each one's first, they take turns, one
    # every PIPELINE_GAP_S across the worker (the first of them may begin its work a little
    # after its turn, so the span is allowed a quarter less).
    count = 20
    gap = fresh("/gap")
    before = len(stream_app.STARTED)
    with (
        socket.create_connection(timed) as first,
        socket.create_connection(timed) as second,
    ):
        for sock, name in ((first, "a"), (second, "b")):
            asked = (get(f"{gap}-{name}-{n}") for n in range(count))
            sock.sendall(b"".join(asked))
        assert (answers(first, count), answers(second, count)) == (count, count)
    turns = sorted(
        at
        for asked, at in stream_app.STARTED[before:]
        if asked.startswith(gap) and not asked.endswith("-0")
    )
    assert len(turns) == 2 * (count - 1)
    assert turns[-1] - turns[0] >= 0.75 * (len(turns) - 1) * server.PIPELINE_GAP_S


def test_no_request_starts_while_the_previous_answer_waits_for_its_reader(
    timed: Address,
) -> None:
    # A client that asks for more without reading what it was sent gets nothing more done
    # until it reads: its next request waits (the app is not given it), then is answered, and
    # the connection goes on serving.
    with unread_socket(timed) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\n\r\n")
        sock.settimeout(EVENT_WAIT_S)
        received = sock.recv(65536)  # the answer has begun: the app has handed all of it over
        after = fresh("/after-big")
        sock.sendall(get(after))
        served(timed)
        assert not started(after)
        received = read_answers(sock, 2, received)
        assert received.count(b"x") == len(stream_app.BIG)
        assert received.endswith(b"\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        assert answered(sock, b"/")


def test_a_client_that_hangs_up_while_its_next_request_waits_costs_one_debug_line(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    with unread_socket(timed) as sock:
        said = f"{peer_of(sock)} hung up before its answer was sent"
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\n\r\n")
        sock.settimeout(EVENT_WAIT_S)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        after = fresh("/after-big")
        sock.sendall(get(after))
        served(timed)
    wait_for(lambda: said in caplog.messages, "the hang-up was not logged")
    served(timed)  # the hang-up has been handled whole
    assert caplog.messages.count(said) == 1
    assert not errors(caplog)
    assert not started(after)


def test_a_stream_asked_behind_another_request_learns_its_client_left(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    # The stream starts in its turn, with a third request waiting behind it; once its client
    # hangs up the stream's app is told, and ends as it does for a stream asked first (not by
    # failing to write to a closed connection: a traceback in the log).
    stream, third = fresh("/stream?behind"), fresh("/third")
    with socket.create_connection(timed) as sock:
        sock.sendall(get("/") + get(stream) + get(third))
        received = b""
        sock.settimeout(EVENT_WAIT_S)
        while b"data: 1\n\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    wait_for(lambda: stream in stream_app.ENDED, "the stream's app was never told")
    served(timed)  # the stream's end has been handled whole
    assert not errors(caplog)
    assert not started(third)


def test_a_head_that_waits_while_the_server_does_not_read_it_is_not_timed(
    timed: Address,
) -> None:
    # The client sends its whole third request, but the server stops reading while the second
    # waits its turn behind a slow first answer (longer than HEAD_TIMEOUT_S): what it has read of
    # the third head is not late, and all three are answered.
    slow, third = fresh(f"/slow?{1.5 * HEAD_TIMEOUT_S:g}"), fresh("/third")
    with socket.create_connection(timed) as sock:
        sock.sendall(get(slow))
        wait_for(lambda: started(slow), "the slow request never started")
        sock.sendall(get("/") + get(third)[:20])
        served(timed)  # the server has read up to here, and stopped reading
        sock.sendall(get(third)[20:])
        received = read_answers(sock, 3)
    assert received.count(b"HTTP/1.1 200") == 3, received
    assert started(third)


def test_a_kept_alive_connections_next_head_is_timed_from_the_answer_not_its_first_byte(
    timed: Address,
) -> None:
    # The next head is due HEAD_TIMEOUT_S after the previous answer. A client that starts it
    # late (0.7 of that) and would finish it later still (1.35, within HEAD_TIMEOUT_S of its
    # first byte) is cut when it is due, and told so in full: the earlier answer was whole.
    with socket.create_connection(timed) as sock:
        assert answered(sock, b"/")
        answered_at = time.monotonic()
        sock.settimeout(0.7 * HEAD_TIMEOUT_S)
        with pytest.raises(TimeoutError):  # the client's pause: the server has nothing to say
            sock.recv(65536)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n")
        sock.settimeout(max(0.0, answered_at + 1.35 * HEAD_TIMEOUT_S - time.monotonic()))
        try:
            answer = sock.recv(65536)
        except TimeoutError:
            sock.sendall(b"\r\n")  # not cut when it was due: the head completes
            answer = b""
        answer += read_all(sock, EVENT_WAIT_S)
    assert_refused(answer, "408 Request Timeout", "Request headers not completed in time.")


def test_a_head_begun_behind_an_answer_is_timed_from_its_first_byte_and_told_when_cut(
    timed: Address,
) -> None:
    # A whole request and the start of the next in one packet: the first is answered; the
    # second, never finished, is cut HEAD_TIMEOUT_S after it began, with its 408 after the 200.
    with socket.create_connection(timed) as sock:
        sock.sendall(get("/") + b"GET / HTTP/1.1\r\nHost: lab\r\n")
        answer = read_all(sock, EVENT_WAIT_S)
    first, found, second = answer.partition(b"HTTP/1.1 408")
    assert first.startswith(b"HTTP/1.1 200"), answer
    assert first.endswith(b"\r\n\r\n2\r\nok\r\n0\r\n\r\n"), answer
    assert_refused(found + second, "408 Request Timeout", "Request headers not completed in time.")


def test_a_head_cut_behind_a_stream_closes_it_without_a_word_in_the_stream(timed: Address) -> None:
    # A 408 written while the stream's answer is being written would be read as part of it.
    with socket.create_connection(timed) as sock:
        sock.sendall(get(fresh("/stream?ahead")) + b"GET / HTTP/1.1\r\nHost: lab\r\n")
        answer = read_all(sock, EVENT_WAIT_S)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert b"data: 1" in answer
    assert answer.count(b"HTTP/1.1") == 1, answer


def test_a_request_deadline_shorter_than_the_heads_cuts_a_slow_head() -> None:
    with (
        guarded(header_timeout_s=300, request_timeout_s=0.3) as address,
        socket.create_connection(address) as sock,
    ):
        sock.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
        answer = read_all(sock, EVENT_WAIT_S)
    words = "Request not completed within 0.3 s (ATLAS_REQUEST_TIMEOUT_S)."
    assert_refused(answer, "408 Request Timeout", words)


def test_an_unread_answer_is_dropped_though_a_request_waits_behind_it(
    timed: Address, caplog: pytest.LogCaptureFixture
) -> None:
    # The server stops reading while the second request waits its turn; that time is not the
    # client's fault for its head, but its unread answer is its own: dropped when due.
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    with unread_socket(timed) as sock:
        said = f"{peer_of(sock)}: answer not read within {WRITE_TIMEOUT_S:g} s; dropped"
        big, behind = fresh("/big?pieces"), fresh("/behind")
        sock.sendall(get(big))
        wait_for(lambda: started(big), "the answer never started")
        sock.sendall(get(behind))
        wait_for(lambda: said in caplog.messages, "the unread answer was never dropped")
        received = read_all(sock, EVENT_WAIT_S)
    assert not received.endswith(b"<still open>")
    assert len(received) < len(stream_app.BIG) // 2
    assert not started(behind)


def test_the_cap_counts_a_streams_connection_again_once_the_stream_ends_or_it_closes() -> None:
    with guarded(max_connections=1, header_timeout_s=300) as address:
        # A stream that ends on a kept-alive connection: the next connection makes room by
        # closing it (idle now), as for any other.
        with socket.create_connection(address) as first:
            first.sendall(b"GET /stream?own-cap&events=2 HTTP/1.1\r\nHost: lab\r\n\r\n")
            assert read_answers(first, 1).endswith(b"data: 2\n\n\r\n0\r\n\r\n")
            with socket.create_connection(address) as second:
                assert answered(second, b"/")
                assert read_all(first, EVENT_WAIT_S) == b""
        # A stream that never says it ended: its connection's close is enough.
        kept = fresh("/stream?own-cap&keep")
        with socket.create_connection(address) as stream:
            stream.sendall(get(kept))
            stream.settimeout(EVENT_WAIT_S)
            assert stream.recv(65536).startswith(b"HTTP/1.1 200")
        wait_for(lambda: kept in stream_app.ENDED, "the stream never ended")
        with socket.create_connection(address) as first:
            assert answered(first, b"/")
            with socket.create_connection(address) as second:
                assert answered(second, b"/")
                assert read_all(first, EVENT_WAIT_S) == b""
    # And the worker forgets every closed connection (no bookkeeping grows with the clients).
    registry = server.GuardedHttpProtocol
    wait_for(
        lambda: (
            not registry.streaming
            and not any(known.transport.is_closing() for known in list(registry.by_progress))
        ),
        "a closed connection is still remembered",
    )


def test_past_the_cap_a_client_still_reading_its_last_answer_is_not_cut(
    capped: Address,
) -> None:
    # An answer that closes its connection (Connection: close) is still being sent: the client
    # reads it as it can. Past the cap the idle connection is closed, not that one.
    with unread_socket(capped) as reader:
        reader.sendall(b"GET /big HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
        reader.settimeout(EVENT_WAIT_S)
        received = reader.recv(65536)  # begun: the app has handed all of it over
        with socket.create_connection(capped) as idle:
            assert answered(idle, b"/")
            with socket.create_connection(capped) as third:
                assert answered(third, b"/")
                assert read_all(idle, EVENT_WAIT_S) == b""
        received += read_all(reader, EVENT_WAIT_S)
    assert received.count(b"x") == len(stream_app.BIG)
    assert received.endswith(b"0\r\n\r\n")


def test_past_the_cap_connections_whose_apps_work_are_kept_and_the_new_one_gets_503(
    capped: Address,
) -> None:
    # Each connection was answered once and asked again; its app works on it: neither is cut.
    with (
        socket.create_connection(capped) as first,
        socket.create_connection(capped) as second,
    ):
        held = [fresh("/hold?first"), fresh("/hold?second")]
        for sock, asked in zip((first, second), held, strict=True):
            assert answered(sock, b"/")
            sock.sendall(get(asked))
        wait_for(lambda: all(started(asked) for asked in held), "not both held")
        with socket.create_connection(capped) as extra:
            assert_refused(
                read_all(extra, EVENT_WAIT_S),
                "503 Service Unavailable",
                "Too many connections; try again shortly.",
            )
        for sock in (first, second):
            sock.settimeout(0)
            with pytest.raises(BlockingIOError):  # still open, nothing more said
                sock.recv(1)


def test_a_client_on_a_unix_socket_is_named_client_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Behind a proxy on a Unix socket the server knows no client address.
    with tempfile.TemporaryDirectory(prefix="atlas-") as folder:
        path = os.path.join(folder, "web.sock")
        with guarded(uds=path), socket.socket(socket.AF_UNIX) as sock:
            caplog.set_level(logging.DEBUG, logger="uvicorn.error")  # uvicorn set its level
            sock.connect(path)
            sock.sendall(b"GET /stream HTTP/1.1\r\nHost: lab\r\n\r\n")
            sock.settimeout(EVENT_WAIT_S)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
            sock.close()
            said = "client hung up before its answer was sent"
            wait_for(lambda: said in caplog.messages, caplog.messages)
