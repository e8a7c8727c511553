"""What a worker holds for a class's open streams (app/live/events.py): one feed per class with
the class as last read, and each stream only what it sent. A stream (re)connecting reads the
class again; when each stream kept the class as it was when it last rendered, 1,000 streams
opened one after another held 1,000 copies of a class of 1,000 (300 KB a student, bench.live).
The real app's feeds on SQLite, through TestClient's event loop."""

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sse_starlette import ServerSentEvent

from app.live import events, store
from app.live.service import Snapshot
from app.main import create_app
from tests.test_live import settings_for, start_class, student

STREAMS = 30


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path / "data"))) as app_client:
        yield app_client


def snapshots_alive() -> int:
    gc.collect()
    return sum(isinstance(thing, Snapshot) for thing in gc.get_objects())


def test_streams_opened_one_after_another_hold_one_copy_of_the_class(client: TestClient) -> None:
    code = start_class(client)
    for n in range(5):
        student(client, code, f"S{n}")
    app = client.app
    feeds: events.Feeds = app.state.live_feeds  # type: ignore[attr-defined]
    db: store.Store = app.state.live_store  # type: ignore[attr-defined]

    def render(snapshot: Snapshot, first: bool) -> Iterator[ServerSentEvent]:
        return iter((ServerSentEvent(data=str(len(snapshot.students)), event="class"),))

    async def open_streams() -> tuple[int, int, list[str]]:
        opened = asyncio.Event()  # told once a stream's page shows what it must
        async with db.session(write=False) as session:
            live = await store.class_by_code(session, code)
        assert live is not None
        before = snapshots_alive()
        waiting = []
        firsts = []
        for _ in range(STREAMS):  # each (re)connecting stream reads the class anew
            stream = events._follow(feeds, live.id, render, opened.set, None)
            firsts.append((await stream.__anext__()).data)
            # Its event sent, the stream waits for the class's next change, as a page's does.
            opened.clear()
            waiting.append(asyncio.ensure_future(stream.__anext__()))
            await opened.wait()
        held = snapshots_alive() - before
        for next_event in waiting:
            next_event.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        return before, held, firsts

    before, held, firsts = client.portal.call(open_streams)  # type: ignore[union-attr]
    assert firsts == ["5"] * STREAMS  # each stream's first event: the class as it is
    assert before == 0  # no stream open: no copy of the class held
    assert held == 1  # the feed's, however many streams are open
    assert feeds.followed() == []  # the last stream closed: the class is no longer followed
