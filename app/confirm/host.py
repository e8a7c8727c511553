"""The pool's one owner: the lock, the ranks, the fair queue, and the socket every web worker asks.

``python -m app`` starts it as a process of its own beside the web workers
(:mod:`app.confirm.launcher`: ``python -m app.confirm.host``), and restarts it if it dies. Under
plain uvicorn there is no launcher: the web worker that takes the lock runs the same
:class:`PoolHost` inside itself. Either way the web workers, that one included, ask it over
``<runtime dir>/pool.sock`` in length-prefixed frames (:mod:`app.confirm.frames`), one request
and one answer per connection. Holding ``flock`` on ``<runtime dir>/pool.lock`` makes it the owner:
a container runs at most ``world`` torch processes however many web workers or hosts start. No
torch in this process.
"""

import asyncio
import contextlib
import errno
import fcntl
import importlib.util
import logging
import os
import signal
from pathlib import Path
from typing import Any

from app.confirm.frames import FrameError, read_frame, write_frame
from app.confirm.jobs import Job
from app.confirm.pool import ConfirmError
from app.confirm.scheduler import Scheduler
from app.lesson.course import ServedLessons, load_course
from app.lesson.loader import LessonLoadError
from app.settings import Settings, get_settings

log = logging.getLogger("atlas.confirm")

INSTALL_HINT = (
    "PyTorch is not installed on this server, so the real torch.distributed run is unavailable;"
    " everything else works. `make run` installs the CPU build (unless WITH_TORCH=no), or by"
    " hand: pip install -e '.[torch]' --extra-index-url https://download.pytorch.org/whl/cpu"
)
DISABLED = (
    "The torch.distributed confirmation is turned off on this server (ATLAS_CONFIRM_ENABLED=false)."
)
# Waiting connections the socket holds: a class's worth of status polls and jobs arriving at once.
BACKLOG = 1024
LOCK_POLL_SECONDS = 1.0
UNIX_PATH_MAX = 107  # sun_path's 108 bytes, less the terminating NUL
# sysexits' EX_CONFIG: the configuration wants no pool, so the launcher does not restart it.
NO_POOL_EXIT = 78


def torch_installed() -> bool:
    """Whether torch can be imported, found without importing it in this process."""
    return importlib.util.find_spec("torch") is not None


def confirm_settings(settings: Settings, course: ServedLessons) -> Settings:
    """The settings with the confirmation off unless a lesson served has it: the torch pool runs
    only where it can be asked."""
    if any(item.parts.confirm for item in course.lessons):
        return settings
    return settings.model_copy(update={"confirm_enabled": False})


def off_reason(settings: Settings) -> str:
    """Why this server runs no pool (turned off, torch missing), else ""."""
    if not settings.confirm_enabled:
        return DISABLED
    if not torch_installed():
        return INSTALL_HINT
    return ""


def open_lock(settings: Settings) -> int:
    """The owner's lock file, opened (the runtime folder made if need be); raises OSError when
    the folder cannot be used, its socket's path too long for Linux (107 bytes) included."""
    path = bytes(socket_path(settings))
    if len(path) > UNIX_PATH_MAX:
        raise OSError(
            errno.ENAMETOOLONG,
            f"the pool's socket path ({len(path)} bytes) is too long for a Unix socket (at most"
            f" {UNIX_PATH_MAX}); choose a shorter folder",
        )
    folder = settings.confirm_runtime_dir
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return os.open(folder / "pool.lock", os.O_RDWR | os.O_CREAT, 0o600)


def socket_path(settings: Settings) -> Path:
    return settings.confirm_runtime_dir / "pool.sock"


class PoolHost:
    """Owner of the pool once it holds the lock; used from one event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.scheduler: Scheduler | None = None
        self._lock_fd: int | None = None
        self._server: asyncio.AbstractServer | None = None

    def take_lock(self) -> bool:
        """Take the owner's lock if free (the kernel frees it when its holder dies). Raises
        OSError when the runtime folder cannot be used."""
        if self._lock_fd is None:
            self._lock_fd = open_lock(self.settings)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    async def start(self) -> None:
        """Start the pool in the background and listen; call once :meth:`take_lock` is True."""
        self.scheduler = Scheduler(self.settings)
        path = socket_path(self.settings)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        # Listening first: an owner that cannot listen starts no ranks.
        self._server = await asyncio.start_unix_server(self._serve, path=str(path), backlog=BACKLOG)
        self.scheduler.pool.start()
        log.info("process %d owns the confirm pool; listening on %s", os.getpid(), path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_frame(reader)
            if isinstance(request, dict):
                await write_frame(writer, await self.answer(request))
        except (ConnectionError, FrameError) as exc:
            # The asking web worker gave up (its client hung up) or sent garbage: its loss only.
            log.debug("a confirm request ended early: %s", exc)
        finally:
            writer.close()

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request: ``status``, or ``run`` a job for a client."""
        scheduler = self.scheduler
        assert scheduler is not None
        pool = scheduler.pool
        if request.get("op") == "status":
            return {
                "status": {
                    "state": pool.state,
                    "message": pool.message,
                    "torch_version": pool.torch_version,
                    "runs": scheduler.runs,
                    "running": scheduler.serving is not None,
                    "waiting": scheduler.waiting,
                }
            }
        try:
            job = Job.model_validate(request.get("job"))
            outcome = await scheduler.submit(job, str(request.get("client", "")))
        except ConfirmError as error:
            return {"error": [error.status, error.detail, error.retry_after]}
        except ValueError as invalid:  # not a job: a bug on the asking side, named
            return {"error": [503, f"the pool's owner could not read the job: {invalid}", None]}
        return {"ok": outcome.model_dump()}

    async def stop(self) -> None:
        """Stop listening, stop the pool (no rank left behind), release the lock."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(FileNotFoundError):
                socket_path(self.settings).unlink()
            self._server = None
        if self.scheduler is not None:
            await self.scheduler.stop()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock: another owner may take over
            self._lock_fd = None


async def serve(settings: Settings) -> None:
    """Wait for the lock, own the pool until SIGTERM/SIGINT or the launcher is gone."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    launcher = os.getppid()
    host = PoolHost(settings)
    try:
        owner = False
        while not stop.is_set():
            # An orphan (the launcher was killed) must not hold the lock and 8 ranks forever.
            if os.getppid() != launcher:
                log.warning("the launcher (pid %d) is gone; stopping the pool", launcher)
                break
            try:
                taken = not owner and host.take_lock()
            except OSError as exc:
                log.error("cannot use the runtime folder (ATLAS_CONFIRM_RUNTIME_DIR): %s", exc)
                raise SystemExit(NO_POOL_EXIT) from exc  # the web workers say so on the page
            if taken:
                owner = True
                await host.start()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=LOCK_POLL_SECONDS)
    finally:
        await host.stop()


def main() -> int:
    """``python -m app.confirm.host``: exit NO_POOL_EXIT at once when this server needs no pool."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     [pool host] %(message)s")
    settings = get_settings()
    try:
        settings = confirm_settings(settings, load_course(settings.lesson_path))
    except LessonLoadError as exc:
        log.error("no pool: %s (the web workers refuse to start too)", exc)
        return NO_POOL_EXIT
    reason = off_reason(settings)
    if reason:
        log.info("no pool: %s", reason)
        return NO_POOL_EXIT
    asyncio.run(serve(settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
