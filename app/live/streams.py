"""The live streams a worker keeps open: one per page view, and at most ``ATLAS_MAX_STREAMS``.

A view is a student's page (per student), a class's dashboard or its projector: the newer
stream of a view ends the older one (a reloaded page, a second tab, a client opening streams
with one cookie over and over), which is sent ``gone`` so its page stops rather than
reconnecting. At the cap, the client (address) holding the most streams loses its oldest: one
client opening thousands leaves the others theirs. A stream ended so is cancelled where it waits
(no task per wait per stream) and says ``gone`` on its way out (app/live/events.py).

The connections that carry streams are counted apart from the others by ``python -m app``'s
protocol (app/web/server.py's ``ATLAS_MAX_CONNECTIONS`` counts requests): a class's streams
never leave a request without a connection. Per worker: with N workers a view may have a
stream on each.
"""

import asyncio
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.web.server import CONNECTION_SCOPE_KEY

# Streams one client (address) may be opening at once per worker: the work of opening one (its
# checks, the class read, the page's first render) is done a few at a time per client, so a
# client opening hundreds at once takes no more of the worker than a few, and a request of
# anyone else's is answered meanwhile.
OPENING_PER_CLIENT = 2


class Turn:
    """A client's turn to open a stream, held until its first event is sent (or it fails)."""

    def __init__(self, streams: "Streams", client: str) -> None:
        self._streams = streams
        self._client = client
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._streams._done_opening(self._client)


@dataclass(eq=False)
class Held:
    """One open stream: its view, its client, the task that sends it, whether it was ended."""

    view: Hashable
    client: str
    task: asyncio.Task[Any] | None
    connection: Any = None
    ended: str = ""  # why it was ended here ("" while it runs)

    def end(self, why: str) -> None:
        if not self.ended and self.task is not None:
            self.ended = why
            self.task.cancel()


@dataclass
class Streams:
    """This worker's open streams by view and by client."""

    cap: int
    by_view: dict[Hashable, Held] = field(default_factory=dict)
    by_client: dict[str, dict[Held, None]] = field(default_factory=dict)
    # Per client opening streams: its semaphore, and how many hold or wait for it.
    opening: dict[str, tuple[asyncio.Semaphore, list[int]]] = field(default_factory=dict)

    async def turn(self, client: str) -> Turn:
        """Wait for ``client``'s turn to open a stream (``OPENING_PER_CLIENT`` at once)."""
        gate, users = self.opening.setdefault(client, (asyncio.Semaphore(OPENING_PER_CLIENT), [0]))
        users[0] += 1
        try:
            await gate.acquire()
        except BaseException:
            self._left(client)
            raise
        return Turn(self, client)

    def _done_opening(self, client: str) -> None:
        gate, _users = self.opening[client]
        gate.release()
        self._left(client)

    def _left(self, client: str) -> None:
        _gate, users = self.opening[client]
        users[0] -= 1
        if not users[0]:
            del self.opening[client]

    def open(self, view: Hashable, client: str, scope: Mapping[str, Any]) -> Held:
        """A stream for ``view`` from ``client`` starts in the current task: the view's older
        stream ends, and at the cap the oldest of the client holding the most."""
        older = self.by_view.get(view)
        if older is not None:
            self._drop(older)
            older.end("replaced")
        while len(self.by_view) >= self.cap and self.by_client:
            most = max(self.by_client.values(), key=len)
            oldest = next(iter(most))
            self._drop(oldest)
            oldest.end("room")
        held = Held(view, client, asyncio.current_task(), scope.get(CONNECTION_SCOPE_KEY))
        self.by_view[view] = held
        self.by_client.setdefault(client, {})[held] = None
        if held.connection is not None:
            held.connection.carries_stream(True)
        return held

    def close(self, held: Held) -> None:
        """The stream ended (any way)."""
        self._drop(held)
        if held.connection is not None:
            held.connection.carries_stream(False)

    def _drop(self, held: Held) -> None:
        if self.by_view.get(held.view) is held:
            del self.by_view[held.view]
        mine = self.by_client.get(held.client)
        if mine is not None:
            mine.pop(held, None)
            if not mine:
                del self.by_client[held.client]

    def __len__(self) -> int:
        return len(self.by_view)
