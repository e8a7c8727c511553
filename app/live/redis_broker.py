"""The broker for several replicas: every class change is published on Redis, and each worker of
each replica tells the streams it holds (issue 32).

Redis only says "look": the change is already in the database, so a message lost while Redis is
away costs a look, never an answer. While this worker cannot reach Redis it falls back to the
database's version counters (:class:`PollingBroker`'s poll), so the classes stay live; once it
is back, every class this worker follows is looked at again (a reconnecting stream catches up
from the database), and changes that could not be published are published then.
"""

import asyncio
import contextlib
import logging
import secrets

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.live.broker import PollingBroker
from app.live.database import backoff
from app.live.store import Store

log = logging.getLogger("atlas")
CHANNEL = "atlas:class-changed"
# A Redis that stops answering (not only one that refuses) is noticed within this.
SOCKET_TIMEOUT_S = 5.0
HEALTH_CHECK_S = 2


class RedisBroker(PollingBroker):
    """Publish on Redis, listen on Redis; poll the database only while Redis is unreachable."""

    def __init__(self, store: Store, url: str) -> None:
        super().__init__(store)
        self.url = url
        # Messages this worker sent come back to it: it has told its own streams already.
        self._me = secrets.token_hex(8)
        self._client: Redis | None = None
        self._outbox: set[int] = set()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.connected = asyncio.Event()

    async def start(self) -> None:
        self._client = Redis.from_url(
            self.url,
            socket_connect_timeout=SOCKET_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S,
            health_check_interval=HEALTH_CHECK_S,
        )
        # Until the subscription is up, the database's counters keep the classes live.
        await super().start()
        self._tasks = [
            asyncio.create_task(self._listen(), name="live-broker-redis-listen"),
            asyncio.create_task(self._send(), name="live-broker-redis-send"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await super().stop()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def publish(self, class_id: int) -> None:
        super().publish(class_id)  # this worker's own streams, at once
        self._outbox.add(class_id)
        self._wake.set()

    async def ping(self) -> bool:
        """Whether this worker is subscribed and Redis answers now (for /healthz)."""
        if self._client is None or not self.connected.is_set():
            return False
        try:
            return bool(await self._client.ping())
        except (RedisError, OSError):
            return False

    def _look_again(self) -> None:
        for class_id in list(self._signals):
            super().publish(class_id)

    async def _listen(self) -> None:
        assert self._client is not None
        attempt = 0
        while True:
            try:
                async with self._client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    await self._connected()
                    attempt = 0
                    async for message in pubsub.listen():
                        self._received(message["data"])
            except (RedisError, OSError) as error:
                await self._disconnected(error, attempt)
                await asyncio.sleep(backoff(attempt))
                attempt += 1

    async def _connected(self) -> None:
        log.info("live class broker: subscribed on Redis")
        await PollingBroker.stop(self)
        self.connected.set()
        self._wake.set()  # what could not be published meanwhile goes now
        self._look_again()  # and what others changed meanwhile is read from the database

    async def _disconnected(self, error: Exception, attempt: int) -> None:
        if self.connected.is_set() or attempt == 0:
            log.warning("live class broker: Redis unreachable (%s); polling the database", error)
        self.connected.clear()
        if self._task is None:
            await PollingBroker.start(self)

    def _received(self, data: bytes) -> None:
        sender, _, class_id = data.decode().partition(":")
        if sender != self._me and class_id.isdigit():
            super().publish(int(class_id))

    async def _send(self) -> None:
        assert self._client is not None
        attempt = 0
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox:
                class_id = self._outbox.pop()
                try:
                    await self._client.publish(CHANNEL, f"{self._me}:{class_id}")
                    attempt = 0
                except (RedisError, OSError):
                    # Kept for later; the others poll the database meanwhile.
                    self._outbox.add(class_id)
                    await asyncio.sleep(backoff(attempt))
                    attempt += 1
