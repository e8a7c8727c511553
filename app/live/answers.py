"""A hall's answers, stored together (a group commit).

A lecture hall answers at once: 1,000 answers in a second. Each in a transaction of its own,
they took their turns for SQLite's one writer (or PostgreSQL's commits) one by one, and the
last waited seconds for its acknowledgement. Here a worker's answers wait for its one writer of
answers instead: while it stores one transaction, the answers that arrive meanwhile gather, and
its next transaction takes all of them (up to ``BATCH``). That transaction reads each class and
the students once, judges every answer against the class as it read it, stores those taken,
commits, and only then is each answer acknowledged: an acknowledged answer is a committed one,
and each reply renders from what its transaction read (``LiveService.answer_all``). Nothing
waits for a clock: one answer alone is stored at once, as before.
"""

import asyncio
import contextlib
from collections.abc import Callable, Iterable

from sqlalchemy.exc import IntegrityError

from app.live import store
from app.live.service import Answered, GivenAnswer, LiveService
from app.live.store import Store

# Answers stored in one transaction at most (their students are read in one statement, well
# inside SQLite's and PostgreSQL's bound parameters).
BATCH = 500

Wake = Callable[[Iterable[int]], None]


class Answers:
    """This worker's answers waiting for its writer of answers, each with its reply."""

    def __init__(self, db: Store, service: LiveService, wake: Wake) -> None:
        self.db = db
        self.service = service
        self.wake = wake  # this worker's streams of the classes changed
        self._waiting: list[tuple[GivenAnswer, asyncio.Future[Answered]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def give(self, answer: GivenAnswer) -> Answered:
        """Store ``answer`` with the others waiting; what became of it, once committed
        (:class:`~app.live.service.NotFoundError` raised for a class there is not)."""
        done: asyncio.Future[Answered] = asyncio.get_running_loop().create_future()
        self._waiting.append((answer, done))
        if self._writer is None:
            self._writer = asyncio.create_task(self._write(), name="live-answers")
        return await done

    async def _write(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:BATCH], self._waiting[BATCH:]
                await self._store(batch)
        finally:
            self._writer = None

    async def _store(
        self, batch: list[tuple[GivenAnswer, asyncio.Future[Answered]]], again: bool = True
    ) -> None:
        failure: Exception
        try:
            async with self.db.session() as session:
                outcomes = await self.service.answer_all(session, [given for given, _ in batch])
        except IntegrityError as error:
            if again:
                # A student removed by the host between the transaction's read and its write
                # (PostgreSQL): each answer again, alone, reads who is in the class now.
                for one in batch:
                    await self._store([one], again=False)
                return
            failure = error
        except Exception as error:  # each request raises it (the app's handlers answer it)
            failure = error
        else:
            self.wake(session.info.pop(store.CHANGED, ()))
            for (_, done), outcome in zip(batch, outcomes, strict=True):
                if done.done():  # its request was given up meanwhile
                    continue
                if isinstance(outcome, Answered):
                    done.set_result(outcome)
                else:  # no such class: its request raises the refusal
                    done.set_exception(outcome)
            return
        for _, done in batch:
            if not done.done():
                done.set_exception(failure)

    async def stop(self) -> None:
        """Store the answers still waiting (the server is stopping)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer
