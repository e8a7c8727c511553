"""``GET /class/{CODE}/events``: the page's live parts as Server-Sent Events.

On (re)connect the stream first sends what the page must show now, then each change: a dropped
connection or a restarted server heals itself (Phoenix LiveView's and Hotwire's habit). One
:class:`Feed` per class and worker reads each new snapshot once for all of that worker's streams,
at most every ``MIN_GAP_S`` (500 answers in a second are a handful of reads, not 500); a
student's stream renders only when what their page shows has changed.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

from app.live.broker import Signal
from app.live.database import backoff, unreachable
from app.live.pages import host_context, render, screen_context, student_context
from app.live.service import LiveService, Snapshot
from app.live.view import student_view

log = logging.getLogger("atlas")
MIN_GAP_S = 0.1
PING_S = 15


class Feed:
    """One class's latest snapshot in this worker, shared by its streams."""

    def __init__(self, service: LiveService, class_id: int) -> None:
        self.service = service
        self.class_id = class_id
        self.snapshot: Snapshot | None = None
        self.changed = Signal()
        self.holders = 0
        self.failed = False
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name=f"live-feed-{self.class_id}")
        await self._ready.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _read(self) -> Snapshot | None:
        """The class now. While the database is away the streams keep what they show and this
        tries again, so they go on by themselves once it is back."""
        attempt = 0
        while True:
            try:
                return await self.service.snapshot(self.class_id, for_feed=True)
            except Exception as error:
                if not unreachable(error):
                    raise
                await asyncio.sleep(backoff(attempt))
                attempt += 1

    async def _follow(self) -> None:
        try:
            async with self.service.broker.subscribe(self.class_id) as told:
                seen = told.generation
                self.snapshot = await self._read()
                self._ready.set()
                while self.snapshot is not None:
                    seen = await told.wait(seen)
                    await asyncio.sleep(MIN_GAP_S)  # what arrives meanwhile is read in one go
                    seen = told.generation
                    self._offer(await self._read())
        except Exception:
            self._fail()

    def _fail(self) -> None:
        """Not the database away (``_read`` waits for it): this feed will read nothing more,
        and its streams would wait for changes forever. They end instead, and their pages
        reconnect (EventSource does by itself) to a new feed."""
        log.exception("live class feed of class %s failed", self.class_id)
        self.failed = True
        self._ready.set()
        self.changed.fire()

    async def confirm(self) -> Snapshot | None:
        """The class read now, not when this feed last looked: what a stream must see before it
        ends, since a student who has just joined (through another worker, or within the
        feed's gap) is missing from an older snapshot but not gone."""
        try:
            self._offer(await self._read())
        except Exception:
            self._fail()
        return self.snapshot

    def _offer(self, latest: Snapshot | None) -> None:
        """Keep ``latest`` if it is newer (versions only grow; None: the class is deleted)."""
        current = self.snapshot
        if current is None:
            return
        if latest is None or latest.version > current.version:
            self.snapshot = latest
            self.changed.fire()


@dataclass
class Feeds:
    """This worker's feeds, one per class with a stream open."""

    service: LiveService
    feeds: dict[int, Feed]

    @contextlib.asynccontextmanager
    async def follow(self, class_id: int) -> AsyncIterator[Feed]:
        feed = self.feeds.get(class_id)
        fresh = feed is None or feed.failed  # a failed feed's streams are ending: start anew
        if feed is None or fresh:  # (both: for the type checker)
            feed = self.feeds[class_id] = Feed(self.service, class_id)
        feed.holders += 1
        try:
            if fresh:
                await feed.start()  # its first snapshot is read now
            else:
                await feed._ready.wait()
                # A stream (re)connecting starts from the database, not from what this feed last
                # read: a change whose word never came (a replica killed before publishing) heals.
                # (A feed that failed meanwhile ends the stream: its page reconnects.)
                if not feed.failed:
                    await feed.confirm()
            yield feed
        finally:
            feed.holders -= 1
            if not feed.holders:
                if self.feeds.get(class_id) is feed:
                    del self.feeds[class_id]
                await feed.stop()


Renderer = Callable[[Snapshot], tuple[object, str, Callable[[], str]] | None]


def _stream(request: Request, class_id: int, render_now: Renderer) -> EventSourceResponse:
    """Events from ``render_now(snapshot)`` → ``(key, event name, render)``: rendered and sent
    only when the key differs from the last one sent; None ends the stream (the class or the
    student is gone). A failed feed ends it without a word: the page reconnects."""
    feeds: Feeds = request.app.state.live_feeds

    async def events() -> AsyncIterator[ServerSentEvent]:
        async with feeds.follow(class_id) as feed:
            last: object = None
            seen = feed.changed.generation
            snapshot = feed.snapshot
            while not feed.failed:
                made = render_now(snapshot) if snapshot is not None else None
                if made is None:  # gone, unless the feed's snapshot is older than the stream
                    snapshot = await feed.confirm()
                    made = render_now(snapshot) if snapshot is not None else None
                if made is None:
                    yield ServerSentEvent(data="", event="gone")
                    return
                key, name, html = made
                if key != last:
                    last = key
                    yield ServerSentEvent(data=html(), event=name)
                seen = await feed.changed.wait(seen)
                snapshot = feed.snapshot

    return EventSourceResponse(
        events(),
        ping=PING_S,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# The instructor's two views, each sent whole on every change: the template of its live part
# and its context. A view's name is also its event's.
VIEWS: dict[str, tuple[str, Callable[[Request, Snapshot], dict[str, object]]]] = {
    "host": ("live/_host_live.html", host_context),
    "screen": ("live/_screen_live.html", screen_context),
}


def view_stream(request: Request, class_id: int, view: str) -> EventSourceResponse:
    """The dashboard's (``host``) or the projector's (``screen``) live part."""
    template, context = VIEWS[view]

    def made(snapshot: Snapshot) -> tuple[object, str, Callable[[], str]]:
        return (snapshot.version, view, lambda: render(template, context(request, snapshot)))

    return _stream(request, class_id, made)


def student_stream(request: Request, class_id: int, participant_id: int) -> EventSourceResponse:
    def made(snapshot: Snapshot) -> tuple[object, str, Callable[[], str]] | None:
        student = snapshot.students.get(participant_id)
        if student is None:
            return None
        view = student_view(snapshot, student)
        key = (view.key, snapshot.lab_query, student.shared_query, snapshot.ended)
        return (
            key,
            "class",
            lambda: render("live/_student_live.html", student_context(request, snapshot, student)),
        )

    return _stream(request, class_id, made)
