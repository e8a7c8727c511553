"""Who must look again: the broker says a class changed, never what (the database holds that).

One worker's own changes are told at once, in process. Changes made through another worker are
found by polling each class's ``version`` (bumped in the same transaction as the change) every
``POLL_S`` while this worker holds a stream of that class: one small query per worker, not per
student. A broker for several machines (Redis, issue 32) plugs in behind the same four calls:
``start``, ``stop``, ``publish``, ``subscribe``.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from app.live.store import Store, versions

log = logging.getLogger("atlas")
POLL_S = 0.2


class Signal:
    """A change counter one can wait on: ``wait(seen)`` returns once it has moved past ``seen``."""

    def __init__(self) -> None:
        self.generation = 0
        self._event = asyncio.Event()

    def fire(self) -> None:
        self.generation += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seen: int) -> int:
        while self.generation == seen:
            await self._event.wait()
        return self.generation


class Broker(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def publish(self, class_id: int) -> None: ...

    def subscribe(self, class_id: int) -> contextlib.AbstractAsyncContextManager[Signal]: ...


class PollingBroker:
    """In process for this worker's changes; the database's version counters for the others'."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._signals: dict[int, Signal] = {}
        self._holders: dict[int, int] = {}
        self._seen: dict[int, int] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._poll(), name="live-broker-poll")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def publish(self, class_id: int) -> None:
        signal = self._signals.get(class_id)
        if signal is not None:
            signal.fire()

    @asynccontextmanager
    async def subscribe(self, class_id: int) -> AsyncIterator[Signal]:
        signal = self._signals.setdefault(class_id, Signal())
        self._holders[class_id] = self._holders.get(class_id, 0) + 1
        try:
            yield signal
        finally:
            self._holders[class_id] -= 1
            if not self._holders[class_id]:
                del self._holders[class_id], self._signals[class_id]
                self._seen.pop(class_id, None)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            watched = list(self._signals)
            if not watched:
                continue
            try:
                async with self.store.feed_session() as session:
                    current = await versions(session, watched)
            except Exception:  # a locked or restarting database: the next poll tries again
                log.exception("live class broker: polling the versions failed")
                continue
            for class_id in watched:
                version = current.get(class_id, -1)  # -1: the class was deleted
                # The first poll of a class fires too: a change made elsewhere between a
                # stream's first snapshot and this poll is not missed (a repeat costs one look).
                if self._seen.get(class_id) != version:
                    self._seen[class_id] = version
                    self.publish(class_id)
