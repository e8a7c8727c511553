"""``GET /class/{CODE}/events``: the page's live parts as Server-Sent Events.

On (re)connect a stream first sends the whole of what its page shows now, then only what
changed: a dropped connection or a restarted server heals itself (Phoenix LiveView's and
Hotwire's habit). One :class:`Feed` per class and worker reads each new snapshot once for all
of that worker's streams, at most every ``MIN_GAP_S`` (500 answers in a second are a handful of
reads, not 500). :class:`Feeds` is the worker's one registry of the classes it follows.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

from app.live.database import backoff, unreachable
from app.live.labs import labs_key
from app.live.notify import Signal
from app.live.pages import (
    class_labs_html,
    host_changes,
    host_parts,
    render,
    screen_context,
    student_context,
    student_lab_html,
)
from app.live.service import LiveService, Snapshot
from app.live.store import Store
from app.live.streams import Streams, Turn
from app.live.view import student_view

log = logging.getLogger("atlas")
MIN_GAP_S = 0.1
# The dashboard's details (its roster, counts of students, shared labs and the picture of the
# class's lab states) are sent at most once in this gap: 500 students dragging change the class
# 10 times a second, the details follow twice a second. The parts in URGENT go at once.
DETAILS_GAP_S = 0.5
URGENT = frozenset({"host-now"})
PING_S = 15


class Feed:
    """One class's latest snapshot in this worker, shared by its streams."""

    def __init__(self, service: LiveService, store: Store, class_id: int) -> None:
        self.service = service
        self.store = store
        self.class_id = class_id
        self.snapshot: Snapshot | None = None
        self.told = Signal()  # the class changed in the database: read it again
        self.changed = Signal()  # a new snapshot: the streams render it
        self.holders = 0
        self.failed = False
        self._reading = asyncio.Lock()  # one read at a time: the last one read is the newest
        self._reads_begun = 0  # reads of the class begun, and the number of the last one ended
        self._last_begun = 0
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
                async with self.store.feed_session() as session:
                    return await self.service.snapshot(session, self.class_id)
            except Exception as error:
                if not unreachable(error):
                    raise
                await asyncio.sleep(backoff(attempt))
                attempt += 1

    async def _follow(self) -> None:
        try:
            seen = self.told.generation
            await self.confirm()
            self._ready.set()
            while self.snapshot is not None and not self.failed:
                await self.told.wait(seen)
                await asyncio.sleep(MIN_GAP_S)  # what arrives meanwhile is read in one go
                seen = self.told.generation
                await self.confirm()
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
        arrived = self._reads_begun
        try:
            async with self._reading:
                if self._last_begun > arrived:
                    # A read begun after this caller arrived has ended: it is as new as one now.
                    # Streams opening together (a class connecting, or one client opening
                    # hundreds) share one read instead of each reading the whole class.
                    return self.snapshot
                self._reads_begun += 1
                begun = self._reads_begun
                latest = await self._read()
                self._last_begun = begun
        except Exception:
            self._fail()
            return self.snapshot
        if self._ready.is_set() and self.snapshot is None:
            return None  # deleted: stays so
        moved = latest != self.snapshot
        self.snapshot = latest
        if moved:  # a stream opening on an unchanged class wakes none of the others
            self.changed.fire()
        return latest


class Feeds:
    """This worker's feeds, one per class with a stream open: the classes it follows."""

    def __init__(self, service: LiveService, store: Store) -> None:
        self.service = service
        self.store = store
        self.feeds: dict[int, Feed] = {}

    def followed(self) -> list[int]:
        return list(self.feeds)

    def wake(self, class_ids: Iterable[int]) -> None:
        """These classes changed: their feeds read them again."""
        for class_id in class_ids:
            feed = self.feeds.get(class_id)
            if feed is not None:
                feed.told.fire()

    @contextlib.asynccontextmanager
    async def follow(self, class_id: int) -> AsyncIterator[Feed]:
        feed = self.feeds.get(class_id)
        fresh = feed is None or feed.failed  # a failed feed's streams are ending: start anew
        if feed is None or fresh:  # (both: for the type checker)
            feed = self.feeds[class_id] = Feed(self.service, self.store, class_id)
        feed.holders += 1
        try:
            if fresh:
                await feed.start()  # its first snapshot is read now
            else:
                await feed._ready.wait()
                # A stream (re)connecting starts from the database, not from what this feed last
                # read: a change whose word never came (a replica killed before it) heals.
                if not feed.failed:
                    await feed.confirm()
            yield feed
        finally:
            feed.holders -= 1
            if not feed.holders:
                if self.feeds.get(class_id) is feed:
                    del self.feeds[class_id]
                await feed.stop()


# What a stream sends for a snapshot: events (the whole page when ``first``, else what changed
# since it last rendered, which it keeps itself); None when the page has nothing left to show
# (the class or the student is gone). A stream keeps what it sent, never a snapshot: 1,000
# streams opened one after another each held the class as it was then, 300 KB a student.
Render = Callable[[Snapshot, bool], Iterator[ServerSentEvent] | None]
# When a stream wants to render again though nothing changed (a part it held back), as
# ``time.monotonic()``; None: only on a change.
Due = Callable[[], float | None]


async def _next_change(feed: Feed, seen: int, due: Due | None) -> int:
    """The feed's next change, or ``seen`` again when the stream is due to render anyway."""
    when = due() if due is not None else None
    if when is None:
        return await feed.changed.wait(seen)
    try:
        left = max(0.0, when - time.monotonic())
        return await asyncio.wait_for(feed.changed.wait(seen), left)
    except TimeoutError:
        return seen


async def _follow(
    feeds: Feeds, class_id: int, render_now: Render, opened: Callable[[], None], due: Due | None
) -> AsyncIterator[ServerSentEvent]:
    """Events from ``render_now`` as the class changes (and when ``due``); ``gone`` once its
    page has nothing left to show; nothing more once the feed failed (the page reconnects).
    ``opened`` is called once what the page shows now is sent (or nothing needed sending)."""
    async with feeds.follow(class_id) as feed:
        first = True
        seen = feed.changed.generation
        snapshot = feed.snapshot
        while not feed.failed:
            made = render_now(snapshot, first) if snapshot is not None else None
            if made is None:  # gone, unless the feed's snapshot is older than the stream
                snapshot = await feed.confirm()
                made = render_now(snapshot, first) if snapshot is not None else None
            if made is None:
                yield ServerSentEvent(data="", event="gone")
                return
            for event in made:
                yield event
            first = False
            snapshot = None  # not held while the stream waits
            opened()
            seen = await _next_change(feed, seen, due)
            snapshot = feed.snapshot


def _stream(
    request: Request,
    turn: Turn,
    class_id: int,
    view: Hashable,
    render_now: Render,
    due: Due | None = None,
) -> EventSourceResponse:
    """Events from ``render_now``, the one stream of ``view`` in this worker (app/live/streams.py:
    a newer stream of the view, or the cap, ends it with ``gone``, so its page stops). With
    ``due``, the stream also renders the same snapshot again when it is due."""
    feeds: Feeds = request.app.state.live_feeds
    streams: Streams = request.app.state.live_streams
    client = request.client.host if request.client else ""

    async def events() -> AsyncIterator[ServerSentEvent]:
        held = streams.open((class_id, view), client, request.scope)
        try:
            try:
                # Opened: the client's next stream may open.
                async for event in _follow(feeds, class_id, render_now, turn.release, due):
                    yield event
            except asyncio.CancelledError:
                if not held.ended:  # the server or the client ends it
                    raise
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                yield ServerSentEvent(data="", event="gone")
        finally:
            turn.release()
            streams.close(held)

    return EventSourceResponse(
        events(),
        ping=PING_S,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@dataclass
class _Details:
    """What one dashboard stream last sent of its details (the roster, the counts of students,
    the shared labs and the picture of the class's lab states), and whether a change of them is
    held back until the gap ends."""

    picture: object = None
    sent_at: float = float("-inf")
    held: bool = False


def host_stream(request: Request, turn: Turn, class_id: int, device: str) -> EventSourceResponse:
    """The dashboard: its live parts whole first (a page that reconnects may show older ones),
    then each part again only when it changed, a class of 2,000 sends a dozen rows at most,
    never its roster. What the instructor acts on (``URGENT``: the question, its bars and the
    counts joined and answered) goes at once; the details (the students who need attention,
    the counts of each kind, the shared labs, the picture of the class's lab states) at most
    once every ``DETAILS_GAP_S``: a change within the gap is held back and sent when it ends, so
    500 students dragging send the dashboard two events a second, not ten."""
    sent: dict[str, str] = {}  # what the page shows now, by part
    details = _Details()

    def held_until() -> float | None:
        return details.sent_at + DETAILS_GAP_S if details.held else None

    def made(snapshot: Snapshot, first: bool) -> Iterator[ServerSentEvent]:
        parts = host_parts(request, snapshot)
        changed = {part: html for part, html in parts.items() if sent.get(part) != html}
        picture = labs_key(snapshot)
        now = time.monotonic()
        if first or now >= details.sent_at + DETAILS_GAP_S:
            show_picture = picture != details.picture
            if changed.keys() - URGENT or show_picture:
                details.sent_at = now
            details.held = False
        else:
            show_picture = False
            details.held = bool(changed.keys() - URGENT) or picture != details.picture
            changed = {part: html for part, html in changed.items() if part in URGENT}
        sent.update(changed)
        html = host_changes(request, changed)
        if show_picture:
            html += class_labs_html(request, snapshot)
            details.picture = picture
        if html:
            yield ServerSentEvent(data=html, event="host")

    return _stream(request, turn, class_id, ("host", device), made, held_until)


def screen_stream(request: Request, turn: Turn, class_id: int, device: str) -> EventSourceResponse:
    """The projector: its live part whenever what it shows changed."""
    shown = [""]  # what it shows now

    def made(snapshot: Snapshot, first: bool) -> Iterator[ServerSentEvent]:
        html = render("live/_screen_live.html", screen_context(request, snapshot))
        if first or html != shown[0]:
            shown[0] = html
            yield ServerSentEvent(data=html, event="screen")

    return _stream(request, turn, class_id, ("screen", device), made)


@dataclass
class _Shown:
    """What one student's page shows now: its key (app/live/view.py) and whether the class has
    ended, their own lab state and the state sent to everyone, as last rendered."""

    key: object = None
    query: str = ""
    lab: str = ""


def student_stream(
    request: Request, turn: Turn, class_id: int, participant_id: int
) -> EventSourceResponse:
    """A student's page: rendered and sent only when what it shows has changed."""
    shown = _Shown()

    def made(snapshot: Snapshot, first: bool) -> Iterator[ServerSentEvent] | None:
        student = snapshot.students.get(participant_id)
        if student is None:
            return None
        now = (student_view(snapshot, student).key, snapshot.ended)
        # The instructor has just sent a state to everyone: this student's state became it
        # (their own drags, which their page already shows, are not sent back).
        sent_to_me = (
            not first
            and bool(snapshot.lab_query)
            and student.shared_query == snapshot.lab_query
            and (shown.query != student.shared_query or shown.lab != snapshot.lab_query)
        )
        same = not first and now == shown.key and not sent_to_me
        shown.key, shown.query, shown.lab = now, student.shared_query, snapshot.lab_query
        if same:
            return iter(())
        html = render("live/_student_live.html", student_context(request, snapshot, student))
        if sent_to_me:
            html += student_lab_html(request, snapshot, student)
        return iter((ServerSentEvent(data=html, event="class"),))

    return _stream(request, turn, class_id, ("student", participant_id), made)
