"""One pool for every uvicorn worker: the holder of a file lock owns it, the others forward to it.

Each web worker runs a :class:`ConfirmService`. The first to take ``flock`` on
``<runtime dir>/pool.lock`` starts the pool and listens on ``<runtime dir>/pool.sock``; the
others send their jobs there (one JSON line each way per connection). The kernel releases the
lock when its holder dies, and a waiting worker then takes over and starts a fresh pool. So a
container holds at most ``world`` torch processes however many web workers it runs. No torch.
"""

import asyncio
import contextlib
import fcntl
import importlib.util
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.confirm.jobs import DistributedResult, Job
from app.confirm.pool import (
    ConfirmBusyError,
    ConfirmUnavailableError,
    Outcome,
    Pool,
    PoolConfig,
    Scheduler,
)
from app.settings import Settings

log = logging.getLogger("atlas.confirm")

INSTALL_HINT = (
    "PyTorch is not installed on this server, so the real torch.distributed run is unavailable;"
    " everything else works. `make run` installs the CPU build (unless WITH_TORCH=no), or by"
    " hand: pip install -e '.[torch]' --extra-index-url https://download.pytorch.org/whl/cpu"
)
DISABLED = (
    "The torch.distributed confirmation is turned off on this server (ATLAS_CONFIRM_ENABLED=false)."
)
TAKEOVER_POLL_SECONDS = 1.0
CONNECT_ATTEMPTS = 20

Role = Literal["owner", "peer", "off"]


class ServiceStatus(BaseModel):
    """The pool as this web worker sees it: what ``GET /api/confirm/status`` reports."""

    state: str = Field(description="starting, ready, failed, stopped or unavailable")
    message: str
    role: Role = Field(description="owner: this worker runs the pool; peer: it forwards jobs")
    world_size: int = Field(description="Ranks in the pool: the most one confirmation can use.")
    torch_version: str


def torch_installed() -> bool:
    """Whether torch can be imported, found without importing it in this process."""
    return importlib.util.find_spec("torch") is not None


class ConfirmService:
    """This web worker's door to the shared pool: owner of it, or a peer that forwards."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runtime_dir = settings.confirm_runtime_dir
        self.role: Role = "off"
        self.scheduler: Scheduler | None = None
        self._off_message = ""
        self._lock_fd: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def off_message(self) -> str:
        """Why this server cannot confirm at all (torch missing, turned off), else ""."""
        return self._off_message if self.role == "off" else ""

    @property
    def socket_path(self) -> Path:
        return self.runtime_dir / "pool.sock"

    async def start(self) -> None:
        """Take the pool's lock and start it in the background, or watch for the lock."""
        if not self.settings.confirm_enabled:
            self._off_message = DISABLED
        elif not torch_installed():
            self._off_message = INSTALL_HINT
        if self._off_message:
            log.warning("%s", self._off_message)
            return
        try:
            self.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._lock_fd = os.open(self.runtime_dir / "pool.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            # Everything else still works; the panel and the API say why this part does not.
            self._off_message = (
                f"The torch.distributed confirmation cannot use its runtime folder"
                f" {self.runtime_dir} (ATLAS_CONFIRM_RUNTIME_DIR): {exc.strerror or exc}."
            )
            log.error(self._off_message)
            return
        self.role = "peer"
        if not await self._try_take_over():
            self._watch = asyncio.create_task(self._watch_lock())

    def _try_lock(self) -> bool:
        assert self._lock_fd is not None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    async def _try_take_over(self) -> bool:
        if self._stopping or self.role == "owner" or not self._try_lock():
            return self.role == "owner"
        settings = self.settings
        pool = Pool(
            PoolConfig(
                world=settings.confirm_world_size,
                group_timeout=settings.confirm_group_timeout_s,
                init_timeout=settings.confirm_start_timeout_s,
                job_timeout=settings.confirm_job_timeout_s,
                store_dir=self.runtime_dir,
            )
        )
        self.scheduler = Scheduler(
            pool,
            queue_limit=settings.confirm_queue_limit,
            cache_size=settings.confirm_cache_size,
            start_timeout=settings.confirm_start_timeout_s,
        )
        self.role = "owner"
        pool.start()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        try:
            self._server = await asyncio.start_unix_server(
                self._serve_peer, path=str(self.socket_path)
            )
        except OSError as exc:
            # This worker still confirms; only other web workers cannot reach its pool.
            log.error("cannot listen on %s for other web workers: %s", self.socket_path, exc)
        log.info("this worker (pid %d) owns the confirm pool", os.getpid())
        return True

    async def _watch_lock(self) -> None:
        while self.role == "peer" and not self._stopping:
            await asyncio.sleep(TAKEOVER_POLL_SECONDS)
            await self._try_take_over()

    async def submit(self, job: Job) -> Outcome:
        """Run a job on the shared pool. Raises ConfirmUnavailableError or ConfirmBusyError."""
        if self.role == "off":
            raise ConfirmUnavailableError(self._off_message)
        if job.world_size > self.settings.confirm_world_size:
            raise ConfirmUnavailableError(
                f"this server's pool runs at most {self.settings.confirm_world_size} ranks"
            )
        if self.role == "owner":
            assert self.scheduler is not None
            return await self.scheduler.submit(job)
        answer = await self._ask_owner({"op": "run", "job": job.model_dump()})
        if answer is None:
            if await self._try_take_over():
                assert self.scheduler is not None
                return await self.scheduler.submit(job)
            raise ConfirmUnavailableError(
                "the web worker that runs the torch pool is restarting; try again in a few seconds"
            )
        if "busy" in answer:
            raise ConfirmBusyError(int(answer["busy"]))
        if "unavailable" in answer:
            raise ConfirmUnavailableError(str(answer["unavailable"]))
        done = answer["ok"]
        return Outcome(
            result=DistributedResult.model_validate(done["result"]),
            elapsed_ms=float(done["elapsed_ms"]),
            attempts=int(done["attempts"]),
            cached=bool(done["cached"]),
        )

    async def status(self) -> ServiceStatus:
        """The pool's state as seen from this worker."""
        world = self.settings.confirm_world_size
        if self.role == "off":
            return ServiceStatus(
                state="unavailable",
                message=self._off_message,
                role="off",
                world_size=world,
                torch_version="",
            )
        if self.role == "owner":
            assert self.scheduler is not None
            pool = self.scheduler.pool
            return ServiceStatus(
                state=pool.state,
                message=pool.message,
                role="owner",
                world_size=world,
                torch_version=pool.torch_version,
            )
        answer = await self._ask_owner({"op": "status"})
        if answer is None or "status" not in answer:
            return ServiceStatus(
                state="starting",
                message="waiting for the pool's owner",
                role="peer",
                world_size=world,
                torch_version="",
            )
        seen = answer["status"]
        return ServiceStatus.model_validate({**seen, "role": "peer", "world_size": world})

    async def _ask_owner(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """One request to the owner over its socket; None if no owner answers."""
        for _ in range(CONNECT_ATTEMPTS):
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.socket_path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                # The lock's new holder may not be listening yet.
                await asyncio.sleep(0.1)
        else:
            return None
        settings = self.settings
        # Long enough for a start, a failed job, a rebuild and the retry; never forever.
        patience = 2 * settings.confirm_start_timeout_s + 3 * settings.confirm_job_timeout_s
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), timeout=patience)
        except (ConnectionError, OSError, TimeoutError):
            return None
        finally:
            writer.close()
        if not line:
            return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def _serve_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await reader.readline())
            answer = await self._answer_peer(request)
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, json.JSONDecodeError) as exc:
            log.warning("a peer's confirm request failed: %s", exc)
        finally:
            writer.close()

    async def _answer_peer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "status":
            seen = await self.status()
            return {
                "status": {
                    "state": seen.state,
                    "message": seen.message,
                    "torch_version": seen.torch_version,
                }
            }
        try:
            outcome = await self.submit(Job.model_validate(request["job"]))
        except ConfirmBusyError as busy:
            return {"busy": busy.retry_after}
        except ConfirmUnavailableError as unavailable:
            return {"unavailable": unavailable.message}
        return {
            "ok": {
                "result": outcome.result.model_dump(),
                "elapsed_ms": outcome.elapsed_ms,
                "attempts": outcome.attempts,
                "cached": outcome.cached,
            }
        }

    async def stop(self) -> None:
        """Stop watching, and if this worker owns the pool, stop it and release the lock."""
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        if self.scheduler is not None:
            await self.scheduler.pool.stop()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock: a peer may take over
            self._lock_fd = None
        self.role = "off"
        self._off_message = "the server is shutting down"
