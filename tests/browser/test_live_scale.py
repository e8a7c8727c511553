"""The dashboard of a lecture hall in real Chromium: 2,000 students joined, 150 answers a second
arriving through real HTTP while the instructor watches. The page stays responsive (no main-
thread task over 200 ms, measured by Chromium's own Long Tasks API), each answer reaches the
dashboard without a reload as the dashboard shows a hall (the counts and the bars, and the dozen
students who need attention: who has not answered, newest first, while half the hall answers in
random order),
and a click on *Pause answering* shows on the dashboard within 300 ms of the click's event: the
instructor's posts go first in their worker's queue to write, the hall's answers are stored
together (a transaction for a burst, not one each, so the other worker's writer holds SQLite's
lock briefly), and the reply carries the dashboard's parts. Measured here, quiet, in 3 runs: 85
to 200 ms; with two busy loops beside it on the two cores, 177 to 277 ms. (Counted from before
Playwright's call instead, it took 50 to 90 ms more: the driver's checks before it clicks; one
CI run counted that way saw 308 ms.)"""

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from app.live.view import ATTENTION_ROWS
from bench._http import TLS
from bench._sse import request
from tests.browser.test_live import DESKTOP, LIVE_S, Classroom
from tests.conftest import INSTRUCTOR_PASSWORD, OffHostLog, new_page
from tests.test_live import questions

# alone: its limits are the browser's wall time, which a second test process would share.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.alone]

STUDENTS = 2000
RATE = 150  # answers a second
IN_FLIGHT = 32
ANSWERS_SEEN = 200  # counted on the dashboard before the instructor pauses
ANSWERING = 1000  # students who answer, in a random order: some of the dashboard's rows change
LONG_TASK_MS = 200
PAUSE_MS = 300

# Chromium's long tasks (over 50 ms on the main thread), recorded from the page's start.
LONG_TASKS = """
window.longTasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.longTasks.push([entry.startTime, entry.duration]);
}).observe({type: "longtask", buffered: true});
"""


@pytest.fixture(scope="module")
def hall(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Classroom]:
    from bench._servers import free_port

    # Two workers, as the image runs.
    # A lecture hall: its instructor sets the class's size (the default takes 1,000).
    size = {"ATLAS_CLASS_SIZE": str(STUDENTS)}
    folder = tmp_path_factory.mktemp("hall") / "data"
    room = Classroom(folder, free_port(), workers=2, settings=size)
    room.start()
    try:
        yield room
    finally:
        room.stop()


async def _join_all(port: int, code: str) -> list[str]:
    """Every student's cookie, joined through the real form (50 at a time, as a hall arrives),
    each from a device of its own (no cookie sent)."""
    gate = asyncio.Semaphore(50)

    async def join(n: int) -> str:
        async with gate:
            joined = await request(
                port, "POST", "/join", form={"code": code, "nickname": f"student {n:04}"}
            )
        assert joined.status == 303, joined.body[:200]
        return joined.cookie("atlas-class-")

    return list(await asyncio.gather(*(join(n) for n in range(STUDENTS))))


class Answering(threading.Thread):
    """Students answering at up to ``RATE`` a second until stopped, each through their own
    cookie, with at most ``IN_FLIGHT`` waiting at once: phones wait for their answer's reply,
    so a slower server sees fewer, not a growing queue."""

    def __init__(self, url: str, code: str, question: str, cookies: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.code, self.question, self.cookies = url, code, question, cookies
        self.stopped = threading.Event()
        self.sent = 0
        self.statuses: dict[int, int] = {}
        self.accepted: list[int] = []  # the answers stored (303), by their number

    def run(self) -> None:
        asyncio.run(self._answer())

    async def _answer(self) -> None:
        self.gate = asyncio.Semaphore(IN_FLIGHT)
        limits = httpx.Limits(max_connections=IN_FLIGHT)
        async with httpx.AsyncClient(
            base_url=self.url, timeout=30, limits=limits, verify=TLS
        ) as client:
            pending: set[asyncio.Task[None]] = set()
            start = time.monotonic()
            while not self.stopped.is_set():
                due = int((time.monotonic() - start) * RATE)
                while self.sent < due and not self.gate.locked():
                    pending.add(asyncio.create_task(self._one(client, self.sent)))
                    self.sent += 1
                    await asyncio.sleep(0)  # the task takes its place at the gate
                await asyncio.sleep(1 / RATE)
                pending = {task for task in pending if not task.done()}
            await asyncio.gather(*pending)

    async def _one(self, client: httpx.AsyncClient, n: int) -> None:
        async with self.gate:
            answered = await client.post(
                f"/class/{self.code}/answer",
                data={"question": self.question, "choice": str(choice(n))},
                headers={"cookie": self.cookies[n % len(self.cookies)]},
            )
        self.statuses[answered.status_code] = self.statuses.get(answered.status_code, 0) + 1
        if answered.status_code == 303:
            self.accepted.append(n)

    def stored(self) -> dict[int, int]:
        """Each student's answer as stored, by their place in ``cookies``: their last accepted
        (one student's answers are 1,000 apart, never in flight together)."""
        return {n % len(self.cookies): choice(n) for n in sorted(self.accepted)}


def choice(n: int) -> int:
    """The option the ``n``-th answer chooses."""
    return 1 + n % 3


# What the test waits for on the dashboard, each checked on every change of the page (the page's
# CSP allows no eval, so Playwright's polling ``wait_for_function`` cannot run there).
UNTIL = """([name, arg, timeout]) => new Promise((resolve, reject) => {
    const number = (selector) => Number(document.querySelector(selector).textContent);
    const count = () => number('#answer-count');
    const conditions = {
        // at least ``arg`` answers counted
        answered: () => count() >= arg,
        // the dashboard shows the answers stored (``arg``): the count, each option's bar, the
        // count of those not answered yet, and a dozen rows, none of a student who answered
        shows: () => {
            const shown = [...document.querySelectorAll('#host-now [data-choice]')];
            const bars = Object.fromEntries(
                shown.map((bar) => [bar.dataset.choice, Number(bar.dataset.count)]));
            const rows = [...document.querySelectorAll('#roster-rows tr')];
            const answered = new Set(arg.nicknames);
            return count() === arg.answered
                && Object.entries(arg.bars).every(([option, n]) => bars[option] === n)
                && number('[data-filter=waiting] .live-number') === arg.waiting
                && rows.length === arg.rows
                && rows.every((row) => row.cells[1].textContent === '—'
                                       && !answered.has(row.cells[0].textContent));
        },
    };
    const done = () => {
        if (conditions[name]()) { watch.disconnect(); clearTimeout(timer); resolve(true); }
    };
    const watch = new MutationObserver(done);
    const timer = setTimeout(() => { watch.disconnect(); reject(new Error(name)); }, timeout);
    watch.observe(document.body, {subtree: true, childList: true, characterData: true,
                                  attributes: true});
    done();
})"""


def until(page: Any, name: str, arg: object) -> None:
    page.evaluate(UNTIL, [name, arg, LIVE_S * 3])


@dataclass
class Watched:
    long_tasks: list[list[float]]
    paused_ms: float
    statuses: dict[int, int]


@pytest.fixture(scope="module")
def watched(browser: Any, hall: Classroom) -> Iterator[Watched]:
    """The hall watched once, for each of the claims below; its page in a fresh context."""
    off_host = OffHostLog()
    host = new_page(browser, off_host, viewport=DESKTOP)
    try:
        yield watch_a_lecture_hall(host, hall)
    finally:
        host.context.close()
    assert off_host.urls == [], f"requests left 127.0.0.1: {off_host.urls}"


def watch_a_lecture_hall(host: Any, hall: Classroom) -> Watched:
    """A class of 2,000 on the dashboard; answers arrive, then the instructor pauses."""
    first = questions()[0]
    host.add_init_script(LONG_TASKS)
    host.goto(f"{hall.url}/class/new")
    host.fill("#password", INSTRUCTOR_PASSWORD)
    host.get_by_role("button", name="Start the class").click()
    code = host.locator("#join-code").inner_text().strip()
    # On a thread of its own: Playwright's own loop runs on this one.
    with ThreadPoolExecutor(1) as thread:
        cookies = thread.submit(asyncio.run, _join_all(hall.port, code)).result()
    host.select_option("#question", first.id)
    host.get_by_role("button", name="Ask", exact=True).click()
    expect(host.locator("#participant-count")).to_have_text(str(STUDENTS), timeout=LIVE_S)
    # A hall is counted, and a dozen of its students listed: the newest, none answered yet.
    expect(host.locator("[data-filter=waiting] .live-number")).to_have_text(str(STUDENTS))
    expect(host.locator("#roster-rows tr")).to_have_count(ATTENTION_ROWS)
    host.evaluate("window.stayedOpen = true; window.since = performance.now()")

    order = random.Random(39).sample(range(STUDENTS), ANSWERING)
    answering = Answering(hall.url, code, first.id, [cookies[n] for n in order])
    answering.start()
    try:
        # Answers arrive on the open page: the count grows without a reload.
        until(host, "answered", ANSWERS_SEEN)
        # From the click itself (its event's time), not from Playwright's call: the driver's
        # checks before it clicks are no part of the page's answer.
        host.evaluate("""() => {
            window.clickedAt = null;
            window.pausedAfter = null;
            document.addEventListener('click', (event) => {
                if (event.target.closest('button')?.textContent.includes('Pause answering')) {
                    window.clickedAt = event.timeStamp;
                }
            }, true);
            const watch = new MutationObserver(() => {
                const now = document.querySelector('#host-now .live-state');
                if (now && now.textContent.includes('paused') && window.clickedAt !== null
                    && window.pausedAfter === null) {
                    window.pausedAfter = performance.now() - window.clickedAt;
                }
            });
            watch.observe(document.querySelector('#host-now'), {subtree: true, childList: true,
                                                                 characterData: true});
        }""")
        host.get_by_role("button", name="Pause answering").click()
        expect(host.locator("#host-now .live-state")).to_contain_text("paused", timeout=LIVE_S)
        paused_ms = host.evaluate("window.pausedAfter")
    finally:
        answering.stopped.set()
        answering.join(60)
    # The tasks of the answering window (a late report of an earlier one is not in it).
    long_tasks = host.evaluate("window.longTasks.filter(([start]) => start >= window.since)")
    assert host.evaluate("window.stayedOpen === true"), "the dashboard reloaded"
    assert answering.statuses.get(303, 0) >= ANSWERS_SEEN, answering.statuses
    # Answers after the pause are refused, as the class's state says (409), none is a 5xx.
    assert set(answering.statuses) <= {303, 409}, answering.statuses
    # Every answer stored is on the dashboard: counted, on its option's bar, no longer among the
    # students not answered yet, nor on a row (those listed are students still to answer).
    stored = answering.stored()
    bars = {str(option): 0 for option, _ in first.choices}
    for option in stored.values():
        bars[str(option)] += 1
    nicknames = [f"student {order[k]:04}" for k in stored]
    shows = {
        "answered": len(stored),
        "bars": bars,
        "waiting": STUDENTS - len(stored),
        "rows": ATTENTION_ROWS,
        "nicknames": nicknames,
    }
    until(host, "shows", shows)
    return Watched(long_tasks, paused_ms, answering.statuses)


def test_a_dashboard_of_2000_stays_responsive_while_150_answers_a_second_arrive(
    watched: Watched,
) -> None:
    worst = max((duration for _, duration in watched.long_tasks), default=0)
    assert worst <= LONG_TASK_MS, f"a main-thread task of {worst:.0f} ms: {watched.long_tasks}"


def test_pause_shows_on_a_dashboard_of_2000_within_300_ms_while_answers_arrive(
    watched: Watched,
) -> None:
    assert watched.paused_ms <= PAUSE_MS, f"Pause showed after {watched.paused_ms:.0f} ms"
