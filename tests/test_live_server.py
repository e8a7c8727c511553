"""The live class's stream through a real server (``python -m app`` on loopback): the current
state first, then each change; with two workers, a change made through one reaches a stream held
by the other (through the database's change counter)."""

import asyncio
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
import uvicorn
from bs4 import BeautifulSoup

from app.lesson.quiz import Question
from app.live.store import SQLITE_FILE
from app.main import create_app
from bench._http import TLS
from bench._procs import uvicorn_workers
from bench._servers import Server, free_port, launch, stop
from bench._sse import Event, read_events
from tests.conftest import INSTRUCTOR_PASSWORD
from tests.test_live import questions, settings_for

KEY = "test-live-server-key"


def start(data_dir: Path, workers: int, **settings: str) -> Server:
    """``python -m app`` with ``workers`` on ``data_dir``, and any other ``settings`` (ATLAS_…)."""
    port = free_port()
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(data_dir),
        "ATLAS_SECRET_KEY": KEY,
        "ATLAS_CONFIRM_ENABLED": "false",
        **settings,
    }
    command = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers)]
    return launch([*command, "--log-level", "warning"], port=port, ready_path="/healthz", env=env)


def serving(tmp_path: Path, workers: int) -> Iterator[Server]:
    server = start(tmp_path / "data", workers)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the tests that leave it running; each starts a class of its own."""
    yield from serving(tmp_path_factory.mktemp("one-worker"), 1)


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[Server]:
    yield from serving(tmp_path, 2)


async def start_class(client: httpx.AsyncClient) -> str:
    started = await client.post("/class/new", data={"password": INSTRUCTOR_PASSWORD})
    assert started.status_code == 303
    return started.headers["location"].split("/")[2]


async def join(url: str, code: str, nickname: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=url, timeout=30, verify=TLS)
    joined = await client.post("/join", data={"code": code, "nickname": nickname})
    assert joined.status_code == 303, joined.text[:200]
    return client


def question_of(event: Event) -> str | None:
    node = BeautifulSoup(event.data, "html.parser").select_one(
        "#class-question input[name=question]"
    )
    return str(node["value"]) if node is not None else None


async def next_event(events: "asyncio.Queue[Event]", timeout: float = 5.0) -> Event:
    return await asyncio.wait_for(events.get(), timeout)


async def until(events: "asyncio.Queue[Event]", seen: "Callable[[Event], bool]") -> Event:
    """The first event for which ``seen`` holds, within 5 s."""

    async def look() -> Event:
        while True:
            event = await events.get()
            if seen(event):
                return event

    return await asyncio.wait_for(look(), 5.0)


async def follow(client: httpx.AsyncClient, path: str, into: "asyncio.Queue[Event]") -> None:
    async with client.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event in read_events(response):
            await into.put(event)


def test_the_stream_sends_the_current_state_first_then_changes(one_worker: Server) -> None:
    first: Question = questions()[0]

    async def run() -> None:
        async with httpx.AsyncClient(base_url=one_worker.url, timeout=30, verify=TLS) as host:
            code = await start_class(host)
            pupil = await join(one_worker.url, code, "Ada")
            # Asked before the student's stream opens: the stream's first event shows it.
            assert (
                await host.post(f"/class/{code}/ask", data={"question": first.id})
            ).status_code == 303
            events: asyncio.Queue[Event] = asyncio.Queue()
            reader = asyncio.create_task(follow(pupil, f"/class/{code}/events", events))
            hosted: asyncio.Queue[Event] = asyncio.Queue()
            watcher = asyncio.create_task(follow(host, f"/class/{code}/events?view=host", hosted))
            try:
                now = await next_event(events)
                assert now.name == "class"
                assert question_of(now) == first.id
                count = BeautifulSoup((await next_event(hosted)).data, "html.parser")
                assert count.select_one("#participant-count").get_text() == "1"  # type: ignore[union-attr]

                await pupil.post(
                    f"/class/{code}/answer",
                    data={"question": first.id, "choice": str(first.answer_number)},
                )
                await until(hosted, lambda e: 'id="answer-count" class="live-number">1<' in e.data)

                await host.post(f"/class/{code}/reveal")
                revealed = await until(events, lambda e: "class-verdict" in e.data)
                verdict = BeautifulSoup(revealed.data, "html.parser").select_one("#class-verdict")
                assert verdict is not None
                assert verdict["data-correct"] == "true"

                await host.post(f"/class/{code}/delete")
                await until(events, lambda e: e.name == "gone")
            finally:
                reader.cancel()
                watcher.cancel()
                await pupil.aclose()

    asyncio.run(run())


def test_a_student_who_has_just_joined_is_not_told_they_are_gone(one_worker: Server) -> None:
    # A stream already open keeps a snapshot of the class; a student who joins and opens their
    # stream before it is read again (within the feed's gap) must get the class, not "gone"
    # (which closes their page's live connection for good).
    async def run() -> None:
        async with httpx.AsyncClient(base_url=one_worker.url, timeout=30, verify=TLS) as host:
            code = await start_class(host)
            hosted: asyncio.Queue[Event] = asyncio.Queue()
            watcher = asyncio.create_task(follow(host, f"/class/{code}/events?view=host", hosted))
            pupils, readers = [], []
            try:
                await next_event(hosted)
                for n in range(5):
                    pupil = await join(one_worker.url, code, f"late {n}")
                    pupils.append(pupil)
                    events: asyncio.Queue[Event] = asyncio.Queue()
                    readers.append(
                        asyncio.create_task(follow(pupil, f"/class/{code}/events", events))
                    )
                    first = await next_event(events)
                    assert first.name == "class", (n, first.name)
            finally:
                watcher.cancel()
                for reader in readers:
                    reader.cancel()
                for pupil in pupils:
                    await pupil.aclose()

    asyncio.run(run())


def _worker_of(workers: list[int], local_port: int, server_port: int) -> int | None:
    """The worker process holding the server side of our connection from ``local_port``."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = fields[1], fields[2]
            if (
                int(local.split(":")[1], 16) == server_port
                and int(remote.split(":")[1], 16) == local_port
            ):
                inode = fields[9]
    if inode is None:
        return None
    for pid in workers:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


def test_a_change_through_one_worker_reaches_streams_on_the_other(two_workers: Server) -> None:
    first = questions()[0]
    workers = uvicorn_workers(two_workers.process.pid)
    assert len(workers) == 2
    port = int(two_workers.url.rsplit(":", 1)[1])

    async def run() -> None:
        async with httpx.AsyncClient(base_url=two_workers.url, timeout=30, verify=TLS) as host:
            code = await start_class(host)
            pupils, queues, readers, held = [], [], [], set()
            # Streams until both workers hold one (the kernel spreads new connections).
            for n in range(40):
                pupil = await join(two_workers.url, code, f"student {n}")
                queue: asyncio.Queue[Event] = asyncio.Queue()
                readers.append(asyncio.create_task(follow(pupil, f"/class/{code}/events", queue)))
                await next_event(queue)  # the current state: the stream is open
                pupils.append(pupil)
                queues.append(queue)
                for connection in pupil._transport._pool.connections:  # type: ignore[attr-defined]
                    stream = connection._connection._network_stream  # type: ignore[union-attr]
                    local = stream.get_extra_info("socket").getsockname()[1]
                    held.add(_worker_of(workers, local, port))
                if set(workers) <= held:
                    break
            assert set(workers) <= held, "40 streams all landed on one worker"
            try:
                # The ask goes through one worker on a fresh connection; every stream sees it.
                async with httpx.AsyncClient(
                    base_url=two_workers.url, cookies=host.cookies, verify=TLS
                ) as once:
                    assert (
                        await once.post(f"/class/{code}/ask", data={"question": first.id})
                    ).status_code == 303
                for queue in queues:
                    await until(queue, lambda e: question_of(e) == first.id)
            finally:
                for reader in readers:
                    reader.cancel()
                for pupil in pupils:
                    await pupil.aclose()

    asyncio.run(run())


def test_a_students_htmx_answer_shows_what_their_stream_shows(one_worker: Server) -> None:
    # The answer's acknowledgement reads only the class and that student; the stream renders
    # the same part from the whole class's snapshot: the page must look the same either way.
    first: Question = questions()[0]
    lab = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    htmx = {"HX-Request": "true"}

    async def run() -> None:
        async with httpx.AsyncClient(base_url=one_worker.url, timeout=30, verify=TLS) as host:
            code = await start_class(host)
            await host.post(f"/class/{code}/lab", data=lab)
            await host.post(f"/class/{code}/ask", data={"question": first.id})
            others = [await join(one_worker.url, code, name) for name in ("Bo", "Cy")]
            for other in others:
                await other.post(
                    f"/class/{code}/answer", data={"question": first.id, "choice": "1"}
                )
            ada = await join(one_worker.url, code, "Ada")
            await ada.post(f"/class/{code}/share", data={**lab, "w": "3"})
            events: asyncio.Queue[Event] = asyncio.Queue()
            reader = asyncio.create_task(follow(ada, f"/class/{code}/events", events))
            try:
                await next_event(events)
                choice = str(first.answer_number)
                sent = await ada.post(
                    f"/class/{code}/answer",
                    data={"question": first.id, "choice": choice},
                    headers=htmx,
                )
                assert sent.status_code == 200
                assert sent.headers["cache-control"] == "no-store"
                assert "HX-Request" in sent.headers["vary"]
                assert f'value="{choice}" required checked' in sent.text
                # Her own lab (sent to everyone, then hers) is not sent again with an answer.
                assert "class-own-lab" not in sent.text
                shown = await until(events, lambda e: "checked" in e.data)
                assert shown.data == sent.text.rstrip("\n")

                await host.post(f"/class/{code}/reveal")
                revealed = await until(events, lambda e: "class-verdict" in e.data)
                page = await ada.get(f"/class/{code}", headers=htmx)
                assert revealed.data == page.text.rstrip("\n")
            finally:
                reader.cancel()
                for client in (ada, *others):
                    await client.aclose()

    asyncio.run(run())


def test_a_stream_ends_when_its_feed_fails(tmp_path: Path) -> None:
    # A feed that dies of anything but a database away (which it waits out) reads nothing
    # more: its streams must end (the page's EventSource reconnects), not stay open and silent.
    # The app runs in this process (a real uvicorn on loopback) so that its read can be broken.
    app = create_app(settings_for(tmp_path / "data"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    url = f"http://127.0.0.1:{port}"
    first = questions()[0]

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug while reading the class")

    async def run() -> None:
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=30, verify=TLS) as host:
                code = await start_class(host)
                hosted: asyncio.Queue[Event] = asyncio.Queue()
                watcher = asyncio.create_task(
                    follow(host, f"/class/{code}/events?view=host", hosted)
                )
                await next_event(hosted)
                service = app.state.live
                service.snapshot = broken
                # A stream joining the feed now cannot read the class: it ends cleanly (its
                # page reconnects), not with an error that cuts the connection.
                joining: asyncio.Queue[Event] = asyncio.Queue()
                await asyncio.wait_for(
                    follow(host, f"/class/{code}/events?view=screen", joining), 5
                )
                await host.post(f"/class/{code}/ask", data={"question": first.id})
                await asyncio.wait_for(watcher, 5)  # the stream has ended
                del service.snapshot
                # The page's reconnection finds a feed that reads the class again.
                again: asyncio.Queue[Event] = asyncio.Queue()
                rewatch = asyncio.create_task(
                    follow(host, f"/class/{code}/events?view=host", again)
                )
                try:
                    assert f"Question {first.number}:" in (await next_event(again)).data
                finally:
                    rewatch.cancel()
        finally:
            server.should_exit = True
            await serving

    asyncio.run(run())


# ---- the class limit under concurrency -----------------------------------------------------

LIMIT = 20
AT_ONCE = 60


async def stored_classes(database_url: str, data_dir: Path) -> int:
    if database_url:
        connection = await asyncpg.connect(database_url)
        try:
            return int(await connection.fetchval("SELECT count(*) FROM live_classes"))
        finally:
            await connection.close()
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        return int(db.execute("SELECT count(*) FROM live_classes").fetchone()[0])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_classes_started_at_once_never_pass_the_limit(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """60 classes started at once on two workers: exactly the limit are stored, every other
    start is told 429 (the count and the insert are one step under the classes' lock)."""
    database_url = request.getfixturevalue("postgres_url") if backend == "postgresql" else ""
    server = start(
        tmp_path / "data",
        2,
        ATLAS_CLASS_LIMIT=str(LIMIT),
        **({"ATLAS_DATABASE_URL": database_url} if database_url else {}),
    )

    async def one(start_line: asyncio.Event) -> int:
        async with httpx.AsyncClient(base_url=server.url, timeout=60, verify=TLS) as device:
            await start_line.wait()
            answer = await device.post("/class/new", data={"password": INSTRUCTOR_PASSWORD})
            return answer.status_code

    async def run() -> list[int]:
        start_line = asyncio.Event()
        starts = [asyncio.create_task(one(start_line)) for _ in range(AT_ONCE)]
        await asyncio.sleep(0)  # every client waits at the line
        start_line.set()
        return await asyncio.gather(*starts)

    try:
        statuses = asyncio.run(run())
        stored = asyncio.run(stored_classes(database_url, tmp_path / "data"))
    finally:
        stop(server)
    assert stored == LIMIT
    assert sorted(statuses) == [303] * LIMIT + [429] * (AT_ONCE - LIMIT)
