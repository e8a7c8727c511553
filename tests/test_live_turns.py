"""This worker's turns to write to SQLite (``store.WriteTurns``): one writer at a time, in the
order they came, the instructor's actions before the students' posts waiting; a writer that
gives up (its client gone) holds no one up. Real asyncio, and the real app through TestClient:
a *Pause* clicked while a hall's answers wait goes first, so an answer queued before it is
refused as paused (409), which it would not be in arrival order."""

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.live.store import WriteTurns
from app.main import create_app
from tests.test_live import questions, settings_for, start_class, student


async def _queue(turns: WriteTurns, order: list[str], name: str, first: bool = False) -> None:
    async with turns.turn(first):
        order.append(name)


def test_the_first_go_before_the_others_waiting_and_the_rest_in_order() -> None:
    async def run() -> list[str]:
        turns, order = WriteTurns(), []
        held = asyncio.Event()

        async def holder() -> None:
            async with turns.turn():
                order.append("holder")
                await held.wait()

        tasks = [asyncio.create_task(holder())]
        await asyncio.sleep(0)  # the holder has its turn
        for name, first in [("a", False), ("b", False), ("pause", True), ("c", False)]:
            tasks.append(asyncio.create_task(_queue(turns, order, name, first)))
        await asyncio.sleep(0)  # each waits
        held.set()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(run()) == ["holder", "pause", "a", "b", "c"]


def test_a_writer_that_gives_up_holds_no_one_up() -> None:
    async def run() -> list[str]:
        turns, order = WriteTurns(), []
        held = asyncio.Event()

        async def holder() -> None:
            async with turns.turn():
                await held.wait()

        first = asyncio.create_task(holder())
        await asyncio.sleep(0)
        gone = asyncio.create_task(_queue(turns, order, "gone"))
        kept = asyncio.create_task(_queue(turns, order, "kept"))
        await asyncio.sleep(0)
        gone.cancel()  # while it waits
        held.set()
        await asyncio.gather(first, kept)
        assert gone.cancelled()
        # Handed the turn and cancelled before it ran: the turn goes on to the next.
        again = asyncio.Event()

        async def holder_again() -> None:
            async with turns.turn():
                await again.wait()
            late.cancel()  # just handed the turn, before it could run

        second = asyncio.create_task(holder_again())
        await asyncio.sleep(0)
        late = asyncio.create_task(_queue(turns, order, "late"))
        after = asyncio.create_task(_queue(turns, order, "after"))
        await asyncio.sleep(0)
        again.set()
        await asyncio.gather(second, after)
        assert late.cancelled()
        return order

    assert asyncio.run(run()) == ["kept", "after"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path / "data"))) as app_client:
        yield app_client


def test_a_pause_goes_before_the_answers_waiting_to_be_written(client: TestClient) -> None:
    first = questions()[0]
    code = start_class(client)
    pupil = student(client, code, "Ada")
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    turns: WriteTurns = client.app.state.live_store._writing  # type: ignore[attr-defined]
    held = threading.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with turns.turn():
            held.set()
            await release.wait()

    holding = client.portal.start_task_soon(hold)
    held.wait()

    def waiting() -> int:
        """Writers waiting for their turn, of either kind."""
        return int(client.portal.call(lambda: len(turns._first) + len(turns._others)))

    with ThreadPoolExecutor(2) as pool:
        answer = pool.submit(
            pupil.post,
            f"/class/{code}/answer",
            data={"question": first.id, "choice": str(first.answer_number)},
            follow_redirects=False,
        )
        while waiting() < 1:  # the answer waits for its turn (an event, polled)
            pass
        pause = pool.submit(client.post, f"/class/{code}/pause")
        while waiting() < 2:  # and the pause, after it
            pass
        client.portal.call(release.set)
        holding.result()
        assert pause.result().status_code == 200
        refused = answer.result()
    assert refused.status_code == 409  # written after the pause: answering is paused
    assert "paused" in refused.text.lower()


def test_a_pause_shows_from_its_own_reply(client: TestClient) -> None:
    """The pacing controls post with htmx: the reply carries the dashboard's live parts as the
    action's transaction left them, so the dashboard shows the pause when its post returns (its
    stream may be on another worker, which learns of it later)."""
    first = questions()[0]
    code = start_class(client)
    student(client, code, "Ada")
    htmx = {"HX-Request": "true"}
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    paused = client.post(f"/class/{code}/pause", headers=htmx)
    assert paused.status_code == 200
    page = BeautifulSoup(paused.text, "html.parser")
    now = page.select_one("#host-now[hx-swap-oob]")
    assert now is not None
    state = now.select_one(".live-state")
    assert state is not None
    assert "paused" in state.get_text().lower()
    assert now.select_one("#participant-count").get_text() == "1"  # type: ignore[union-attr]
    # A refusal brings only its reason.
    again = client.post(f"/class/{code}/ask", data={"question": "no-such-question"}, headers=htmx)
    assert again.status_code == 422
    assert BeautifulSoup(again.text, "html.parser").select_one("[hx-swap-oob]") is None
