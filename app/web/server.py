"""uvicorn's HTTP protocol with the limits a server on a shared network needs.

uvicorn parses a request's head itself, before the app sees anything, and by default waits for
it forever: a client that connects and sends half a request line holds a socket until the
server runs out of them. ``GuardedHttpProtocol`` (httptools, as ``uvicorn --http auto`` picks)
adds, per connection:

* a **head timeout** (``ATLAS_HEADER_TIMEOUT_S``): from connecting, and again from the end of
  each answer, the client has that long to complete a request's headers, or it is closed
  (408 if it had started one);
* a **head size limit** (``ATLAS_MAX_HEADER_BYTES``): once the request line plus headers pass
  it, the connection gets 431 and is closed, before the rest is read;
* a **connection cap** (``ATLAS_MAX_CONNECTIONS``, per worker): past it, the connection that
  has waited longest without a request in progress (half-sent or idle) is closed to make room;
  only if every connection is busy does the new one get 503.

Use it with ``python -m app`` (see ``app/__main__.py``), or add
``--http app.web.server:GuardedHttpProtocol`` to a uvicorn command line.
"""

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.settings import get_settings


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


class GuardedHttpProtocol(HttpToolsProtocol):
    """httptools protocol with a head timeout, a head size limit and a connection cap."""

    # This worker's connections with an armed head timer, longest-waiting first (one event loop
    # per worker process, so a class attribute is per worker).
    armed: dict["GuardedHttpProtocol", None] = {}  # noqa: RUF012

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
        self.max_head_bytes = settings.max_header_bytes
        self.max_connections = settings.max_connections
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0  # of the request line and headers parsed so far
        self._head_started = False
        self._refused = False

    # ---- the head timer: armed while no request is in progress -----------------------------

    @property
    def waiting(self) -> bool:
        """No request in progress: the connection is idle or still sending a request's head."""
        return self._head_timer is not None and not self._busy()

    def _busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_started = False
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)
        self.armed[self] = None

    def _disarm(self) -> None:
        self.armed.pop(self, None)
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        self.armed.pop(self, None)
        if self.transport.is_closing() or self._busy():
            return
        if self._head_started:
            self._refuse("408 Request Timeout", "Request headers not completed in time.")
        else:
            self.transport.close()

    def _refuse(self, status: str, message: str) -> None:
        self._disarm()
        self._refused = True
        if not self.transport.is_closing():
            self.transport.write(raw_response(status, message))
            self.transport.close()

    # ---- uvicorn's callbacks -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def _make_room(self) -> None:
        oldest = next((other for other in self.armed if other is not self and other.waiting), None)
        if oldest is None:
            self._refuse("503 Service Unavailable", "Too many connections; try again shortly.")
            return
        oldest._disarm()
        oldest.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._head_started = self._head_started or (self._head_timer is not None and bool(data))
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        if not self._refused:  # the parser stopped because this head was refused: answered
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        super().on_message_begin()

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
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()
