"""A tiny ASGI app for tests/test_server.py and test_server_guards.py, served under
``GuardedHttpProtocol``: a live stream (``/stream``: an event every 50 ms, as a live class's stream
sends changes), ``/early`` (answers before reading the body), ``/big`` (a megabyte, for a client
that never reads it; ``/big?pieces`` sends it in 64 KiB writes, as a file is sent), ``/slow?S``
(answers after S seconds of work), ``/hold`` (works until its client leaves, never answering) and
"ok" on any other path once its body is read.

A query may carry more (``/slow?0.5&tag``), to tell requests apart. ``/stream`` takes:
``own-cap`` (it says it is a live stream, as a live class's stream does: not counted against the
connection cap), ``keep`` (with ``own-cap``: it never says it ended, leaving that to the
connection's close) and ``events=N`` (it ends after N events).

What the app was given is recorded where the server runs (an in-process uvicorn's tests read
it): ``STARTED``, each request's path and query and when the app began it (``time.monotonic``);
``ENDED``, each stream's, once it has ended."""

import asyncio
import time
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from app.web.server import CONNECTION_SCOPE_KEY

BIG = b"x" * 2**20
PIECE_BYTES = 2**16

STARTED: list[tuple[str, float]] = []
ENDED: list[str] = []


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    query = scope["query_string"].decode()
    asked = scope["path"] + (f"?{query}" if query else "")
    STARTED.append((asked, time.monotonic()))
    if scope["path"] != "/stream":
        # The body first, as a real route reads it; /early answers before any of it.
        while scope["path"] != "/early" and (await receive()).get("more_body"):
            pass
        if scope["path"] == "/hold":
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        if scope["path"] == "/slow":
            await asyncio.sleep(float(query.partition("&")[0]))
        body = BIG if scope["path"] == "/big" else b"ok"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if "pieces" in query.split("&"):
            for start in range(0, len(body), PIECE_BYTES):
                piece = body[start : start + PIECE_BYTES]
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            body = b""
        await send({"type": "http.response.body", "body": body})
        return
    options = parse_qs(query, keep_blank_values=True)
    own_cap = "own-cap" in options
    if own_cap:
        scope[CONNECTION_SCOPE_KEY].carries_stream(True)
    events = int(options["events"][0]) if "events" in options else None
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    count = 0
    try:
        while events is None or count < events:
            count += 1
            event = b"data: %d\n\n" % count
            await send({"type": "http.response.body", "body": event, "more_body": True})
            try:
                if (await asyncio.wait_for(receive(), 0.05))["type"] == "http.disconnect":
                    return
            except TimeoutError:
                pass
        await send({"type": "http.response.body", "body": b""})
    finally:
        if own_cap and "keep" not in options:
            scope[CONNECTION_SCOPE_KEY].carries_stream(False)
        ENDED.append(asked)
