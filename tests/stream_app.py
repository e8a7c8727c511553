"""A tiny ASGI app for tests/test_server.py, served under ``GuardedHttpProtocol``: a live stream
(``/stream``: an event every 50 ms, as a live class's stream sends changes), ``/early`` (answers
before reading the body) and "ok" on any other path once its body is read."""

import asyncio

from starlette.types import Receive, Scope, Send


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] != "/stream":
        # The body first, as a real route reads it; /early answers before any of it.
        while scope["path"] != "/early" and (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    count = 0
    while True:
        count += 1
        event = b"data: %d\n\n" % count
        await send({"type": "http.response.body", "body": event, "more_body": True})
        try:
            if (await asyncio.wait_for(receive(), 0.05))["type"] == "http.disconnect":
                return
        except TimeoutError:
            pass
