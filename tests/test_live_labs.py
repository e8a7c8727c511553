"""The lab inside the class: a student's state posted by the lab's own form (without
JavaScript) or by the page as they drag (``/state``, 204, written in batches), refused naming
its field, the dashboard's picture (#class-labs) against exact fractions from the definitions,
"send to everyone", and the dashboard's stream giving the picture at most twice a second while
students drag."""

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.engine.class_states import BINS
from app.live.access import student_cookie
from app.live.store import SQLITE_FILE
from app.main import create_app
from bench._http import TLS
from bench._servers import Server
from bench._sse import Event, read_events
from tests import test_live_refusals
from tests.conftest import INSTRUCTOR_PASSWORD
from tests.test_course import course_folder
from tests.test_live import SHARD, node, settings_for, soup, start_class, student
from tests.test_live_server import join, serving
from tests.test_live_server import start_class as start_class_async


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


client = test_live_refusals.sqlite_client


FORM = {"Content-Type": "application/x-www-form-urlencoded"}
DRAGGED = {**FORM, "HX-Request": "true"}  # as live.js posts a state while the student drags


def lab_form(counts: list[str], means: list[str], eta: str = "0.1", w: str = "10") -> str:
    """What the lab's form sends: P, then one count and one mean per rank (names repeat)."""
    fields = [("P", str(len(counts)))]
    for count, mean in zip(counts, means, strict=True):
        fields += [("counts", count), ("means", mean)]
    return urlencode([*fields, ("eta", eta), ("w", w)])


# Five students' states (means form): (counts, means), η = 1/10, w = 10.
STATES = [
    (["2", "6"], ["1", "3"]),
    (["4", "4"], ["1", "3"]),
    (["1", "3"], ["0", "4"]),
    (["3", "1"], ["0", "4"]),
    (["1", "1", "2"], ["2", "2", "2"]),
]


def reference(states: list[tuple[list[str], list[str]]], eta: Fraction, w: Fraction) -> dict:
    """The picture from the definitions, in exact fractions: g = (1/N) Σ nᵣ ḡᵣ, the rank mean
    (1/P) Σ ḡᵣ, w_new = w - η·(either); the axis from the least to the greatest w_new of both
    rules in BINS equal bins, a value in the bin it starts (the last bin closed)."""
    by_g, by_rank, unequal = [], [], 0
    for counts, means in states:
        n = [Fraction(c) for c in counts]
        m = [Fraction(x) for x in means]
        g = sum(a * b for a, b in zip(n, m, strict=True)) / sum(n)
        by_g.append(w - eta * g)
        by_rank.append(w - eta * sum(m) / len(m))
        unequal += len(set(n)) > 1
    low, high = min(by_g + by_rank), max(by_g + by_rank)
    width = (high - low) / BINS

    def binned(values: list[Fraction]) -> list[int]:
        counts = [0] * BINS
        for value in values:
            k = next(k for k in range(BINS) if value < low + width * (k + 1) or k == BINS - 1)
            counts[k] += 1
        return counts

    return {
        "states": len(states),
        "unequal": unequal,
        "edges": [low + width * k for k in range(BINS + 1)],
        "global": binned(by_g),
        "rank": binned(by_rank),
        "median_g": sorted(by_g)[(len(by_g) - 1) // 2],
        "median_rank": sorted(by_rank)[(len(by_rank) - 1) // 2],
    }


def number(text: str) -> Fraction:
    return Fraction(text.replace("\N{MINUS SIGN}", "-"))


def test_the_class_picture_is_the_definitions_exactly(client: TestClient) -> None:
    code = start_class(client)
    for n, (counts, means) in enumerate(STATES):
        pupil = student(client, code, f"s{n}")
        posted = pupil.post(
            f"/class/{code}/share",
            content=lab_form(counts, means),
            headers=FORM,
            follow_redirects=False,
        )
        assert posted.status_code == 303, posted.text[:300]
        assert posted.headers["location"] == f"/class/{code}"
    student(client, code, "no state yet")
    want = reference(STATES, Fraction(1, 10), Fraction(10))
    labs = node(client.get(f"/class/{code}/host").text, "#class-labs")

    def value(name: str) -> str:
        return node(str(labs), f"[data-value='{name}']").get_text(strip=True)

    assert int(value("states")) == want["states"] == 5
    assert int(value("joined")) == 6
    assert int(value("unequal")) == want["unequal"] == 4
    rows = labs.select("tbody tr")
    assert len(rows) == BINS
    edges = [number(node(str(r), "[data-value='low']").get_text()) for r in rows]
    edges.append(number(node(str(rows[-1]), "[data-value='high']").get_text()))
    assert edges == want["edges"]
    assert [int(node(str(r), "[data-value='global']").get_text()) for r in rows] == want["global"]
    assert [int(node(str(r), "[data-value='rank-mean']").get_text()) for r in rows] == want["rank"]
    assert number(value("median-global")) == want["median_g"]
    assert number(value("median-rank-mean")) == want["median_rank"]
    # Each bar's length (0 to 100): the largest count of either rule is 100, the others in
    # proportion to it, rounded.
    most = max(want["global"] + want["rank"])
    for rule, counts in (("global", want["global"]), ("rank", want["rank"])):
        lengths = [int(node(str(r), f".live-labs-{rule} rect")["width"]) for r in rows]
        assert lengths == [round(100 * Fraction(count, most)) for count in counts]


def test_the_words_under_the_counts_say_who_has_no_state_and_where_the_rules_differ(
    client: TestClient,
) -> None:
    """The sentence under the picture's counts, as students join and send their states; and no
    count of students at the state sent while none was sent (not even of those without one)."""
    code = start_class(client)

    def labs() -> BeautifulSoup:
        return node(client.get(f"/class/{code}/host").text, "#class-labs")

    def words() -> str:
        return node(str(labs()), "[data-labs='words']").get_text()

    def counts() -> str:
        return node(str(labs()), "[data-labs='summary']").get_text()

    def share(pupil: TestClient, counts: list[str]) -> None:
        sent = pupil.post(
            f"/class/{code}/share", content=lab_form(counts, ["1", "3"]), headers=FORM
        )
        assert sent.status_code == 200

    assert words() == "No one has joined yet."
    ada = student(client, code, "Ada")
    assert words() == "None of the 1 student has a lab state yet."
    assert counts() == "0 of 1 exploring · 0 with unequal counts"  # none at a state never sent
    bo = student(client, code, "Bo")
    assert words() == "None of the 2 students has a lab state yet."
    share(ada, ["4", "4"])
    assert words() == "Every state has equal counts on its ranks: both rules give the same w_new."
    share(bo, ["2", "6"])
    assert words() == (
        "1 of the 2 states has unequal counts on its ranks: there the plain rank mean can miss g."
    )
    share(student(client, code, "Cy"), ["3", "1"])
    assert words() == (
        "2 of the 3 states have unequal counts on their ranks: there the plain rank mean can"
        " miss g."
    )
    share(ada, ["5", "4"])
    assert words() == (
        "Every state has unequal counts on its ranks: there the plain rank mean can miss g."
    )
    assert counts() == "3 of 3 exploring · 3 with unequal counts"


def test_a_state_too_long_to_keep_in_the_cache_is_counted_all_the_same(
    client: TestClient,
) -> None:
    """A state of many ranks and digits (longer as a link than the states the server keeps
    reduced, but within a shared state's limit) is in the picture like any other."""
    code = start_class(client)
    counts = [str(999_999_999_999 - k) for k in range(64)]
    means = [f"-{k}.{k:015d}" for k in range(64)]
    long = student(client, code, "Ada")
    sent = long.post(f"/class/{code}/share", content=lab_form(counts, means), headers=FORM)
    assert sent.status_code == 200
    labs = node(client.get(f"/class/{code}/host").text, "#class-labs")
    assert node(str(labs), "[data-value='states']").get_text() == "1"
    want = reference([(counts, means)], Fraction(1, 10), Fraction(10))["median_g"]
    shown = number(node(str(labs), "[data-value='median-global']").get_text())
    assert abs(shown - want) < Fraction(1, 100)  # as the page rounds it


def test_a_refused_state_names_its_field_and_keeps_what_was_typed(client: TestClient) -> None:
    code = start_class(client)
    pupil = student(client, code, "Ada")
    bad = pupil.post(f"/class/{code}/share", content=lab_form(["2", "6"], ["1", "x"]), headers=FORM)
    assert bad.status_code == 422
    field = node(bad.text, "#lab-mean-1")
    assert field["aria-invalid"] == "true"
    assert field["value"] == "x"  # as typed, not changed
    assert "rank 1 mean" in node(bad.text, "#msg-lab-mean-1").get_text()
    # Past the lab's own limits (the state model's): refused, naming the count.
    huge = pupil.post(
        f"/class/{code}/share", content=lab_form(["2", "1e13"], ["1", "3"]), headers=FORM
    )
    assert huge.status_code == 422
    assert "rank 1 count" in node(huge.text, "#msg-lab-count-1").get_text()
    # As the page sends it while dragging: the same refusal.
    dragged = pupil.post(
        f"/class/{code}/state", content=lab_form(["2", "6"], ["1", "x"]), headers=DRAGGED
    )
    assert dragged.status_code == 422
    assert "rank 1 mean" in dragged.text
    labs = node(client.get(f"/class/{code}/host").text, "#class-labs")
    assert node(str(labs), "[data-value='states']").get_text() == "0"


def version(data_dir: Path, code: str) -> int:
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        row = db.execute("SELECT version FROM live_classes WHERE code = ?", (code,)).fetchone()
    return int(row[0])


def test_a_dragged_state_is_taken_quietly_and_the_same_state_changes_nothing(
    client: TestClient, data_dir: Path
) -> None:
    code = start_class(client)
    pupil = student(client, code, "Ada")
    state = lab_form(["5", "6"], ["1", "3"])
    before = version(data_dir, code)
    drags = client.app.state.live_drags  # type: ignore[attr-defined]
    assert pupil.post(f"/class/{code}/state", content=state, headers=DRAGGED).status_code == 204
    other = lab_form(["7", "6"], ["1", "3"])
    assert pupil.post(f"/class/{code}/state", content=other, headers=DRAGGED).status_code == 204
    assert client.portal.call(drags.flush) is None  # written now, not in 0.25 s
    assert version(data_dir, code) == before + 1  # two states, one write
    assert pupil.post(f"/class/{code}/state", content=other, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert version(data_dir, code) == before + 1  # the same state: no one is woken for nothing
    page = pupil.get(f"/class/{code}").text
    assert [i["value"] for i in soup(page).select("#lab-form input[name=counts]")] == ["7", "6"]


def test_sent_to_everyone_moves_every_students_lab(client: TestClient) -> None:
    code = start_class(client)
    pupils = [student(client, code, name) for name in ("Ada", "Bo")]
    pupils[0].post(f"/class/{code}/share", content=lab_form(["5", "6"], ["1", "3"]), headers=FORM)
    sent = client.post(
        f"/class/{code}/lab", data={"counts": "4,4", "means": "1,3", "eta": "0.1", "w": "10"}
    )
    assert sent.status_code == 200
    for pupil in pupils:
        page = soup(pupil.get(f"/class/{code}").text)
        assert [i["value"] for i in page.select("#lab-form input[name=counts]")] == ["4", "4"]
        sliders = page.select("#lab-form input[type=range][data-sync^='lab-count-']")
        assert [s["value"] for s in sliders] == ["4", "4"]
    labs = node(client.get(f"/class/{code}/host").text, "#class-labs")
    assert node(str(labs), "[data-value='at-sent']").get_text() == "2"
    assert node(str(labs), "[data-value='unequal']").get_text() == "0"


# ---- the dashboard's stream under dragging students -----------------------------------------

DETAILS_GAP_S = 0.5
EVENT_LIMIT = 20 * 1024


@pytest.fixture
def one_worker(tmp_path: Path) -> Iterator[Server]:
    yield from serving(tmp_path, 1)


def final_median(students: int, last: int) -> Fraction:
    """The median w_new under g once each student n sent counts (last, n + 1), means (1, 3):
    10 - (1/10)·(last + 3(n + 1))/(last + n + 1), all different."""
    values = sorted(
        Fraction(10) - Fraction(1, 10) * (last + 3 * (n + 1)) / (last + n + 1)
        for n in range(students)
    )
    return values[(students - 1) // 2]


def picture_of(event: Event) -> tuple[str, str] | None:
    """The states counted and the median w_new under g of a dashboard event's picture."""
    labs = BeautifulSoup(event.data, "html.parser").select_one("#class-labs")
    if labs is None:
        return None
    states = labs.select_one("[data-value='states']")
    median = labs.select_one("[data-value='median-global']")
    return (
        states.get_text() if states else "",
        median.get_text().replace("\N{MINUS SIGN}", "-") if median else "",
    )


@pytest.mark.server
@pytest.mark.slow
def test_dragging_students_give_the_dashboard_two_updates_a_second(
    one_worker: Server,
) -> None:
    students, per_second, seconds = 20, 10, 3
    last = per_second * seconds

    async def run() -> None:
        async with httpx.AsyncClient(base_url=one_worker.url, timeout=30, verify=TLS) as host:
            code = await start_class_async(host)
            pupils = [await join(one_worker.url, code, f"s{n}") for n in range(students)]
            arrived: list[tuple[float, Event]] = []
            opened, settled = asyncio.Event(), asyncio.Event()
            goal = final_median(students, last)

            async def watch() -> None:
                async with host.stream("GET", f"/class/{code}/events?view=host") as response:
                    async for event in read_events(response):
                        arrived.append((time.monotonic(), event))
                        opened.set()
                        picture = picture_of(event)
                        close = picture and abs(Fraction(picture[1] or 0) - goal) < 1e-5
                        if picture and picture[0] == str(students) and close:
                            settled.set()

            watcher = asyncio.create_task(watch())
            await asyncio.wait_for(opened.wait(), 10)  # the whole dashboard first

            async def drag(n: int, pupil: httpx.AsyncClient) -> None:
                # One after another: the students exploring, counted on the dashboard and
                # listed first, change as often as the picture.
                await asyncio.sleep(n / per_second)  # the pace of a class, not a wait
                for step in range(1, last + 1):
                    state = lab_form([str(step), str(n + 1)], ["1", "3"])
                    posted = await pupil.post(
                        f"/class/{code}/state", content=state, headers=DRAGGED
                    )
                    assert posted.status_code == 204
                    await asyncio.sleep(1 / per_second)  # the pace of a drag, not a wait

            try:
                await asyncio.gather(*(drag(n, p) for n, p in enumerate(pupils)))
                await asyncio.wait_for(settled.wait(), 10)  # the drags' last states arrive
            finally:
                watcher.cancel()
                for pupil in pupils:
                    await pupil.aclose()
            pictures = [at for at, event in arrived[1:] if picture_of(event) is not None]
            assert len(pictures) >= 2
            # At most one picture every DETAILS_GAP_S (the class changed ten times as often). Read
            # here, on a shared machine, two may arrive closer than they were sent: the count
            # over the whole drag is what the server decided.
            span = pictures[-1] - pictures[0]
            assert len(pictures) - 1 <= span / DETAILS_GAP_S + 1, (len(pictures), span)
            # Nor any other update (the counts, the students listed first): at most one every
            # DETAILS_GAP_S too, every event counted.
            updates = [at for at, _ in arrived[1:]]
            span = updates[-1] - updates[0]
            assert len(updates) - 1 <= span / DETAILS_GAP_S + 1, (len(updates), span)
            assert max(len(event.data.encode()) for _, event in arrived[1:]) <= EVENT_LIMIT

    asyncio.run(run())


def shared_state(data_dir: Path, nickname: str) -> str:
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        row = db.execute(
            "SELECT shared_query FROM live_participants WHERE nickname = ?", (nickname,)
        ).fetchone()
    return str(row[0])


def test_a_dragged_state_is_written_only_where_it_belongs(
    client: TestClient, data_dir: Path
) -> None:
    """A drag's request reads no database (its cookie's signature and the state's fields), so
    what it may not change is refused where the batch is written: a student removed, a cookie
    renamed for another class, a class ended or without the lab change nothing and wake no
    page; the others' states are written."""
    drags = client.app.state.live_drags  # type: ignore[attr-defined]
    code, other = start_class(client), start_class(client)
    ada, bo, cy = (student(client, code, name) for name in ("Ada", "Bo", "Cy"))
    state = lab_form(["5", "6"], ["1", "3"])
    for pupil in (ada, bo, cy):
        assert pupil.post(f"/class/{code}/state", content=state, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert {shared_state(data_dir, n) for n in ("Ada", "Bo", "Cy")} == {
        "counts=5,6&means=1,3&eta=0.1&w=10"
    }

    # Bo is removed; Ada's cookie is renamed for the other class (her signature is valid).
    host = soup(client.get(f"/class/{code}/host").text)
    bo_id = next(
        b["value"] for b in host.select("button[aria-label^=Remove]") if "Bo" in b["aria-label"]
    )
    assert client.post(f"/class/{code}/remove", data={"participant": bo_id}).status_code == 200
    renamed = student_cookie_of(ada, code)
    thief = TestClient(client.app)
    thief.portal = client.portal
    thief.cookies.set(student_cookie(other), renamed)
    moved = lab_form(["7", "6"], ["1", "3"])
    before = version(data_dir, code), version(data_dir, other)
    assert bo.post(f"/class/{code}/state", content=moved, headers=DRAGGED).status_code == 204
    assert thief.post(f"/class/{other}/state", content=moved, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert shared_state(data_dir, "Ada") == "counts=5,6&means=1,3&eta=0.1&w=10"
    assert (version(data_dir, code), version(data_dir, other)) == before  # no page woken

    # Cy's drag is written; after the class ends, Ada's is not.
    assert cy.post(f"/class/{code}/state", content=moved, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert shared_state(data_dir, "Cy") == "counts=7,6&means=1,3&eta=0.1&w=10"
    assert client.post(f"/class/{code}/end").status_code == 200
    assert ada.post(f"/class/{code}/state", content=moved, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert shared_state(data_dir, "Ada") == "counts=5,6&means=1,3&eta=0.1&w=10"

    # Without a student's cookie: the join form, nothing taken.
    stranger = TestClient(client.app)
    stranger.portal = client.portal
    refused = stranger.post(
        f"/class/{other}/state", content=moved, headers=DRAGGED, follow_redirects=False
    )
    assert refused.status_code == 303
    assert refused.headers["location"] == f"/join/{other}"
    assert drags.pending == {}


def student_cookie_of(client: TestClient, code: str) -> str:
    value = client.cookies.get(student_cookie(code))
    assert value
    return value


def test_a_class_without_the_lab_takes_no_dragged_state(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    settings = settings_for(tmp_path / "data", lesson_path=course_folder(tmp_path / "course"))
    with TestClient(create_app(settings)) as client:
        drags = client.app.state.live_drags  # type: ignore[attr-defined]
        started = client.post(
            "/class/new",
            data={"lesson": SHARD, "password": INSTRUCTOR_PASSWORD},
            follow_redirects=False,
        )
        shard = started.headers["location"].split("/")[2]
        dee = student(client, shard, "Dee")
        state = lab_form(["7", "6"], ["1", "3"])
        assert dee.post(f"/class/{shard}/state", content=state, headers=DRAGGED).status_code == 204
        client.portal.call(drags.flush)
        assert shared_state(tmp_path / "data", "Dee") == ""


def test_a_drag_sent_before_send_to_everyone_does_not_undo_it(
    client: TestClient, data_dir: Path
) -> None:
    """Ada drags, and the instructor sends a state to everyone before her drag is written: she
    is at the state sent (her page was moved to it); a drag after the send is hers again."""
    drags = client.app.state.live_drags  # type: ignore[attr-defined]
    code = start_class(client)
    ada = student(client, code, "Ada")
    dragged = lab_form(["5", "6"], ["1", "3"])
    assert ada.post(f"/class/{code}/state", content=dragged, headers=DRAGGED).status_code == 204
    sent = {"counts": "4,4", "means": "1,3", "eta": "0.1", "w": "10"}
    assert client.post(f"/class/{code}/lab", data=sent).status_code == 200
    client.portal.call(drags.flush)
    assert shared_state(data_dir, "Ada") == "counts=4,4&means=1,3&eta=0.1&w=10"
    assert ada.post(f"/class/{code}/state", content=dragged, headers=DRAGGED).status_code == 204
    client.portal.call(drags.flush)
    assert shared_state(data_dir, "Ada") == "counts=5,6&means=1,3&eta=0.1&w=10"
