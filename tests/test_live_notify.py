"""How a worker learns that a class changed through another worker (app/live/notify.py): the
change counter, SQLite's version poll and PostgreSQL's LISTEN, each on a real database (the
PostgreSQL ones on a private server: left out of the mutation selection by their names, run by
hand for notify.py's mutants, docs/testing.md "The live class"). Each test waits for what it
expects (a wake, a log line), never a clock."""

import asyncio
import logging
import os
import re
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text

from app.live import notify as notify_module
from app.live.database import backoff
from app.live.notify import APPLICATION_NAME, Listen, Signal, VersionPoll, source_for
from app.live.store import NOTIFY_CHANNEL, LiveClass, Store
from app.main import create_app
from tests import test_live, test_live_refusals
from tests.test_live import questions, settings_for, start_class

data_dir = test_live.data_dir
T = TypeVar("T")
WITHIN_S = 10.0  # how long a test waits for what it expects before it fails


def test_a_signal_wakes_its_waiters_once_it_moved_past_what_they_saw() -> None:
    async def scenario() -> None:
        signal = Signal()
        assert signal.generation == 0
        assert await signal.wait(-1) == 0  # already past what the waiter saw
        waiting = asyncio.create_task(signal.wait(0))
        await asyncio.sleep(0)
        assert not waiting.done()
        signal.fire()
        assert await waiting == 1
        second = asyncio.create_task(signal.wait(1))  # a waiter after a fire waits anew
        await asyncio.sleep(0)
        assert not second.done()
        signal.fire()
        assert await second == 2

    asyncio.run(scenario())


class Woken:
    """A source's wakes, in order, for a test to wait on (called on the app's loop)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[list[int]] = asyncio.Queue()

    def __call__(self, classes: Iterable[int]) -> None:
        self.queue.put_nowait(list(classes))

    async def next(self, wanted: Callable[[list[int]], bool] = bool) -> list[int]:
        """The next wake ``wanted`` keeps (by default one naming a class)."""

        async def seen() -> list[int]:
            while not wanted(woken := await self.queue.get()):
                pass
            return woken

        return await asyncio.wait_for(seen(), WITHIN_S)


client = test_live_refusals.sqlite_client


def on_loop(client: TestClient, work: Callable[[], Awaitable[T]]) -> T:
    return client.portal.call(work)  # type: ignore[union-attr]


def class_id(client: TestClient, code: str) -> int:
    store: Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def read() -> int:
        async with store.session(write=False) as session:
            found = await session.execute(select(LiveClass.id).where(LiveClass.code == code))
            return int(found.scalar_one())

    return on_loop(client, read)


def test_the_version_poll_wakes_a_followed_class_first_then_at_each_change_and_its_deletion(
    client: TestClient,
) -> None:
    """Its first poll of a class wakes it (a change made before is not missed); then only a
    change (the version bumped in the change's transaction) or the class's deletion wakes it;
    a class no longer followed is forgotten, and woken again at its first poll if followed
    again."""
    store: Store = client.app.state.live_store  # type: ignore[attr-defined]
    code = start_class(client)
    other = start_class(test_live.other_browser(client))
    mine, theirs = class_id(client, code), class_id(client, other)
    followed: list[int] = []
    woken = Woken()
    poll = VersionPoll(store, lambda: list(followed), woken)
    on_loop(client, poll.start)
    try:
        assert on_loop(client, poll.ping)
        # A task of its own, named as asyncio's debugging shows it (the app's poll is the other).
        assert on_loop(client, _task_names).count("live-version-poll") == 2
        followed[:] = [mine, theirs]
        first = on_loop(client, woken.next)
        assert sorted(first) == sorted([mine, theirs])
        # Nothing changed: the polls that follow wake no class.
        assert on_loop(client, lambda: woken.next(lambda ids: True)) == []
        first_question = questions()[0]
        asked = client.post(f"/class/{code}/ask", data={"question": first_question.id})
        assert asked.status_code == 200
        assert on_loop(client, woken.next) == [mine]
        followed[:] = [theirs]
        assert on_loop(client, lambda: woken.next(lambda ids: True)) == []
        followed[:] = [mine, theirs]  # followed again: its first poll wakes it
        assert on_loop(client, woken.next) == [mine]
        assert client.post(f"/class/{code}/delete").status_code == 200
        assert on_loop(client, woken.next) == [mine]  # deleted: its feed looks and ends
        assert on_loop(client, lambda: woken.next(lambda ids: True)) == []
    finally:
        on_loop(client, poll.stop)
    assert not on_loop(client, poll.ping)
    on_loop(client, poll.stop)  # stopped twice: nothing to stop
    assert on_loop(client, _task_names).count("live-version-poll") == 1


async def _task_names() -> list[str]:
    return [task.get_name() for task in asyncio.all_tasks()]


def test_a_poll_that_fails_is_logged_and_the_next_poll_tries_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A database the poll cannot read (here: no table at all) is logged with its error at
    each poll, and the poll goes on."""
    failures: list[logging.LogRecord] = []

    async def scenario() -> None:
        store = Store(f"sqlite+aiosqlite:///{tmp_path / 'empty.sqlite3'}")
        twice = asyncio.Event()

        class Seen(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                failures.append(record)
                if len(failures) >= 2:
                    twice.set()

        handler = Seen(logging.ERROR)
        logging.getLogger("atlas").addHandler(handler)
        poll = VersionPoll(store, lambda: [1], Woken())
        await poll.start()
        try:
            await asyncio.wait_for(twice.wait(), WITHIN_S)
            assert await poll.ping()  # still polling
        finally:
            logging.getLogger("atlas").removeHandler(handler)
            await poll.stop()
            await store.close()

    asyncio.run(scenario())
    for record in failures[:2]:
        assert record.getMessage() == "live class: polling the versions failed"
        assert record.exc_info is not None
        assert "live_classes" in str(record.exc_info[1])


def test_sqlite_is_polled_and_postgresql_listened_to_with_its_own_driver(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        sqlite = Store(f"sqlite+aiosqlite:///{tmp_path / 'one.sqlite3'}")
        postgresql = Store("postgresql+asyncpg://atlas:s%40cret@db.example:5433/atlas")
        try:
            wake = Woken()
            polled = source_for(sqlite, list, wake)
            assert isinstance(polled, VersionPoll)
            # It reads this store, the classes followed as given, and wakes them as given.
            assert (polled.store, polled.followed, polled.wake) == (sqlite, list, wake)
            listened = source_for(postgresql, list, wake)
            assert isinstance(listened, Listen)
            assert (listened.followed, listened.wake) == (list, wake)
            # asyncpg's own URL: its scheme, the password in full (not hidden as ***).
            assert listened.dsn == "postgresql://atlas:s%40cret@db.example:5433/atlas"
        finally:
            await sqlite.close()
            await postgresql.close()

    asyncio.run(scenario())


class Heard(logging.Handler):
    """The app's log lines (logger ``atlas``), for a test to wait on one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.arrived = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.arrived.set()

    def said(self, level: int) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno == level]

    async def until(self, done: Callable[[], bool]) -> None:
        async def wait() -> None:
            while not done():
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(wait(), WITHIN_S)


@pytest.fixture
def heard() -> Iterator[Heard]:
    handler = Heard()
    logger = logging.getLogger("atlas")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class Waits:
    """The retries' waits the listener asks for (database.backoff's ``attempt``), recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.attempts: list[int] = []
        monkeypatch.setattr(notify_module, "backoff", self)

    def __call__(self, attempt: int) -> float:
        self.attempts.append(attempt)
        return backoff(attempt)


def test_a_listener_that_cannot_reach_postgresql_says_so_once_and_keeps_trying(
    heard: Heard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that takes each connection and closes it at once: the listener warns at the
    first failure, naming the error, and not again; it tries again and again, soon at first
    then less often (its waits the backoff of attempts 0, 1, 2, ...), never connected."""
    waits = Waits(monkeypatch)

    async def scenario() -> None:
        warned_before: list[int] = []  # the warnings said as each try arrives
        fourth = asyncio.Event()

        async def refuse(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            warned_before.append(len(heard.said(logging.WARNING)))
            if len(warned_before) >= 4:
                fourth.set()
            writer.close()

        server = await asyncio.start_server(refuse, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        listen = Listen(f"postgresql://atlas:x@127.0.0.1:{port}/atlas", list, Woken())
        await listen.start()
        try:
            await asyncio.wait_for(fourth.wait(), WITHIN_S)
            assert not await listen.ping()
            assert not listen.connected.is_set()
        finally:
            await listen.stop()
            server.close()
            await server.wait_closed()
        assert warned_before[:4] == [0, 1, 1, 1]
        [warning] = heard.said(logging.WARNING)
        said = re.fullmatch(r"live class: cannot listen on PostgreSQL \((.+)\); retrying", warning)
        assert said is not None, warning
        assert said[1] not in ("None", "%s")  # the error's own words (a reset, a lost connection)
        assert heard.said(logging.INFO) == []
        assert waits.attempts[:3] == [0, 1, 2]

    asyncio.run(scenario())


@pytest.fixture
def pg_client(data_dir: Path, postgres_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir, database_url=postgres_url))) as host:
        yield host


def listeners(client: TestClient) -> list[int]:
    """The backends of the connections that listen for the class's changes (by their name)."""
    store: Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def read() -> list[int]:
        async with store.session(write=False) as session:
            found = await session.execute(
                text("SELECT pid FROM pg_stat_activity WHERE application_name = :name"),
                {"name": APPLICATION_NAME},
            )
            return [int(pid) for pid in found.scalars()]

    return on_loop(client, read)


def notify(client: TestClient, *payloads: str) -> None:
    """Each payload on the class's channel, in one transaction (delivered in order at commit)."""
    store: Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def send() -> None:
        async with store.session() as session:
            for payload in payloads:
                await session.execute(select(func.pg_notify(NOTIFY_CHANNEL, payload)))

    on_loop(client, send)


def test_a_postgresql_listener_wakes_the_class_named_and_looks_at_all_again_after_a_loss(
    pg_client: TestClient, heard: Heard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connected (a connection of its own, named in pg_stat_activity), the listener wakes
    every class followed; then each class a change names (a payload that is no class id is
    ignored); its connection cut, it connects again, says so, and wakes every class followed
    again (what changed meanwhile was never told), soon. Stopped, it no longer answers its ping
    and its connection is closed."""
    waits = Waits(monkeypatch)
    store: Store = pg_client.app.state.live_store  # type: ignore[attr-defined]
    code = start_class(pg_client)
    mine = class_id(pg_client, code)
    woken = Woken()
    listen = source_for(store, lambda: [mine], woken)
    assert isinstance(listen, Listen)
    before = set(listeners(pg_client))  # the app's own listener
    on_loop(pg_client, listen.start)
    try:
        assert on_loop(pg_client, woken.next) == [mine]
        assert on_loop(pg_client, listen.ping)
        [own] = set(listeners(pg_client)) - before
        first = questions()[0]
        asked = pg_client.post(f"/class/{code}/ask", data={"question": first.id})
        assert asked.status_code == 200
        assert on_loop(pg_client, woken.next) == [mine]
        notify(pg_client, "not-a-class", "424242")
        assert on_loop(pg_client, woken.next) == [424242]
        assert heard.said(logging.INFO) == []
        # The connection cut by the server: connected again, and every class looked at.
        on_loop(pg_client, lambda: _terminate(store, own))
        assert on_loop(pg_client, woken.next) == [mine]
        assert on_loop(pg_client, listen.ping)
        assert heard.said(logging.INFO) == ["live class: listening on PostgreSQL again"]
        assert heard.said(logging.WARNING) == []
        [again] = set(listeners(pg_client)) - before
        assert again != own
        assert waits.attempts[-1] == 0  # the first retry after a connection that held: soon
        notify(pg_client, str(mine))
        assert on_loop(pg_client, woken.next) == [mine]
    finally:
        on_loop(pg_client, listen.stop)
    assert not on_loop(pg_client, listen.ping)
    # Its connection closed: the server's backend for it ends.
    deadline = time.monotonic() + WITHIN_S
    while again in listeners(pg_client):
        assert time.monotonic() < deadline, "the stopped listener's connection is still open"


async def _terminate(store: Store, pid: int) -> None:
    async with store.session(write=False) as session:
        await session.execute(select(func.pg_terminate_backend(pid)))


@pytest.mark.slow  # waits real time (a gap, a timeout): left out of make test-quick
def test_a_listener_whose_server_never_answers_gives_up_within_the_connections_timeout(
    heard: Heard,
) -> None:
    """A PostgreSQL address whose server takes the connection and never answers: the
    listener gives that attempt up within the connection's timeout (seconds, not asyncpg's
    minute), says so and tries again."""

    async def scenario() -> None:
        with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel takes them
            port = silent.getsockname()[1]
            listen = Listen(f"postgresql://atlas:x@127.0.0.1:{port}/atlas", list, Woken())
            await listen.start()
            try:
                await heard.until(lambda: bool(heard.said(logging.WARNING)))
                assert not await listen.ping()
            finally:
                await listen.stop()
        [warning] = heard.said(logging.WARNING)
        assert warning.startswith("live class: cannot listen on PostgreSQL (")

    asyncio.run(scenario())


def backend_query(client: TestClient, pid: int) -> str:
    store: Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def read() -> str:
        async with store.session(write=False) as session:
            found = await session.execute(
                text("SELECT query FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
            )
            return str(found.scalar_one_or_none())

    return on_loop(client, read)


def test_a_quiet_postgresql_listener_asks_its_server_and_finds_a_silent_cut(
    pg_client: TestClient, heard: Heard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet connection is asked whether it is still there every ``CHECK_S`` (a hundredth of
    a second here, the behaviour and not the default being tested): the answers keep it, still
    told of changes; a server that stops answering (its backend stopped, as a network gone
    would leave it) is given up within the connection's timeout, and the listener connects
    again and looks at every class followed."""
    monkeypatch.setattr(notify_module, "CHECK_S", 0.01)
    store: Store = pg_client.app.state.live_store  # type: ignore[attr-defined]
    code = start_class(pg_client)
    mine = class_id(pg_client, code)
    woken = Woken()
    listen = source_for(store, lambda: [mine], woken)
    before = set(listeners(pg_client))
    on_loop(pg_client, listen.start)
    stopped: list[int] = []
    try:
        assert on_loop(pg_client, woken.next) == [mine]
        [own] = set(listeners(pg_client)) - before
        deadline = time.monotonic() + WITHIN_S
        while backend_query(pg_client, own) != "SELECT 1":  # its server was asked
            assert time.monotonic() < deadline, "the quiet connection was never asked"
        notify(pg_client, str(mine))
        assert on_loop(pg_client, woken.next) == [mine]
        assert heard.said(logging.INFO) == []  # asked, and kept
        assert heard.said(logging.WARNING) == []
        os.kill(own, signal.SIGSTOP)  # the backend answers no more
        stopped.append(own)
        assert on_loop(pg_client, woken.next) == [mine]  # connected again
        assert on_loop(pg_client, listen.ping)
        assert heard.said(logging.INFO) == ["live class: listening on PostgreSQL again"]
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        on_loop(pg_client, listen.stop)


def test_a_source_never_started_is_not_alive_and_stops_as_nothing(tmp_path: Path) -> None:
    """A server whose start failed before its source started stops it all the same."""

    async def scenario() -> None:
        store = Store(f"sqlite+aiosqlite:///{tmp_path / 'one.sqlite3'}")
        try:
            for source in (
                VersionPoll(store, list, Woken()),
                Listen("postgresql://atlas:x@127.0.0.1:1/atlas", list, Woken()),
            ):
                assert not await source.ping()
                await source.stop()
                assert not await source.ping()
        finally:
            await store.close()

    asyncio.run(scenario())
