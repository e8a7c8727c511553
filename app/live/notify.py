"""How a worker learns that a class changed through another worker: never what changed (the
database holds that), only that its feed must look again (app/live/events.py).

A worker's own changes wake its feeds at once, after commit (app/live/deps.py). The others'
come one of two ways, by the database the classes live in (docs/architecture.md says why):

- :class:`VersionPoll`, SQLite on one host: every ``POLL_S`` one small query reads the
  ``version`` of each class this worker follows (bumped in the same transaction as a change).
- :class:`Listen`, PostgreSQL for replicas: a connection of its own ``LISTEN``\\s for the
  ``NOTIFY`` each change sends in its transaction, which PostgreSQL delivers at commit.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import asyncpg

from app.live.database import CONNECT_TIMEOUT_S, backoff
from app.live.store import NOTIFY_CHANNEL, Store, versions

log = logging.getLogger("atlas")
POLL_S = 0.2
CHECK_S = 15.0  # how often a quiet LISTEN connection is asked whether it is still there
APPLICATION_NAME = "atlas-listen"  # in pg_stat_activity

Wake = Callable[[Iterable[int]], None]  # these classes changed: look again
Followed = Callable[[], list[int]]  # the classes this worker follows now


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


class Source(Protocol):
    """Where the other workers' changes come from, for the life of the server."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def ping(self) -> bool: ...


class _Task:
    """A source that is one background task."""

    name = "live-notify"

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        raise NotImplementedError


class VersionPoll(_Task):
    """The versions of the classes this worker follows, read every ``POLL_S``."""

    name = "live-version-poll"

    def __init__(self, store: Store, followed: Followed, wake: Wake) -> None:
        super().__init__()
        self.store = store
        self.followed = followed
        self.wake = wake
        self._seen: dict[int, int] = {}

    async def ping(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            watched = self.followed()
            self._seen = {key: value for key, value in self._seen.items() if key in watched}
            if not watched:
                continue
            try:
                async with self.store.feed_session() as session:
                    current = await versions(session, watched)
            except Exception:  # a locked or restarting database: the next poll tries again
                log.exception("live class: polling the versions failed")
                continue
            # The first poll of a class wakes it too: a change made elsewhere between a feed's
            # first read and this poll is not missed (a repeat costs one look). -1: deleted.
            moved = [key for key in watched if self._seen.get(key) != current.get(key, -1)]
            self._seen.update({key: current.get(key, -1) for key in moved})
            self.wake(moved)


class Listen(_Task):
    """``LISTEN`` on PostgreSQL; after the connection is lost and made again, every class
    followed is looked at again (what changed meanwhile was never told)."""

    name = "live-listen"

    def __init__(self, dsn: str, followed: Followed, wake: Wake) -> None:
        super().__init__()
        self.dsn = dsn
        self.followed = followed
        self.wake = wake
        self.connected = asyncio.Event()
        self._connection: Any = None

    async def ping(self) -> bool:
        connection = self._connection
        return bool(self.connected.is_set() and connection and not connection.is_closed())

    def _told(self, _connection: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.isdigit():
            self.wake([int(payload)])

    async def _run(self) -> None:
        attempt = 0
        while True:
            lost = asyncio.Event()
            try:
                self._connection = await asyncpg.connect(
                    self.dsn,
                    timeout=CONNECT_TIMEOUT_S,
                    server_settings={"application_name": APPLICATION_NAME},
                )
                self._connection.add_termination_listener(lambda _c, lost=lost: lost.set())
                await self._connection.add_listener(NOTIFY_CHANNEL, self._told)
                self.connected.set()
                if attempt:
                    log.info("live class: listening on PostgreSQL again")
                attempt = 0
                self.wake(self.followed())
                while not lost.is_set():
                    # A connection cut without a word (a network gone) is found by asking.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), CHECK_S)
                    if not lost.is_set():
                        await self._connection.fetchval("SELECT 1", timeout=CONNECT_TIMEOUT_S)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as error:
                if attempt == 0:
                    log.warning("live class: cannot listen on PostgreSQL (%s); retrying", error)
            finally:
                self.connected.clear()
                if self._connection is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(self._connection.close(timeout=1))
                    self._connection = None
            await asyncio.sleep(backoff(attempt))
            attempt += 1


def source_for(store: Store, followed: Followed, wake: Wake) -> Source:
    """PostgreSQL's ``LISTEN`` for a PostgreSQL store, else the version poll."""
    url = store.engine.url
    if url.get_backend_name() == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return Listen(dsn, followed, wake)
    return VersionPoll(store, followed, wake)
