"""Each web worker's door to the one pool: a thin client of the pool's owner, a process of its
own (:mod:`app.confirm.host`) that one web worker's launcher started (:mod:`app.confirm.launcher`).
A socket that is not there yet or has a full backlog is "busy": asked again with a growing pause
for a few seconds, then refused with a Retry-After. Concurrent status polls in one worker share
one request to the owner. No torch.
"""

import asyncio
import logging
import os
import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.confirm.frames import FrameError, read_frame, write_frame
from app.confirm.host import off_reason, open_lock, socket_path
from app.confirm.jobs import Job, Outcome
from app.confirm.launcher import Launcher
from app.confirm.pool import REFUSALS, UnavailableError
from app.settings import Settings

log = logging.getLogger("atlas.confirm")

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
            "owner: the pool's owner is this web worker's child process; peer: another web"
            " worker's; off: no pool"
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
        self._launcher: Launcher | None = None
        self._status: asyncio.Task[ServiceStatus] | None = None

    @property
    def role(self) -> Role:
        if self.off_message:
            return "off"
        return "owner" if self._launcher is not None and self._launcher.owns else "peer"

    async def start(self) -> None:
        """Start this worker's launcher: it starts the owner if no other worker's holds the lock."""
        self.off_message = off_reason(self.settings)
        if self.off_message:
            log.warning("%s", self.off_message)
            return
        try:
            os.close(open_lock(self.settings))  # a folder the owner cannot use, the page says why
        except OSError as exc:
            # Everything else still works; the panel and the API say why this part does not.
            self.off_message = (
                f"The torch.distributed confirmation cannot use its runtime folder"
                f" {self.settings.confirm_runtime_dir} (ATLAS_CONFIRM_RUNTIME_DIR):"
                f" {exc.strerror or exc}."
            )
            log.error(self.off_message)
            return
        self._launcher = Launcher(self.settings)
        self._launcher.start()

    async def submit(self, job: Job, client: str) -> Outcome:
        """Run a job on the shared pool in ``client``'s turn. Raises QueueFullError or
        UnavailableError."""
        if self.off_message:
            raise UnavailableError(self.off_message)
        settings = self.settings
        # Long enough for a start, a failed job, a rebuild and the retry; never forever.
        patience = 2 * settings.confirm_start_timeout_s + 3 * settings.confirm_job_timeout_s
        answer = await self._ask({"op": "run", "job": job.model_dump(), "client": client}, patience)
        if "refused" in answer:
            kind, detail, retry_after = answer["refused"]
            raise REFUSALS[kind](detail, retry_after)
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
        except UnavailableError:
            status = {"state": "starting", "message": "waiting for the pool's owner"}
        world = self.settings.confirm_world_size
        return ServiceStatus.model_validate(
            {"torch_version": "", **status, "role": self.role, "world_size": world}
        )

    async def _ask(self, request: dict[str, Any], patience: float) -> dict[str, Any]:
        """One request to the owner and its answer. Raises UnavailableError (with a
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
                    raise UnavailableError(
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
            raise UnavailableError(
                "the confirmation pool's owner stopped before answering (it restarts);"
                " try again in a few seconds",
                retry_after=BUSY_RETRY_AFTER_S,
            )
        return answer

    async def stop(self) -> None:
        """Stop this worker's launcher, and with it the owner if it is this worker's child."""
        if self._launcher is not None:
            await asyncio.to_thread(self._launcher.stop)
        self.off_message = "the server is shutting down"
