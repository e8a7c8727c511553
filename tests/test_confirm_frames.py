"""Frames (the confirmation's one wire format) and the fair queue on a real pool of gloo ranks."""

import asyncio
import os
import signal
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
from app.confirm.pool import QueueFullError, UnavailableError, process_gone
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


LESSON = {"eta": 0.1, "w": 1}


def distinct(salt: int) -> Job:
    request = GradientRequest.model_validate({**LESSON, "counts": [1, 3], "means": [salt, 2]})
    return job_from_request(request, 2)[0]


def two_ranks(
    folder: str, start_timeout_s: float = 90, job_timeout_s: float = 10, **limits: int
) -> Settings:
    """A pool of two gloo ranks whose files live in ``folder``, with these queue ``limits``."""
    return Settings(
        confirm_world_size=2,
        confirm_group_timeout_s=3,
        confirm_start_timeout_s=start_timeout_s,
        confirm_job_timeout_s=job_timeout_s,
        confirm_runtime_dir=Path(folder),
        **{f"confirm_{name}": value for name, value in limits.items()},
    )


async def until_serving(scheduler: Scheduler, client: str, job: asyncio.Task[object]) -> None:
    """Wait until the pool runs ``client``'s ``job``; fail if the job ends unseen (or in 60 s)."""

    async def served() -> None:
        while scheduler.serving != client:
            assert not job.done(), f"{client}'s job ended before it was seen running"
            await asyncio.sleep(0.001)

    await asyncio.wait_for(served(), 60)


# A scenario on a pool of two ranks ends in a few seconds (18 s on a loaded machine); past this
# it hangs (a job nobody answers) and fails rather than wait for ever.
SCENARIO_LIMIT_S = 60
TWO_HELD = (
    r"^you already have 2 confirmations waiting or running, the most one client may"
    r" \(ATLAS_CONFIRM_CLIENT_LIMIT=2\); retry after \d+ s$"
)


@pytest.mark.distributed
def test_the_queue_takes_clients_in_turn_merges_twins_and_caps_each_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory(prefix="atlas-scheduler-") as folder:
            scheduler = Scheduler(two_ranks(folder, queue_limit=16, client_limit=2, cache_size=0))
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
                # Before any job has run: five jobs of a two-rank pool take well under a second.
                with pytest.raises(QueueFullError, match=TWO_HELD) as refused:
                    await scheduler.submit(distinct(5), "A")
                assert refused.value.retry_after == 1

                # Once a1 runs, A has one job running and one waiting: still its whole share.
                await until_serving(scheduler, "A", tasks[0])
                with pytest.raises(QueueFullError, match=TWO_HELD):
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
                # A job of more ranks than the pool has (the web side never sends one) fails
                # as a bug: its asker is answered, not left waiting, and the log says so.
                wider = {**LESSON, "counts": [1, 1, 1], "means": [1, 2, 3]}
                job = job_from_request(GradientRequest.model_validate(wider), 8)[0]
                with pytest.raises(UnavailableError, match=r"^the confirmation failed: \S"):
                    await scheduler.submit(job, "E")
                assert "a confirmation job failed unexpectedly" in caplog.messages
            finally:
                await scheduler.stop()

    run_own_loop(lambda: asyncio.wait_for(scenario(), SCENARIO_LIMIT_S))


@pytest.mark.distributed
def test_the_queue_refuses_in_words_with_a_retry_after_caches_retries_and_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One client's share, the whole queue, the cache of finished jobs, a hung rank and the
    shutdown, on one pool: a queue of one waiting job, one job per client, two cached."""

    async def scenario() -> None:
        with tempfile.TemporaryDirectory(prefix="atlas-scheduler-") as folder:
            # A server that stops before anyone asked for a confirmation stops cleanly.
            await Scheduler(two_ranks(folder)).stop()
            # A pool that takes longer to start than its operator allows: the job is refused.
            early = Scheduler(two_ranks(folder, start_timeout_s=0.001))
            try:
                with pytest.raises(UnavailableError) as refused:
                    await early.submit(distinct(1), "A")
            finally:
                await early.stop()
            assert str(refused.value) == (
                "the torch.distributed pool is still starting after 0.001 s; try again shortly"
            )
            settings = two_ranks(
                folder, job_timeout_s=2, queue_limit=1, client_limit=1, cache_size=2
            )
            scheduler = Scheduler(settings)
            try:
                # Two finished jobs are kept; the one asked least recently goes first.
                # Asked at once before anything runs: one runs, one waits, the queue's limit.
                first, second = await asyncio.gather(
                    scheduler.submit(distinct(1), "A"), scheduler.submit(distinct(2), "B")
                )
                assert (first.cached, second.cached, first.attempts) == (False, False, 1)
                assert scheduler.runs == 2
                again = await scheduler.submit(distinct(1), "C")
                assert again.cached is True
                assert again.result == first.result
                assert (await scheduler.submit(distinct(3), "A")).cached is False
                assert scheduler.runs == 3  # 1 and 3 are kept, 2 was dropped
                assert (await scheduler.submit(distinct(1), "B")).cached is True
                assert (await scheduler.submit(distinct(2), "C")).cached is False
                assert scheduler.runs == 4

                # A stopped rank: the job's deadline passes, the pool is rebuilt, the job runs
                # again on the fresh pool and the stopped rank is gone.
                stopped = scheduler.pool.pids[-1]
                os.kill(stopped, signal.SIGSTOP)
                retried = await scheduler.submit(distinct(4), "A")
                assert (retried.cached, retried.attempts, scheduler.runs) == (False, 2, 5)
                assert process_gone(stopped)
                assert stopped not in scheduler.pool.pids
                assert (
                    "confirm job failed on attempt 1: no answer from all 2 ranks within 2 s"
                    " (a rank hung or was stopped); rebuilding the pool"
                ) in caplog.messages
                # Each job is three DDP runs, each an all-reduce between two processes: far
                # over 50 µs, and (for the retry too) well under half a second on this pool.
                for outcome in (first, second, retried):
                    assert 0.05 < outcome.elapsed_ms < 500

                # A's job runs and B's waits: A's share and the queue are both full. A twin of
                # B's job is no new job: it waits for the same run.
                a_job = asyncio.create_task(scheduler.submit(distinct(5), "A"))
                await until_serving(scheduler, "A", a_job)
                b_job = asyncio.create_task(scheduler.submit(distinct(6), "B"))
                twin = asyncio.create_task(scheduler.submit(distinct(6), "D"))
                await asyncio.sleep(0)
                assert scheduler.waiting == 1
                # Jobs of under half a second each, two of them (one running, one waiting):
                # the queue is clear within a second, the least a Retry-After can say.
                with pytest.raises(QueueFullError) as share:
                    await scheduler.submit(distinct(7), "A")
                assert str(share.value) == (
                    "you already have 1 confirmation waiting or running, the most one client"
                    " may (ATLAS_CONFIRM_CLIENT_LIMIT=1); retry after 1 s"
                )
                assert share.value.retry_after == 1
                with pytest.raises(QueueFullError) as full:
                    await scheduler.submit(distinct(7), "C")
                assert str(full.value) == "the confirmation queue is full; retry after 1 s"
                assert full.value.retry_after == 1
                outcomes = await asyncio.gather(a_job, b_job, twin)
                assert [outcome.cached for outcome in outcomes] == [False, False, True]
                assert outcomes[2].result == outcomes[1].result
                assert scheduler.runs == 7

                # Stopping: the job running and the one waiting are both answered, then the
                # pool's ranks are gone.
                # Asked at once while nothing runs: both are taken (a queue of one waiting).
                # A stopped rank keeps the first from finishing before the stop.
                os.kill(scheduler.pool.pids[-1], signal.SIGSTOP)
                running = asyncio.create_task(scheduler.submit(distinct(8), "A"))
                waiting = asyncio.create_task(scheduler.submit(distinct(9), "B"))
                await until_serving(scheduler, "A", running)
                assert scheduler.waiting == 1
                ranks = list(scheduler.pool.pids)
                await scheduler.stop()
                answers = await asyncio.wait_for(
                    asyncio.gather(running, waiting, return_exceptions=True), 30
                )
                assert [str(answer) for answer in answers] == ["the server is shutting down"] * 2
                assert all(isinstance(answer, UnavailableError) for answer in answers)
                assert all(process_gone(pid) for pid in ranks)
                assert scheduler.pool.state == "stopped"
            finally:
                await scheduler.stop()

    run_own_loop(lambda: asyncio.wait_for(scenario(), SCENARIO_LIMIT_S))
