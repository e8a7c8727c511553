"""A Server-Sent Events reader for the live class's tests and benchmark (real HTTP, httpx)."""

from collections.abc import AsyncIterator
from dataclasses import dataclass

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
