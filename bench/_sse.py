"""A Server-Sent Events reader for the live class's tests and benchmark (real HTTP, httpx)."""

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx


@dataclass(frozen=True)
class Event:
    name: str
    data: str


async def read_events(response: httpx.Response) -> AsyncIterator[Event]:
    """The events of an open ``text/event-stream`` response, as the browser's EventSource
    parses them: ``event:`` and ``data:`` lines up to a blank line; comments (pings) skipped."""
    name, data = "message", []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield Event(name, "\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)


# ---- a bare HTTP/1.1 client for hundreds of students at once ----------------------------
# One httpx client per student costs the benchmark's own process more than the server it
# measures (and one shared client mixes the students' cookies): these are plain sockets.


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def cookie(self, prefix: str) -> str:
        """``name=value`` of the first Set-Cookie whose name starts with ``prefix``."""
        for name, value in self.headers:
            if name == "set-cookie" and value.startswith(prefix):
                return value.split(";", 1)[0]
        raise LookupError(f"no cookie {prefix}*")

    def header(self, wanted: str) -> str:
        return next(value for name, value in self.headers if name == wanted)


async def _head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection without an answer")
    status = int(status_line.split()[1])
    headers = []
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return status, headers


async def request(
    port: int,
    method: str,
    path: str,
    cookie: str = "",
    form: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """One request on its own connection (``Connection: close``)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        body = urlencode(form or {}).encode()
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        if cookie:
            lines.append(f"Cookie: {cookie}")
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if method == "POST":
            lines += [
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {len(body)}",
            ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        status, headers = await _head(reader)
        return Answer(status, headers, await reader.read())
    finally:
        writer.close()


async def stream_events(port: int, path: str, cookie: str) -> AsyncIterator[Event]:
    """The events of ``GET path`` (``text/event-stream``, chunked), as :func:`read_events`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: text/event-stream"]
        writer.write(("\r\n".join([*head, f"Cookie: {cookie}"]) + "\r\n\r\n").encode())
        await writer.drain()
        status, _ = await _head(reader)
        if status != 200:
            raise ConnectionError(f"the stream answered {status}")
        pending = b""
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                return
            pending += await reader.readexactly(size)
            await reader.readexactly(2)
            *complete, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
            for block in complete:
                name, data = "message", []
                for line in block.decode().split("\n"):
                    if line.startswith("event:"):
                        name = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                if data:
                    yield Event(name, "\n".join(data))
    finally:
        writer.close()
