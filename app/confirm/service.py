"""Each web worker's door to the one pool: it asks the pool's owner (:mod:`app.confirm.host`)
over its socket, and under plain uvicorn (no launcher) the worker that takes the owner's lock is
that owner while the others watch the lock to take over. A socket that is not there yet or has
a full backlog is "busy": asked again with a growing pause for a few seconds, then a 503 with
Retry-After. Concurrent status polls in one worker share one request to the owner. No torch.
"""

import asyncio
import contextlib
import logging
import os
import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.confirm.frames import FrameError, read_frame, write_frame
from app.confirm.host import PoolHost, off_reason, open_lock, socket_path
from app.confirm.jobs import Job, Outcome
from app.confirm.pool import ConfirmError, ConfirmUnavailableError
from app.settings import Settings

log = logging.getLogger("atlas.confirm")

TAKEOVER_POLL_SECONDS = 1.0
# A busy or restarting owner is asked again after 20 ms, then twice as long each time up to
# 0.5 s, for at most 5 s: long enough for a backlog to drain, short enough for a browser.
BUSY_FIRST_PAUSE_S = 0.02
BUSY_LONGEST_PAUSE_S = 0.5
BUSY_PATIENCE_S = 5.0
BUSY_RETRY_AFTER_S = 5
STATUS_PATIENCE_S = 5.0

Role = Literal["owner", "peer", "off"]


class ServiceStatus(BaseModel):
    """The pool as this web worker sees it: what ``GET /api/confirm/status`` reports."""

    state: str = Field(description="starting, ready, failed, stopped or unavailable")
    message: str
    role: Role = Field(
        description=(
            "owner: this web worker runs the pool's owner (plain uvicorn); peer: it asks the"
            " owner (its own process under `python -m app`, or another worker); off: no pool"
        )
    )
    world_size: int = Field(description="Ranks in the pool: the most one confirmation can use.")
    torch_version: str
    runs: int = Field(default=0, description="Jobs the pool has run since its owner started.")
    running: bool = Field(default=False, description="Whether a job is running now.")
    waiting: int = Field(default=0, description="Jobs queued behind the running one.")


class ConfirmService:
    """This web worker's door to the shared pool."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Why this server cannot confirm at all (torch missing, turned off), else "".
        self.off_message = ""
        self._host: PoolHost | None = None
        self._watch: asyncio.Task[None] | None = None
        self._status: asyncio.Task[ServiceStatus] | None = None

    @property
    def role(self) -> Role:
        if self.off_message:
            return "off"
        return "owner" if self._host is not None and self._host.scheduler is not None else "peer"

    async def start(self) -> None:
        """Ask the launcher's owner, or take the owner's lock, or watch for it."""
        self.off_message = off_reason(self.settings)
        if self.off_message:
            log.warning("%s", self.off_message)
            return
        host = PoolHost(self.settings)
        try:
            if self.settings.confirm_pool_process:
                # The owner is another process; a folder it cannot use, this worker says why.
                os.close(open_lock(self.settings))
                return
            owner = host.take_lock()
        except OSError as exc:
            self._unusable(exc)
            return
        self._host = host
        if owner:
            await self._own(host)
        else:
            self._watch = asyncio.create_task(self._watch_lock(host))

    def _unusable(self, exc: OSError) -> None:
        # Everything else still works; the panel and the API say why this part does not.
        self.off_message = (
            f"The torch.distributed confirmation cannot use its runtime folder"
            f" {self.settings.confirm_runtime_dir} (ATLAS_CONFIRM_RUNTIME_DIR):"
            f" {exc.strerror or exc}."
        )
        log.error(self.off_message)

    async def _own(self, host: PoolHost) -> None:
        try:
            await host.start()
        except OSError as exc:  # cannot listen on its socket: no owner here, and no ranks
            self._unusable(exc)
            await host.stop()

    async def _watch_lock(self, host: PoolHost) -> None:
        while not host.take_lock():
            await asyncio.sleep(TAKEOVER_POLL_SECONDS)
        await self._own(host)

    async def submit(self, job: Job, client: str) -> Outcome:
        """Run a job on the shared pool in ``client``'s turn. Raises ConfirmError (429 or 503)."""
        if self.off_message:
            raise ConfirmUnavailableError(self.off_message)
        settings = self.settings
        # Long enough for a start, a failed job, a rebuild and the retry; never forever.
        patience = 2 * settings.confirm_start_timeout_s + 3 * settings.confirm_job_timeout_s
        answer = await self._ask({"op": "run", "job": job.model_dump(), "client": client}, patience)
        if "error" in answer:
            raise ConfirmError(*answer["error"])
        return Outcome.model_validate(answer["ok"])

    async def status(self) -> ServiceStatus:
        """The pool's state as seen from this worker; concurrent callers share one request."""
        world = self.settings.confirm_world_size
        if self.off_message:
            return ServiceStatus(
                state="unavailable",
                message=self.off_message,
                role="off",
                world_size=world,
                torch_version="",
            )
        if self._status is None or self._status.done():
            self._status = asyncio.create_task(self._ask_status())
        return await asyncio.shield(self._status)

    async def _ask_status(self) -> ServiceStatus:
        try:
            status = (await self._ask({"op": "status"}, STATUS_PATIENCE_S))["status"]
        except ConfirmUnavailableError:
            status = {"state": "starting", "message": "waiting for the pool's owner"}
        world = self.settings.confirm_world_size
        return ServiceStatus.model_validate(
            {"torch_version": "", **status, "role": self.role, "world_size": world}
        )

    async def _ask(self, request: dict[str, Any], patience: float) -> dict[str, Any]:
        """One request to the owner and its answer. Raises ConfirmUnavailableError (with a
        Retry-After) when no owner takes it within BUSY_PATIENCE_S, or it ends without one."""
        path = str(socket_path(self.settings))
        deadline = time.monotonic() + BUSY_PATIENCE_S
        pause = BUSY_FIRST_PAUSE_S
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(path)
                break
            except OSError:
                # Not listening yet (starting, restarting) or its backlog is full (busy).
                if time.monotonic() + pause > deadline:
                    raise ConfirmUnavailableError(
                        "the confirmation pool's owner is starting or busy; try again shortly",
                        retry_after=BUSY_RETRY_AFTER_S,
                    ) from None
                await asyncio.sleep(pause)
                pause = min(2 * pause, BUSY_LONGEST_PAUSE_S)
        try:
            await write_frame(writer, request)
            answer = await asyncio.wait_for(read_frame(reader), timeout=patience)
        except (OSError, FrameError, TimeoutError) as exc:
            answer = None
            log.warning("the pool's owner did not answer: %s", exc or type(exc).__name__)
        finally:
            writer.close()
        if not isinstance(answer, dict):
            raise ConfirmUnavailableError(
                "the confirmation pool's owner stopped before answering (it restarts);"
                " try again in a few seconds",
                retry_after=BUSY_RETRY_AFTER_S,
            )
        return answer

    async def stop(self) -> None:
        """Stop watching, and if this worker owns the pool, stop it and release the lock."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._host is not None:
            await self._host.stop()
        self.off_message = "the server is shutting down"
