"""The live class's part of the server's life: open the store and migrate it, purge old classes
(at start and daily), run the broker; and ``python -m app purge``."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from app.lesson.course import ServedLessons
from app.live.broker import PollingBroker
from app.live.events import Feeds
from app.live.migrate import upgrade
from app.live.service import LiveService
from app.live.store import Store, database_url, make_engine, purge
from app.settings import Settings

log = logging.getLogger("atlas")
DAY_S = 24 * 60 * 60


def open_store(settings: Settings) -> Store:
    return Store(make_engine(database_url(settings.database_url, settings.data_dir)))


async def _purge(service: LiveService, settings: Settings) -> None:
    removed = await service.purge(settings.class_retention_days)
    if removed:
        log.info("deleted %d classes older than %g days", removed, settings.class_retention_days)


async def _daily_purge(service: LiveService, settings: Settings) -> None:
    while True:
        await asyncio.sleep(DAY_S)
        try:
            await _purge(service, settings)
        except Exception:  # logged; tomorrow tries again
            log.exception("the daily purge of old classes failed")


@contextlib.asynccontextmanager
async def running(app: FastAPI, settings: Settings, course: ServedLessons) -> AsyncIterator[None]:
    """The live class for the life of the server: ``app.state.live`` and its feeds."""
    store = open_store(settings)
    await upgrade(store, settings.data_dir)
    broker = PollingBroker(store)
    service = LiveService(store, broker, course, settings.class_limit)
    await _purge(service, settings)
    app.state.live = service
    app.state.live_feeds = Feeds(service, {})
    await broker.start()
    purging = asyncio.create_task(_daily_purge(service, settings), name="live-daily-purge")
    try:
        yield
    finally:
        purging.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await purging
        await broker.stop()
        await store.close()


def purge_now(settings: Settings) -> int:
    """``python -m app purge``: delete the classes past their retention now; how many."""

    async def run() -> int:
        store = open_store(settings)
        try:
            await upgrade(store, settings.data_dir)
            async with store.session() as session:
                return await purge(session, settings.class_retention_days)
        finally:
            await store.close()

    return asyncio.run(run())
