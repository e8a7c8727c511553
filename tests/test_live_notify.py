"""How a worker learns that a class changed through another worker (app/live/notify.py): the
change counter, SQLite's version poll and PostgreSQL's LISTEN. Written for the survivors of its
mutation run (docs/testing.md, "The live class")."""

import asyncio

from app.live.notify import Signal


def test_a_signal_wakes_its_waiters_once_it_moved_past_what_they_saw() -> None:
    async def scenario() -> None:
        signal = Signal()
        assert signal.generation == 0
        assert await signal.wait(-1) == 0  # already past what the waiter saw
        waiting = asyncio.create_task(signal.wait(0))
        await asyncio.sleep(0)
        assert not waiting.done()
        signal.fire()
        assert await waiting == 1
        signal.fire()
        assert await signal.wait(1) == 2

    asyncio.run(scenario())
