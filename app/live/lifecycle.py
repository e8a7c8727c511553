"""The live class's part of the server's life: open the store and migrate it, purge old classes
(at start and daily), follow the other workers' changes; and ``python -m app purge`` and
``migrate``."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from fastapi import FastAPI

from app.lesson.course import ServedLessons
from app.live.answers import Answers
from app.live.drags import Drags
from app.live.events import Feeds
from app.live.guesses import Guesses
from app.live.instructor import password_guesses
from app.live.migrate import revision, upgrade
from app.live.notify import source_for
from app.live.service import LiveService
from app.live.store import UNJOINED_HOURS, Store, database_url, purge
from app.live.streams import Streams
from app.settings import Settings

log = logging.getLogger("atlas")
DAY_S = 24 * 60 * 60
T = TypeVar("T")


def open_store(settings: Settings) -> Store:
    return Store(database_url(settings.database_url, settings.data_dir))


async def _purge(db: Store, settings: Settings) -> None:
    async with db.session() as session:
        removed = await purge(session, settings.class_retention_days)
    if removed:
        log.info(
            "deleted %d %s older than %g days or unjoined after %d hours",
            removed,
            "class" if removed == 1 else "classes",
            settings.class_retention_days,
            UNJOINED_HOURS,
        )


async def _daily_purge(db: Store, settings: Settings) -> None:
    while True:
        await asyncio.sleep(DAY_S)
        try:
            await _purge(db, settings)
        except Exception:  # logged; tomorrow tries again
            log.exception("the daily purge of old classes failed")


@contextlib.asynccontextmanager
async def running(app: FastAPI, settings: Settings, course: ServedLessons) -> AsyncIterator[None]:
    """The live class for the life of the server: ``app.state.live`` (the service),
    ``live_store``, ``live_feeds`` (the classes this worker follows), ``live_source``,
    ``live_answers`` and ``live_drags`` (this worker's writers of answers and of dragged lab
    states) and ``password_guesses``."""
    store = open_store(settings)
    await upgrade(store, settings.data_dir)
    service = LiveService(course, settings.class_limit, settings.class_size)
    await _purge(store, settings)
    feeds = Feeds(service, store)
    source = source_for(store, feeds.followed, feeds.wake)
    app.state.live, app.state.live_store = service, store
    app.state.live_feeds, app.state.live_source = feeds, source
    app.state.password_guesses = password_guesses()
    app.state.live_guesses = Guesses(
        "code",
        "Too many class codes tried from here that lead to no class (check the code)",
        free=settings.code_misses_per_minute,
    )
    app.state.live_streams = Streams(settings.max_streams)
    app.state.live_drags = drags = Drags(store, feeds.wake, service.has_lab)
    app.state.live_answers = answers = Answers(store, service, feeds.wake)
    await source.start()
    await drags.start()
    purging = asyncio.create_task(_daily_purge(store, settings), name="live-daily-purge")
    try:
        yield
    finally:
        purging.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await purging
        await answers.stop()
        await drags.stop()
        await source.stop()
        await store.close()


def _beside_the_server(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    """Open the store, bring it to the newest revision (under the same lock as a starting
    server), do ``work``, close it: the commands that run beside the server."""

    async def run() -> T:
        store = open_store(settings)
        try:
            await upgrade(store, settings.data_dir)
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(run())


def purge_now(settings: Settings) -> int:
    """``python -m app purge``: delete the classes past their retention now; how many."""

    async def work(store: Store) -> int:
        async with store.session() as session:
            return await purge(session, settings.class_retention_days)

    return _beside_the_server(settings, work)


def migrate_now(settings: Settings) -> str:
    """``python -m app migrate``: apply the migrations alone (before replicas start, or after
    an upgrade); the database's kind and revision afterwards."""

    async def work(store: Store) -> str:
        return f"{store.engine.dialect.name} database at revision {await revision(store)}"

    return _beside_the_server(settings, work)
