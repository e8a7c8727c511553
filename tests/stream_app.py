"""A tiny ASGI app for tests/test_server.py, served under ``GuardedHttpProtocol``: a live stream
(``/stream``: an event every 50 ms, as a live class's stream sends changes), ``/early`` (answers
before reading the body), ``/big`` (a megabyte, for a client that never reads it) and "ok" on any
other path once its body is read."""

import asyncio

from starlette.types import Receive, Scope, Send

from app.web.server import CONNECTION_SCOPE_KEY

BIG = b"x" * 2**20


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] != "/stream":
        # The body first, as a real route reads it; /early answers before any of it.
        while scope["path"] != "/early" and (await receive()).get("more_body"):
            pass
        body = BIG if scope["path"] == "/big" else b"ok"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})
        return
    # ``/stream?own-cap`` says so, as a live class's stream does: not counted against the cap.
    own_cap = scope["query_string"] == b"own-cap"
    if own_cap:
        scope[CONNECTION_SCOPE_KEY].carries_stream(True)
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    count = 0
    try:
        while True:
            count += 1
            event = b"data: %d\n\n" % count
            await send({"type": "http.response.body", "body": event, "more_body": True})
            try:
                if (await asyncio.wait_for(receive(), 0.05))["type"] == "http.disconnect":
                    return
            except TimeoutError:
                pass
    finally:
        if own_cap:
            scope[CONNECTION_SCOPE_KEY].carries_stream(False)
