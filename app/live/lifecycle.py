"""The live class's part of the server's life: open the store and migrate it, purge old classes
(at start and daily), run the broker; and ``python -m app purge`` and ``migrate``."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from fastapi import FastAPI

from app.lesson.course import ServedLessons
from app.live.broker import Broker, PollingBroker
from app.live.events import Feeds
from app.live.migrate import revision, upgrade
from app.live.redis_broker import RedisBroker
from app.live.service import LiveService
from app.live.store import Store, database_url, purge
from app.settings import Settings

log = logging.getLogger("atlas")
DAY_S = 24 * 60 * 60
T = TypeVar("T")


def open_store(settings: Settings) -> Store:
    return Store(database_url(settings.database_url, settings.data_dir))


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
    broker: Broker = (
        RedisBroker(store, settings.redis_url) if settings.redis_url else PollingBroker(store)
    )
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
