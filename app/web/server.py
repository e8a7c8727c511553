"""uvicorn's HTTP protocol with the limits a server on a shared network needs.

uvicorn parses a request's head itself, before the app sees anything, and by default waits for
it, for its body and for its client to read the answer forever: a client that sends slowly or
never reads holds a socket (and the answer's memory) until the server runs out of them.
``GuardedHttpProtocol`` (httptools, as ``uvicorn --http auto`` picks) adds, per connection:

* a **head timeout** (``ATLAS_HEADER_TIMEOUT_S``): from connecting, and again from the end of
  each answer, the client has that long to complete a request's headers, or it is closed
  (408 if it had started one);
* a **head size limit** (``ATLAS_MAX_HEADER_BYTES``): once the request line plus headers pass
  it, the connection gets 431 and is closed, before the rest is read;
* **body deadlines**: a body that pauses for ``ATLAS_BODY_TIMEOUT_S``, or arrives slower than
  ``ATLAS_MIN_UPLOAD_RATE`` bytes a second (after a first ``ATLAS_BODY_TIMEOUT_S`` of grace),
  gets 408; and the whole request, head and body, must arrive within
  ``ATLAS_REQUEST_TIMEOUT_S`` of its first byte. Time the server itself stops reading (a
  pipelined request waiting its turn) is not counted against the client;
* a **write timeout** (``ATLAS_WRITE_TIMEOUT_S``): an answer the client does not read (the
  socket's buffer stays full, or an answer stays unsent) for that long is dropped. Each socket's
  kernel send buffer is 64 KiB, so an unread answer costs little memory;
* a **connection cap** (``ATLAS_MAX_CONNECTIONS``, per worker): past it, the connection that
  has gone longest without sending a byte or taking any of its answer is closed to make room (a
  request in progress gets 408; one that trickles fast enough to look alive is cut by its own
  deadlines). A connection whose app is working, or writing to a client that reads (a live
  stream), is never chosen; if every connection is such, the new one gets 503. There is no
  per-address cap: a class behind one school address is many clients, not one;
* **pipelined requests wait their turn**: one is started every ``PIPELINE_GAP_S`` (5 ms) across
  the worker, and none while the previous answer waits for its reader, so clients that pipeline
  many requests and read slowly (or never) take at most about half of the worker, and every
  other request goes on between their answers;
* **hang-ups** are a normal event: a client that leaves with answers unsent (pipelined ones
  too) makes one debug line; its answers are dropped unwritten, never a traceback.

Use it with ``python -m app`` (see ``app/__main__.py``), or add
``--http app.web.server:GuardedHttpProtocol`` to a uvicorn command line. Without it (plain
``uvicorn app.main:app``) none of this holds: uvicorn waits for a body, and for a reader, as
long as the client keeps the connection open.
"""

import asyncio
import socket
import time
from collections import deque
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from app.settings import get_settings

# Each socket's kernel send buffer (Linux doubles it for its own bookkeeping): an unread answer
# holds at most this in the kernel, instead of the megabytes autotuning grants on a fast link.
SEND_BUFFER_BYTES = 65_536
# Pipelined requests start one at a time this far apart (per worker): a client that pipelines
# many and never reads them takes at most about half of the worker (a lesson page is a few
# milliseconds of work), and every other request goes on between them.
PIPELINE_GAP_S = 0.005


def raw_response(status: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection (written below the ASGI app)."""
    body = message.encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nx-content-type-options: nosniff\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class _HeadTooLargeError(Exception):
    """Raised inside the parser's callback to stop parsing a refused head."""


# What the parser is receiving: nothing yet (idle, waiting for a request), a request's head, its
# body, or nothing more (the request is whole; the app has it).
IDLE, HEAD, BODY, DONE = "idle", "head", "body", "done"


class GuardedHttpProtocol(HttpToolsProtocol):
    """httptools protocol with deadlines, a write timeout and a fair connection cap."""

    # This worker's connections whose next pipelined request waits to start, in turn (one event
    # loop per worker process, so a class attribute is per worker).
    _pipelined: deque["GuardedHttpProtocol"] = deque()  # noqa: RUF012
    # This worker's open connections, the one that progressed longest ago first.
    by_progress: dict["GuardedHttpProtocol", None] = {}  # noqa: RUF012

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        settings = get_settings()
        self.head_timeout_s = settings.header_timeout_s
        self.body_timeout_s = settings.body_timeout_s
        self.min_upload_rate = settings.min_upload_rate
        self.request_timeout_s = settings.request_timeout_s
        self.write_timeout_s = settings.write_timeout_s
        self.max_head_bytes = settings.max_header_bytes
        self.max_connections = settings.max_connections
        self._receiving = IDLE
        self._since = time.monotonic()  # when the current wait (idle, head) began
        self._request_started = 0.0  # first byte of the request being received
        self._head_bytes = 0  # of the request line and headers parsed so far
        self._body_started = 0.0
        self._body_last = 0.0
        self._body_bytes = 0
        self._stalled_since: float | None = None  # an answer waits for its reader since then
        self._running: RequestResponseCycle | None = None  # the cycle whose app task runs
        self._deferred: tuple[RequestResponseCycle, Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # when it fires (time.monotonic)
        self._refused = False
        self._answering = False

    # ---- state ---------------------------------------------------------------------------------

    def _app_busy(self) -> bool:
        """The app has a request it has not finished answering (or one waits its turn)."""
        running = self._running is not None and not self._running.response_complete
        return running or bool(self.pipeline) or self._deferred is not None

    def _deadline(self) -> tuple[float, str] | None:
        """The next moment this connection is cut, and why; None while nothing is timed."""
        found: list[tuple[float, str]] = []
        if self._stalled_since is not None:
            found.append((self._stalled_since + self.write_timeout_s, "unread"))
        if self._receiving == IDLE and not self._app_busy():
            found.append((self._since + self.head_timeout_s, "idle"))
        elif self._receiving == HEAD:
            found.append((self._since + self.head_timeout_s, "head"))
            found.append((self._request_started + self.request_timeout_s, "request"))
        elif self._receiving == BODY:
            found.append((self._body_last + self.body_timeout_s, "pause"))
            grace = self._body_started + self.body_timeout_s
            found.append((grace + self._body_bytes / self.min_upload_rate, "rate"))
            found.append((self._request_started + self.request_timeout_s, "request"))
        return min(found) if found else None

    def _schedule(self) -> None:
        """Arm the timer for the next deadline, unless it already fires earlier (progress only
        moves a deadline later, so a timer that fires early just re-arms)."""
        deadline = self._deadline()
        if deadline is None or (self._timer is not None and self._timer_at <= deadline[0]):
            return
        self._cancel_timer()
        self._timer_at = deadline[0]
        self._timer = self.loop.call_later(
            max(0.0, deadline[0] - time.monotonic()), self._timer_fired
        )

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timer_fired(self) -> None:
        self._timer = None
        if self.transport.is_closing() and self._stalled_since is None:
            return
        deadline = self._deadline()
        if deadline is None:
            return
        now = time.monotonic()
        if deadline[0] > now:
            self._schedule()
            return
        if deadline[1] != "unread" and self.flow.read_paused:
            # The server stopped reading (a pipelined request waits its turn): the client is not
            # late; its clocks start again once it is read.
            self._since = self._request_started = self._body_started = self._body_last = now
            self._body_bytes = 0
            self._schedule()
            return
        self._cut(deadline[1])

    def _cut(self, reason: str) -> None:
        if reason == "unread":
            if self.transport.get_write_buffer_size() == 0:
                self._stalled_since = None
                self._schedule()
                return
            self.logger.debug(
                "%s: answer not read within %g s; dropped", self._peer(), self.write_timeout_s
            )
            self._abandon()
            self.transport.abort()
        elif reason == "idle":
            self.transport.close()
        elif reason == "head":
            self._refuse("408 Request Timeout", "Request headers not completed in time.")
        elif reason == "request":
            self._refuse(
                "408 Request Timeout",
                f"Request not completed within {self.request_timeout_s:g} s"
                " (ATLAS_REQUEST_TIMEOUT_S).",
            )
        elif reason == "pause":
            self._refuse(
                "408 Request Timeout",
                f"Request body stalled: nothing arrived for {self.body_timeout_s:g} s"
                " (ATLAS_BODY_TIMEOUT_S).",
            )
        else:
            self._refuse(
                "408 Request Timeout",
                f"Request body too slow: under {self.min_upload_rate:g} bytes a second"
                " (ATLAS_MIN_UPLOAD_RATE).",
            )

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "client"

    def _abandon(self) -> None:
        """Nobody will read this connection's answers: the app's writes become no-ops (uvicorn
        marks only the newest request's cycle, not the running or pipelined ones)."""
        cycles = [self._running, self.cycle, *(cycle for cycle, _ in self.pipeline)]
        if self._deferred is not None:
            cycles.append(self._deferred[0])
        for cycle in cycles:
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()

    def _refuse(self, status: str, message: str) -> None:
        """Answer ``status`` and close; only close if an answer to this request has begun (or
        an earlier one is half-written), since more bytes would corrupt it."""
        # uvicorn makes a request's cycle once its head is complete: until then ``self.cycle``
        # is the previous request's.
        current = self.cycle if self._receiving in (BODY, DONE) else None
        running = self._running
        begun = (current is not None and current.response_started) or (
            running is not None and running.response_started and not running.response_complete
        )
        self._refused = True
        self._abandon()
        if not self.transport.is_closing():
            if not begun:
                self.transport.write(raw_response(status, message))
            self.transport.close()
            self._watch_writes()

    def _watch_writes(self) -> None:
        """Time an answer still in the transport's buffer until its reader takes it."""
        if self._stalled_since is None and self.transport.get_write_buffer_size() > 0:
            self._stalled_since = time.monotonic()
            self._schedule()

    # ---- the connection cap --------------------------------------------------------------------

    def _evictable(self) -> bool:
        """Whether this connection may be closed for room: not if its app is working, or
        writing to a client that reads (a live stream)."""
        if self.transport.is_closing():
            return False
        return self._stalled_since is not None or self._receiving == BODY or not self._app_busy()

    def _make_room(self) -> None:
        """Close the connection that has gone longest without sending a byte or taking one of
        its answer's (a slow trickle is cut by its own deadlines): the first evictable one in
        ``by_progress``, usually the very first."""
        for other in self.by_progress:
            if other is not self and other._evictable():
                other._evict()
                return
        self._refuse("503 Service Unavailable", "Too many connections; try again shortly.")

    def _progressed(self) -> None:
        """The client sent a byte or took some of an answer (or connected, or was answered)."""
        self.by_progress.pop(self, None)
        self.by_progress[self] = None

    def _evict(self) -> None:
        if self._stalled_since is not None:
            self._abandon()
            self.transport.abort()
        elif self._receiving in (HEAD, BODY):
            self._refuse(
                "408 Request Timeout",
                "Request too slow: closed to make room for other connections.",
            )
        else:
            self.transport.close()

    # ---- uvicorn's callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        self._progressed()
        self._since = time.monotonic()
        self._schedule()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self.by_progress.pop(self, None)
        self._cancel_timer()
        self._stalled_since = None
        if self._app_busy() and not self._refused:
            self.logger.debug("%s hung up before its answer was sent", self._peer())
        self._abandon()
        self._deferred = None
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        if not self._refused:  # the parser stopped because this head was refused: answered
            self._abandon()
            super().send_400_response(msg)

    def data_received(self, data: bytes) -> None:
        self._progressed()
        super().data_received(data)

    def on_message_begin(self) -> None:
        now = time.monotonic()
        if self._receiving != IDLE:  # a pipelined request: its head's wait starts now
            self._since = now
        self._receiving = HEAD
        self._request_started = now
        self._head_bytes = 0
        super().on_message_begin()
        self._schedule()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.max_head_bytes:
            self._refuse(
                "431 Request Header Fields Too Large",
                f"Request line and headers larger than {self.max_head_bytes} bytes"
                " (ATLAS_MAX_HEADER_BYTES).",
            )
            raise _HeadTooLargeError

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)  # "name: value\r\n"
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._receiving = BODY
        self._body_started = self._body_last = time.monotonic()
        self._body_bytes = 0
        super().on_headers_complete()
        self._schedule()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        self._body_last = time.monotonic()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._receiving = DONE
        super().on_message_complete()
        self._await_next_if_answered()

    def _await_next_if_answered(self) -> None:
        """Once a request is whole and answered (an app may answer before reading the body),
        the connection waits for the next request, timed from now."""
        if self._receiving == DONE and not self._app_busy() and not self.transport.is_closing():
            self._receiving = IDLE
            self._progressed()
            self._since = time.monotonic()
            self._schedule()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        if self._answering or self.flow.write_paused:
            self._deferred = (cycle, app)
            self._queue_deferred()
            return
        self._running = cycle
        super()._start_asgi_task(cycle, app)

    def _queue_deferred(self) -> None:
        """Queue this connection's pipelined request behind the worker's others (see the module
        doc); not while the previous answer waits for its reader (``resume_writing`` queues it)."""
        if self.flow.write_paused or self in self._pipelined:
            return
        self._pipelined.append(self)
        if len(self._pipelined) == 1:
            self.loop.call_later(PIPELINE_GAP_S, self._start_next_pipelined, self.loop)

    @classmethod
    def _start_next_pipelined(cls, loop: asyncio.AbstractEventLoop) -> None:
        if cls._pipelined:
            protocol = cls._pipelined.popleft()
            deferred, protocol._deferred = protocol._deferred, None
            if deferred is not None and not protocol.transport.is_closing():
                protocol._running = deferred[0]
                HttpToolsProtocol._start_asgi_task(protocol, *deferred)
        if cls._pipelined:
            loop.call_later(PIPELINE_GAP_S, cls._start_next_pipelined, loop)

    def on_response_complete(self) -> None:
        self._answering = True  # a pipelined request started from here is queued
        try:
            super().on_response_complete()
        finally:
            self._answering = False
        if self.transport.is_closing():
            return
        self._await_next_if_answered()
        self._watch_writes()
        self._schedule()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled_since is None:
            self._stalled_since = time.monotonic()
            self._schedule()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stalled_since = None
        self._progressed()
        self._watch_writes()
        if self._deferred is not None and not self.transport.is_closing():
            self._queue_deferred()
