"""uvicorn's HTTP protocol with the limits a server on a shared network needs.

uvicorn parses a request's head itself, before the app sees anything, and by default waits for
it, for its body and for its client to read the answer forever: a client that sends slowly or
never reads holds a socket (and the answer's memory) until the server runs out of them.
``GuardedHttpProtocol`` (httptools, as ``uvicorn --http auto`` picks) adds, per connection (the
settings are in the README's table; docs/deployment.md says what they withstand):

* the **head**: complete within ``ATLAS_HEADER_TIMEOUT_S`` of connecting or of the previous
  answer (else closed; 408 if a request had begun), at most ``ATLAS_MAX_HEADER_BYTES`` (431);
* the **body**: 408 for a pause of ``ATLAS_BODY_TIMEOUT_S``, a rate under
  ``ATLAS_MIN_UPLOAD_RATE`` after that grace, or a whole request over ``ATLAS_REQUEST_TIMEOUT_S``
  from its first byte. Time the server itself stops reading (a pipelined request waiting its
  turn) is not counted against the client;
* an **unread answer** is dropped after ``ATLAS_WRITE_TIMEOUT_S``; meanwhile it holds at most
  the socket's 64 KiB send buffer in the kernel;
* a **connection cap** (``ATLAS_MAX_CONNECTIONS`` per worker): past it the connection that has
  gone longest without sending a byte or taking any of its answer is closed, never one whose app
  is working or whose client reads; 503 if every one is such. No per-address cap: a class behind
  one school address is many clients, not one. A connection that carries a live-class stream is
  not counted (the app says so through ``CONNECTION_SCOPE_KEY``): streams have their own cap,
  ``ATLAS_MAX_STREAMS`` (app/live/streams.py), so they never take the room of a request;
* **pipelined requests** start one every ``PIPELINE_GAP_S`` across the worker, none while the
  previous answer waits for its reader: clients that pipeline and never read take at most about
  half of the worker;
* a **hang-up** is a normal event: one debug line, its answers dropped unwritten, no traceback.

Use it with ``python -m app`` or ``uvicorn --http app.web.server:GuardedHttpProtocol``. Without it
(plain ``uvicorn --factory app.main:create_app``) none of this holds.
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
# Pipelined requests start one at a time this far apart (per worker); a lesson page is a few
# milliseconds of work, so every other request goes on between them.
PIPELINE_GAP_S = 0.005
# Where a request's scope holds its connection's protocol, for the app to say that the
# connection carries a stream (GuardedHttpProtocol.carries_stream).
CONNECTION_SCOPE_KEY = "atlas.connection"


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
    # This worker's connections that carry a stream: not counted against the connection cap.
    streaming: set["GuardedHttpProtocol"] = set()  # noqa: RUF012

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = get_settings()
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
        limits = self.limits
        found: list[tuple[float, str]] = []
        if self._stalled_since is not None:
            found.append((self._stalled_since + limits.write_timeout_s, "unread"))
        if self.transport.is_closing():  # nothing more is read: only an unsent answer is timed
            return found[0] if found else None
        if self._receiving == IDLE and not self._app_busy():
            found.append((self._since + limits.header_timeout_s, "idle"))
        elif self._receiving == HEAD:
            found.append((self._since + limits.header_timeout_s, "head"))
            found.append((self._request_started + limits.request_timeout_s, "request"))
        elif self._receiving == BODY:
            found.append((self._body_last + limits.body_timeout_s, "pause"))
            grace = self._body_started + limits.body_timeout_s
            found.append((grace + self._body_bytes / limits.min_upload_rate, "rate"))
            found.append((self._request_started + limits.request_timeout_s, "request"))
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
        reason = deadline[1]
        if reason == "unread":
            if self.transport.get_write_buffer_size() == 0:
                self._stalled_since = None
                self._schedule()
                return
            self.logger.debug(
                "%s: answer not read within %g s; dropped",
                self._peer(),
                self.limits.write_timeout_s,
            )
            self._drop()
        elif reason == "idle":
            self.transport.close()
            self._schedule()  # an answer the client has not taken is still timed
        else:
            self._refuse("408 Request Timeout", self._late(reason))

    def _late(self, reason: str) -> str:
        """What a request cut by ``reason`` (a deadline of ``_deadline``) is told."""
        limits = self.limits
        return {
            "head": "Request headers not completed in time.",
            "request": f"Request not completed within {limits.request_timeout_s:g} s"
            " (ATLAS_REQUEST_TIMEOUT_S).",
            "pause": f"Request body stalled: nothing arrived for {limits.body_timeout_s:g} s"
            " (ATLAS_BODY_TIMEOUT_S).",
            "rate": f"Request body too slow: under {limits.min_upload_rate:g} bytes a second"
            " (ATLAS_MIN_UPLOAD_RATE).",
        }[reason]

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

    def _drop(self) -> None:
        """Close at once, unsent answers and all."""
        self._abandon()
        self.transport.abort()

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

    def carries_stream(self, streams: bool) -> None:
        """The app's answer on this connection is (or no longer is) a live stream."""
        if streams:
            self.streaming.add(self)
        else:
            self.streaming.discard(self)

    def _progressed(self) -> None:
        """The client sent a byte or took some of an answer (or connected, or was answered)."""
        self.by_progress.pop(self, None)
        self.by_progress[self] = None

    def _evict(self) -> None:
        if self._stalled_since is not None:
            self._drop()
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
        if len(self.connections) - len(self.streaming) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self.by_progress.pop(self, None)
        self.streaming.discard(self)
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
        self.scope[CONNECTION_SCOPE_KEY] = self  # type: ignore[literal-required]
        self._schedule()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.limits.max_header_bytes:
            self._refuse(
                "431 Request Header Fields Too Large",
                f"Request line and headers larger than {self.limits.max_header_bytes} bytes"
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
        self._watch_writes()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stalled_since = None
        self._progressed()
        self._watch_writes()
        if self._deferred is not None and not self.transport.is_closing():
            self._queue_deferred()
