"""A tiny ASGI app for tests/test_server.py: a live stream (``/stream``: an event every 50 ms, as
a live class's stream sends changes) and ``/healthz``, served under ``GuardedHttpProtocol``."""

import asyncio

from starlette.types import Receive, Scope, Send


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] != "/stream":
        while (await receive()).get("more_body"):  # the body first, as a real route reads it
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
