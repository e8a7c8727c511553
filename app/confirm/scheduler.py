"""The fair queue in front of the pool: one job at a time, taken in turn from each client.

A client is whoever the web side says asks (a live class's participant, else the peer address;
``app.routes.confirm.client_key``). Each client has its own queue and may have at most
``client_limit`` jobs waiting or running; the pool takes the next job from the client after the
one it last served, so a client that floods the queue waits behind its own jobs while everyone
else's go round. An identical job already waiting or running is not queued again: the second
asker waits for the same run. A small cache answers identical jobs that finished. Imports no
torch.
"""

import asyncio
import logging
import math
import time
from collections import OrderedDict, deque
from typing import NoReturn

from app.confirm.jobs import Job, Outcome
from app.confirm.pool import Pool, QueueFullError, UnavailableError, WorkerFaultError
from app.settings import Settings

log = logging.getLogger("atlas.confirm")


class Scheduler:
    """Round-robin between clients over one pool; used from one event loop."""

    def __init__(self, settings: Settings) -> None:
        self.pool = Pool(settings)
        self.queue_limit = settings.confirm_queue_limit
        self.client_limit = settings.confirm_client_limit
        self.cache_size = settings.confirm_cache_size
        self.start_timeout = settings.confirm_start_timeout_s
        self.runs = 0
        self._queues: OrderedDict[str, deque[tuple[Job, asyncio.Future[Outcome]]]] = OrderedDict()
        self._in_flight: dict[str, asyncio.Future[Outcome]] = {}
        self._cache: OrderedDict[str, Outcome] = OrderedDict()
        self._runner: asyncio.Task[None] | None = None
        self.serving: str | None = None  # the client whose job runs now
        self._typical_seconds = 0.05

    @property
    def waiting(self) -> int:
        """Jobs queued behind the one running."""
        return sum(len(jobs) for jobs in self._queues.values())

    def retry_after(self) -> int:
        """Seconds until the queue has probably drained: its length times a typical job."""
        return max(1, math.ceil((self.waiting + 1) * self._typical_seconds))

    def _refuse(self, reason: str) -> NoReturn:
        retry_after = self.retry_after()
        raise QueueFullError(f"{reason}; retry after {retry_after} s", retry_after)

    async def submit(self, job: Job, client: str) -> Outcome:
        """Run ``job`` for ``client`` in its turn. Raises QueueFullError (the client's share or
        the whole queue is full) or UnavailableError (the pool cannot run it)."""
        key = job.key()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key].model_copy(update={"cached": True})
        if key in self._in_flight:
            shared = await asyncio.shield(self._in_flight[key])
            return shared.model_copy(update={"cached": True})
        held = len(self._queues.get(client, ())) + (self.serving == client)
        if held >= self.client_limit:
            self._refuse(
                f"you already have {held} confirmation{'s' if held != 1 else ''} waiting or"
                f" running, the most one client may"
                f" (ATLAS_CONFIRM_CLIENT_LIMIT={self.client_limit})"
            )
        if self.serving is not None and self.waiting >= self.queue_limit:
            self._refuse("the confirmation queue is full")
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        self._queues.setdefault(client, deque()).append((job, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._serve())
        # Shielded: a client that hangs up leaves its job to finish for whoever else waits on it.
        return await asyncio.shield(future)

    async def _serve(self) -> None:
        while self._queues:
            client, jobs = self._queues.popitem(last=False)
            job, future = jobs.popleft()
            if jobs:
                self._queues[client] = jobs  # at the end: every other client goes first
            self.serving = client
            try:
                outcome = await self._run(job)
            except UnavailableError as exc:
                future.set_exception(exc)
                future.exception()  # whoever waited has it; nobody left is not an error
            except Exception as exc:  # a bug must answer its waiters, not hang them
                log.exception("a confirmation job failed unexpectedly")
                future.set_exception(UnavailableError(f"the confirmation failed: {exc}"))
                future.exception()
            else:
                future.set_result(outcome)
                self._cache[job.key()] = outcome
                while len(self._cache) > self.cache_size:  # 0: no cache
                    self._cache.popitem(last=False)
            finally:
                self.serving = None
                del self._in_flight[job.key()]

    async def _run(self, job: Job) -> Outcome:
        await self.pool.wait_ready(self.start_timeout)
        fault: WorkerFaultError | None = None
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                result = await self.pool.run(job)
            except WorkerFaultError as exc:
                fault = exc
                log.warning(
                    "confirm job failed on attempt %d: %s; rebuilding the pool", attempt, exc
                )
                # The retry waits for the fresh pool; after a second failure the answer does not.
                await self.pool.rebuild(wait=attempt == 1)
                if self.pool.state != "ready":
                    break
                continue
            seconds = time.perf_counter() - started
            self._typical_seconds = 0.8 * self._typical_seconds + 0.2 * seconds
            self.runs += 1
            return Outcome(result=result, elapsed_ms=seconds * 1000, attempts=attempt)
        raise UnavailableError(
            f"the torch.distributed run failed ({fault}); the pool was rebuilt"
            f" ({self.pool.message}). Try again in a few seconds."
        )

    async def stop(self) -> None:
        """Stop taking jobs: every waiting asker gets a 503, then the pool stops."""
        pending = list(self._in_flight.values())
        if self._runner is not None and not self._runner.done():
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        for future in pending:
            if not future.done():
                future.set_exception(UnavailableError("the server is shutting down"))
                future.exception()
        self._queues.clear()
        self._in_flight.clear()
        await self.pool.stop()
