"""The lab states students send as they drag, written in batches.

A dragging student's page sends their state at most once a second (static/js/live.js); 500
students send 500 a second. Each in its own write transaction, they queued for SQLite's one
writer (about 100 a second here) and a question asked meanwhile waited seconds behind them;
each reading its class and its student first, they cost the server more than a core.

Instead a drag's request only checks what needs no database (the student's signed cookie for
the class, and the state, by the lab's own parser: a refusal names its field), and this worker
keeps the states sent to it (the last one per student). Every ``FLUSH_S`` one transaction finds
whose they are and writes them, then tells the classes' pages as any change does. A state is
written only where it belongs: its student is still in the class of the address (a removed
student's cookie finds no one), the class goes on, its lesson has the lab, the state is new (the
same state again wakes no page), and it reached the server after the instructor last sent a
state to everyone (a drag sent just before, written just after, would undo it). A state is
exploration, not an answer: one that a crash loses within ``FLUSH_S`` is sent again by the next
drag (a state sent by the lab's form without JavaScript is written at once, before its 303).
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from app.live import store
from app.live.store import Store

log = logging.getLogger("atlas")
FLUSH_S = 0.25
# Students looked up in one statement (well inside SQLite's and PostgreSQL's bound parameters).
LOOKUP_BATCH = 500

Wake = Callable[[Iterable[int]], None]
HasLab = Callable[[str], bool]


class Drags:
    """This worker's states not yet written: by student token, the class code of its address,
    the canonical query and when it arrived."""

    def __init__(self, db: Store, wake: Wake, has_lab: HasLab) -> None:
        self.db = db
        self.wake = wake
        self.has_lab = has_lab  # whether the lesson (by slug) has the gradient lab
        self.pending: dict[str, tuple[str, str, datetime]] = {}
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def put(self, code: str, token: str, query: str) -> None:
        """The student's state now; written within ``FLUSH_S`` with the others sent meanwhile."""
        self.pending[token] = (code, query, store.moment())
        self._arrived.set()

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
        """Write every pending state that belongs (see above) in one transaction, then wake
        the pages of the classes whose states changed."""
        batch, self.pending = self.pending, {}
        if not batch:
            return
        tokens = list(batch)
        try:
            async with self.db.session() as session:
                writes: list[tuple[int, str]] = []
                classes: set[int] = set()
                for start in range(0, len(tokens), LOOKUP_BATCH):
                    found = await store.dragging(session, tokens[start : start + LOOKUP_BATCH])
                    for student in found:
                        code, query, arrived = batch[student.token]
                        sent = student.lab_sent_at
                        if (
                            student.code == code
                            and student.shared_query != query
                            and (sent is None or arrived > sent)
                            and self.has_lab(student.lesson)
                        ):
                            writes.append((student.id, query))
                            classes.add(student.class_id)
                if writes:
                    await store.save_lab_states(session, writes)
                for class_id in classes:
                    await store.change(session, class_id)
        except Exception:  # logged; the students' next drags send their states again
            states = "state" if len(batch) == 1 else "states"
            log.exception("writing %d dragged lab %s failed", len(batch), states)
            return
        self.wake(classes)
