"""Frames (the confirmation's one wire format) and the fair queue on a real pool of gloo ranks."""

import asyncio
import socket
import struct
import tempfile
from pathlib import Path

import pytest

from app.confirm.convert import job_from_request
from app.confirm.frames import (
    MAX_FRAME_BYTES,
    FrameError,
    encode,
    read_frame,
    receive,
    send,
    write_frame,
)
from app.confirm.jobs import Job
from app.confirm.pool import QueueFullError
from app.confirm.scheduler import Scheduler
from app.lab.state import GradientRequest
from app.settings import Settings
from tests.confirming import run_own_loop


def large_job() -> Job:
    """The job of ``counts`` 5000,5000: 10,000 unit items, the request that broke 64 KiB lines."""
    body = {"counts": [5000, 5000], "means": [1, 2], "eta": 0.1, "w": 1}
    request = GradientRequest.model_validate(body)
    return job_from_request(request, 8)[0]


def test_a_job_over_64_kib_crosses_a_real_socket_whole_both_ways() -> None:
    message = large_job().model_dump()
    assert len(encode(message)) > 64 * 1024  # what a line reader with asyncio's limit refused

    async def scenario() -> None:
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        stream = theirs.makefile("rwb")
        # Async writer to a blocking reader (owner -> rank), and back (rank -> owner).
        await write_frame(writer, message)
        assert await asyncio.to_thread(receive, stream) == message
        await asyncio.to_thread(send, stream, {"echo": message})
        assert await read_frame(reader) == {"echo": message}
        stream.close()
        theirs.close()
        assert await read_frame(reader) is None  # closed between frames: the end, not an error
        writer.close()

    run_own_loop(scenario)


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        (struct.pack(">I", MAX_FRAME_BYTES + 1), "over"),
        (b"\x00\x00", "length"),
        (struct.pack(">I", 10) + b'{"a":', "inside a frame"),
        (struct.pack(">I", 3) + b"{x}", "not JSON"),
    ],
)
def test_a_broken_frame_is_refused_without_waiting_for_more(raw: bytes, complaint: str) -> None:
    async def scenario() -> None:
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        theirs.sendall(raw)
        theirs.shutdown(socket.SHUT_WR)
        with pytest.raises(FrameError, match=complaint):
            await asyncio.wait_for(read_frame(reader), timeout=5)
        writer.close()
        theirs.close()

    run_own_loop(scenario)
    first, second = socket.socketpair()
    first.sendall(raw)
    first.shutdown(socket.SHUT_WR)
    with pytest.raises(FrameError, match=complaint):
        receive(second.makefile("rb"))
    first.close()
    second.close()


def distinct(salt: int) -> Job:
    body = {"counts": [1, 3], "means": [salt, 2], "eta": 0.1, "w": 1}
    request = GradientRequest.model_validate(body)
    return job_from_request(request, 2)[0]


@pytest.mark.distributed
def test_the_queue_takes_clients_in_turn_merges_twins_and_caps_each_client() -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory(prefix="atlas-scheduler-") as folder:
            settings = Settings(
                confirm_world_size=2,
                confirm_group_timeout_s=3,
                confirm_start_timeout_s=90,
                confirm_job_timeout_s=10,
                confirm_runtime_dir=Path(folder),
                confirm_queue_limit=16,
                confirm_client_limit=2,
                confirm_cache_size=0,
            )
            scheduler = Scheduler(settings)
            try:
                finished: list[str] = []

                async def ask(name: str, job: Job, client: str) -> bool:
                    outcome = await scheduler.submit(job, client)
                    assert outcome.result.world_size == 2
                    finished.append(name)
                    return outcome.cached

                # One tick: A floods first, then B and C ask once; D asks for A's second job.
                tasks = [
                    asyncio.create_task(ask("a1", distinct(1), "A")),
                    asyncio.create_task(ask("a2", distinct(2), "A")),
                    asyncio.create_task(ask("b1", distinct(3), "B")),
                    asyncio.create_task(ask("c1", distinct(4), "C")),
                    asyncio.create_task(ask("d-twin-of-a2", distinct(2), "D")),
                ]
                await asyncio.sleep(0)
                assert scheduler.waiting == 4  # d's twin is not queued again
                with pytest.raises(QueueFullError, match="ATLAS_CONFIRM_CLIENT_LIMIT=2"):
                    await scheduler.submit(distinct(5), "A")

                # Once a1 runs, A has one job running and one waiting: still its whole share.
                async def a_served() -> None:
                    while scheduler.serving != "A":
                        await asyncio.sleep(0.001)

                await asyncio.wait_for(a_served(), 90)
                with pytest.raises(QueueFullError, match="ATLAS_CONFIRM_CLIENT_LIMIT=2"):
                    await scheduler.submit(distinct(6), "A")
                cached = await asyncio.gather(*tasks)
                # A's second job waits until B and C have had their turn.
                assert finished[:4] == ["a1", "b1", "c1", "a2"]
                assert finished[4] == "d-twin-of-a2"
                assert cached == [False, False, False, False, True]
                assert scheduler.runs == 4
                assert scheduler.waiting == 0
                # A's share is free again once its jobs are done.
                assert (await scheduler.submit(distinct(5), "A")).cached is False
            finally:
                await scheduler.stop()

    run_own_loop(scenario)
