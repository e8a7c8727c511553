"""The live class's storage (app/live/store.py): the worker's write turns, the queries the class
makes, on a real SQLite database, each read back from the database. Written for the survivors of
its mutation run (docs/testing.md, "The live class")."""

import asyncio

from app.live.store import WriteTurns


def test_the_instructors_writer_goes_before_the_others_waiting() -> None:
    async def run() -> list[str]:
        turns = WriteTurns()
        order: list[str] = []
        holder = turns.turn()
        await holder.__aenter__()  # a writer holds the turn

        async def write(name: str, first: bool) -> None:
            async with turns.turn(first):
                order.append(name)

        waiting = [asyncio.create_task(write("answer", False))]
        await asyncio.sleep(0)  # the answer waits in line first
        waiting.append(asyncio.create_task(write("pause", True)))
        await asyncio.sleep(0)
        await holder.__aexit__(None, None, None)
        await asyncio.gather(*waiting)
        return order

    assert asyncio.run(run()) == ["pause", "answer"]
