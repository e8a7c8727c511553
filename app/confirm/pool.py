"""Server side of the confirmation: a warm pool of gloo ranks. Imports no torch, ever.

One process (rank 0) imports torch once and forks the other ranks, so the pool holds exactly
``world`` torch processes (at most 8) and shares torch's pages between them. Every rank has its
own socket to the server: a job goes only to the ranks of its group, so an idle rank waits in a
socket read, never inside a collective. A rank that dies, hangs past the deadline or fails makes
the pool kill every rank by pid, build a fresh pool and retry once.
"""

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar, Literal

from app import PROJECT_DIR
from app.confirm.frames import FrameError, encode, read_frame
from app.confirm.jobs import DistributedResult, Job, RankReport, assemble
from app.settings import Settings

log = logging.getLogger("atlas.confirm")

PoolState = Literal["starting", "ready", "failed", "stopped"]


class RefusalError(Exception):
    """No confirmation now, and why: the detail, and ``retry_after`` seconds when asking again
    later will help. ``kind`` names the refusal on the owner's socket."""

    kind: ClassVar[str]

    def __init__(self, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after


class UnavailableError(RefusalError):
    """The pool cannot run it: torch missing, turned off, the pool failed to start or failed
    twice, or its owner is starting or busy."""

    kind = "unavailable"


class QueueFullError(RefusalError):
    """The queue, or this client's share of it, is full; ``retry_after`` is a fair wait."""

    kind = "queue_full"


REFUSALS: dict[str, type[RefusalError]] = {
    refusal.kind: refusal for refusal in (UnavailableError, QueueFullError)
}


class WorkerFaultError(Exception):
    """A rank died, hung past the deadline or reported an error."""


def process_gone(pid: int) -> bool:
    """True once ``pid`` no longer exists or is a zombie (dead, waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def kill_and_wait(pids: list[int], timeout: float = 5.0) -> None:
    """SIGKILL every pid, then wait until each is gone (or a zombie)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(process_gone(pid) for pid in pids):
        await asyncio.sleep(0.01)


class Pool:
    """The rank processes of one pool and the sockets to them; used from one event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.state: PoolState = "stopped"
        self.message = "not started"
        self.torch_version = ""
        self.pids: list[int] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._inbox: list[asyncio.Queue[dict[str, object] | None]] = []
        self._pumps: list[asyncio.Task[None]] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._busy = False
        self._build_task: asyncio.Task[None] | None = None
        self._generation = 0

    def start(self) -> None:
        """Begin building the pool in the background."""
        self._build_task = asyncio.create_task(self._build())

    async def _build(self) -> None:
        self.state, self.message = "starting", "starting the torch.distributed ranks"
        self._busy = False
        self._generation += 1
        started = time.monotonic()
        try:
            await asyncio.wait_for(self._spawn(), timeout=self.settings.confirm_start_timeout_s)
        except Exception as exc:  # any failure to start is reported, not raised into the server
            await self._kill()
            self.state = "failed"
            why = "it was not ready in time" if isinstance(exc, TimeoutError) else str(exc)
            self.message = f"the torch.distributed pool did not start: {why or type(exc).__name__}"
            log.error(self.message)
            return
        self.state, self.message = "ready", "ready"
        log.info(
            "confirm pool of %d gloo ranks ready in %.1f s",
            self.settings.confirm_world_size,
            time.monotonic() - started,
        )

    async def _spawn(self) -> None:
        world = self.settings.confirm_world_size
        pairs = [socket.socketpair() for _ in range(world)]
        ours = [left for left, _ in pairs]
        theirs = [right for _, right in pairs]
        store = self.settings.confirm_runtime_dir / f"store-{os.getpid()}-{self._generation}"
        with contextlib.suppress(FileNotFoundError):
            store.unlink()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        try:
            # On the event loop's long-lived thread, never in a worker thread: rank 0 dies with
            # the thread that started it (PR_SET_PDEATHSIG, worker.die_with), not the process.
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app.confirm.worker",
                    "--world",
                    str(world),
                    "--store",
                    str(store),
                    "--fds",
                    ",".join(str(sock.fileno()) for sock in theirs),
                    "--group-timeout",
                    str(self.settings.confirm_group_timeout_s),
                    "--init-timeout",
                    str(self.settings.confirm_start_timeout_s),
                    "--owner",
                    str(os.getpid()),
                ],
                pass_fds=[sock.fileno() for sock in theirs],
                stdin=subprocess.DEVNULL,
                cwd=PROJECT_DIR,
                env=env,
                # Its own session: a Ctrl-C on the server's terminal must not reach the ranks.
                start_new_session=True,
            )
        finally:
            for sock in theirs:
                sock.close()
        self.pids = [self._process.pid]
        streams = [await asyncio.open_unix_connection(sock=sock) for sock in ours]
        self._writers = [writer for _, writer in streams]
        self._inbox = [asyncio.Queue() for _ in streams]
        self._pumps = [
            asyncio.create_task(self._pump(rank, reader))
            for rank, (reader, _) in enumerate(streams)
        ]
        spawned = await self._message(0)
        pids = spawned.get("pids")
        if not isinstance(pids, list):
            raise WorkerFaultError(f"rank 0 sent {spawned!r} instead of its pids")
        self.pids = [int(pid) for pid in pids]
        for rank in range(world):
            ready = await self._message(rank)
            if ready.get("event") != "ready":
                raise WorkerFaultError(f"rank {rank} sent {ready.get('event')!r} instead of ready")
            self.torch_version = str(ready["torch"])

    async def _pump(self, rank: int, reader: asyncio.StreamReader) -> None:
        """Move a rank's messages to its inbox; None marks its end (the process died)."""
        message: dict[str, object] | None = {}
        while message is not None:
            try:
                message = await read_frame(reader)
            except (ConnectionError, OSError, FrameError):
                message = None
            self._inbox[rank].put_nowait(message)
        self._lost(rank)

    def _lost(self, rank: int) -> None:
        """A rank died between jobs: rebuild now, so the next job finds a whole pool."""
        if self.state == "ready" and not self._busy:
            log.warning("confirm rank %d died while idle; rebuilding the pool", rank)
            self.state, self.message = "starting", f"rank {rank} died; rebuilding the pool"
            self._build_task = asyncio.create_task(self.rebuild(wait=True))

    async def _message(self, rank: int) -> dict[str, object]:
        message = await self._inbox[rank].get()
        if message is None:
            code = self._process.poll() if self._process is not None else None
            exited = f" (rank 0 exited with code {code})" if code is not None else ""
            raise WorkerFaultError(f"rank {rank} closed its socket: the process died{exited}")
        if message.get("event") == "error":
            raise WorkerFaultError(f"rank {rank} failed: {message.get('message')}")
        return message

    async def wait_ready(self, timeout: float) -> None:
        """Wait for a build in progress; build anew if the last one failed; raise if not ready."""
        if self.state == "failed" or self._build_task is None:
            self.start()
        assert self._build_task is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._build_task), timeout=timeout)
        except TimeoutError:
            raise UnavailableError(
                f"the torch.distributed pool is still starting after {timeout:g} s;"
                " try again shortly"
            ) from None
        if self.state != "ready":
            raise UnavailableError(self.message)

    async def run(self, job: Job) -> DistributedResult:
        """Send the job to ranks 0…P-1 and gather their reports within the deadline."""
        size = job.world_size
        if size > len(self._writers):  # a bug of the caller's: no rank is sent half a job
            raise ValueError(f"a job of {size} ranks for a pool of {len(self._writers)}")
        frame = encode(job.model_dump())

        async def exchange() -> list[dict[str, object]]:
            for writer in self._writers[:size]:
                writer.write(frame)
            await asyncio.gather(*(writer.drain() for writer in self._writers[:size]))
            return await asyncio.gather(*(self._message(rank) for rank in range(size)))

        self._busy = True
        try:
            messages = await asyncio.wait_for(exchange(), self.settings.confirm_job_timeout_s)
        except TimeoutError:
            raise WorkerFaultError(
                f"no answer from all {size} ranks within {self.settings.confirm_job_timeout_s:g} s"
                " (a rank hung or was stopped)"
            ) from None
        except (ConnectionError, OSError) as exc:
            raise WorkerFaultError(f"a rank's socket failed: {exc}") from exc
        # After a fault the pool stays busy until the caller rebuilds it: the ranks that exit
        # after a failed collective must not start a second rebuild.
        self._busy = False
        reports = [RankReport.model_validate(message["report"]) for message in messages]
        return assemble(job, reports, self.torch_version)

    async def rebuild(self, *, wait: bool) -> None:
        """Kill every rank by pid, then build a fresh pool (waiting for it if ``wait``)."""
        await self._kill()
        self.start()
        if wait:
            assert self._build_task is not None
            await self._build_task

    async def _kill(self) -> None:
        current = asyncio.current_task()
        pumps = [pump for pump in self._pumps if pump is not current]
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for writer in self._writers:
            writer.close()
        self._pumps, self._inbox, self._writers = [], [], []
        # Rank 0 lets the kernel reap its children; make sure they are gone before going on.
        await kill_and_wait(self.pids)
        if self._process is not None:
            process = self._process
            await asyncio.to_thread(process.wait)
            self._process = None
        self.pids = []
        for leftover in self.settings.confirm_runtime_dir.glob(f"store-{os.getpid()}-*"):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()

    async def stop(self) -> None:
        """Stop building, kill every rank; the pool leaves no process behind."""
        if self._build_task is not None and not self._build_task.done():
            self._build_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._build_task
        await self._kill()
        self.state, self.message = "stopped", "stopped"
