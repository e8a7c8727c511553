"""The lab states students send as they drag, written in batches.

A dragging student's page sends their state at most once a second (static/js/live.js); 500
students send 500 a second. Each in its own write transaction, they queued for SQLite's one
writer (about 100 a second here) and a question asked meanwhile waited seconds behind them.
Instead a worker keeps the states sent to it (the last one per student) and writes them every
``FLUSH_S`` in one transaction, then tells the class's pages as any change does. A state is
exploration, not an answer: one that a crash loses within ``FLUSH_S`` is sent again by the next
drag (a state sent by the lab's form without JavaScript is written at once, before its 303).
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from app.live import store
from app.live.store import Store

log = logging.getLogger("atlas")
FLUSH_S = 0.25

Wake = Callable[[Iterable[int]], None]


class Drags:
    """This worker's states not yet written: by student, their class and canonical query."""

    def __init__(self, db: Store, wake: Wake) -> None:
        self.db = db
        self.wake = wake
        self.pending: dict[int, tuple[int, str]] = {}
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def put(self, class_id: int, participant_id: int, query: str) -> None:
        """The student's state now; written within ``FLUSH_S`` with the others sent meanwhile."""
        self.pending[participant_id] = (class_id, query)
        self._arrived.set()

    def latest(self, participant_id: int) -> str | None:
        """The student's state not written yet, if any."""
        found = self.pending.get(participant_id)
        return found[1] if found else None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._write_in_batches(), name="live-drags")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()

    async def _write_in_batches(self) -> None:
        while True:
            await self._arrived.wait()
            await asyncio.sleep(FLUSH_S)  # what arrives meanwhile is written in one go
            self._arrived.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write every pending state in one transaction, then wake the classes' pages."""
        batch, self.pending = self.pending, {}
        if not batch:
            return
        classes = {class_id for class_id, _ in batch.values()}
        try:
            async with self.db.session() as session:
                await store.save_lab_states(
                    session, [(who, query) for who, (_, query) in batch.items()]
                )
                for class_id in classes:
                    await store.change(session, class_id)
        except Exception:  # logged; the students' next drags send their states again
            log.exception("writing %d dragged lab states failed", len(batch))
            return
        self.wake(classes)
