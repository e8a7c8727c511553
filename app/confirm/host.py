"""The pool's one owner, ``python -m app.confirm.host``: the ranks, the fair queue, and the socket
every web worker asks.

It is always a process of its own, the child of the one web worker that took the owner's lock
(:mod:`app.confirm.launcher`), which hands it the lock. Every web worker, that one included, asks
it over ``<runtime dir>/pool.sock`` in length-prefixed frames (:mod:`app.confirm.frames`), one
request and one answer per connection. Holding ``flock`` on ``<runtime dir>/pool.lock`` makes it
the owner: a container runs at most ``world`` torch processes however many web workers start. It
stops with the web worker that started it. No torch in this process.
"""

import argparse
import asyncio
import contextlib
import errno
import fcntl
import importlib.util
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

from app.confirm.frames import FrameError, read_frame, write_frame
from app.confirm.jobs import Job
from app.confirm.pool import RefusalError, UnavailableError
from app.confirm.scheduler import Scheduler
from app.lesson.course import ServedLessons
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
# Waiting connections the socket holds: a class's worth of status polls and jobs arriving at once.
BACKLOG = 1024
PARENT_POLL_SECONDS = 1.0
UNIX_PATH_MAX = 107  # sun_path's 108 bytes, less the terminating NUL
# sysexits' EX_CONFIG: the runtime folder cannot be used, so the launcher does not restart it.
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


def take_lock(settings: Settings) -> int | None:
    """The owner's lock, taken: its file descriptor, or None while another process holds it (the
    kernel frees it when its holder dies). Raises OSError when the runtime folder cannot be used."""
    fd = open_lock(settings)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def socket_path(settings: Settings) -> Path:
    return settings.confirm_runtime_dir / "pool.sock"


class PoolHost:
    """Owner of the pool while it holds the lock ``lock_fd``; used from one event loop."""

    def __init__(self, settings: Settings, lock_fd: int) -> None:
        self.settings = settings
        self.scheduler = Scheduler(settings)
        self._lock_fd: int | None = lock_fd
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        """Listen, then start the pool in the background. Raises OSError when it cannot listen."""
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
        except ValueError as invalid:  # not a job: a bug on the asking side, named
            return {
                "refused": [UnavailableError.kind, f"the owner could not read it: {invalid}", None]
            }
        except RefusalError as refused:
            return {"refused": [refused.kind, refused.detail, refused.retry_after]}
        return {"ok": outcome.model_dump()}

    async def stop(self) -> None:
        """Stop listening, stop the pool (no rank left behind), release the lock."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(FileNotFoundError):
                socket_path(self.settings).unlink()
            self._server = None
        await self.scheduler.stop()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock: another web worker may start an owner
            self._lock_fd = None


async def serve(settings: Settings, lock_fd: int, parent: int) -> None:
    """Own the pool until SIGTERM/SIGINT or until ``parent``, the web worker that started this
    process, is gone (an orphan must not hold the lock and 8 ranks forever)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    host = PoolHost(settings, lock_fd)
    try:
        await host.start()
        while os.getppid() == parent:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=PARENT_POLL_SECONDS)
            if stop.is_set():
                return
        log.warning("the web worker that started it (pid %d) is gone; stopping the pool", parent)
    finally:
        await host.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m app.confirm.host --lock-fd FD --parent PID --settings JSON``: the confirm
    settings come from the web worker (whose own may not be the environment's), the lock taken."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     [pool host] %(message)s")
    cli = argparse.ArgumentParser(description="The confirmation pool's owner.")
    cli.add_argument("--lock-fd", type=int, required=True, help="the owner's lock, taken")
    cli.add_argument("--parent", type=int, required=True, help="the web worker's pid")
    cli.add_argument("--settings", type=json.loads, required=True, help="confirm_* settings")
    args = cli.parse_args(argv)
    try:
        asyncio.run(serve(Settings(**args.settings), args.lock_fd, args.parent))
    except OSError as exc:  # cannot listen on its socket: no ranks, and no point in restarting
        log.error("cannot use the runtime folder (ATLAS_CONFIRM_RUNTIME_DIR): %s", exc)
        return NO_POOL_EXIT
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
