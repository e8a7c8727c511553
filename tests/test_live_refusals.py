"""What the live class refuses across classes and out of turn, and what its streams must show,
each through the real app on a real database (SQLite and, where storage matters, PostgreSQL):
a host cookie or a student cookie renamed for another class, one class's host acting on another
class's student, the next question after a reveal, pacing before any question, invisible
characters in a nickname; a stream opened after a change made outside this worker, and a
student's shared lab state on an open dashboard."""

import codecs
import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.live import store
from app.live.access import host_cookie, student_cookie
from app.main import create_app
from tests import test_live
from tests.test_live import (
    node,
    other_browser,
    questions,
    settings_for,
    soup,
    start_class,
    student,
    words,
    wrong,
)

# The class's fixtures, on both backends (app_client) or on SQLite alone where storage is not
# what the test is about (sqlite_client).
data_dir = test_live.data_dir
backend = test_live.backend
app_client = test_live.app_client

HTMX = {"HX-Request": "true"}


@pytest.fixture
def sqlite_client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir))) as client:
        yield client


def exported(client: TestClient, code: str) -> list[list[str]]:
    """The class's export, its header row first."""
    answer = client.get(f"/class/{code}/export.csv")
    assert answer.status_code == 200
    assert answer.content.startswith(codecs.BOM_UTF8)  # Excel reads it as UTF-8
    return list(csv.reader(io.StringIO(answer.content.decode("utf-8-sig"))))


def rows(client: TestClient, sql: str, **params: object) -> list[tuple[object, ...]]:
    """What the app's own database holds, read on the app's loop."""

    async def read() -> list[tuple[object, ...]]:
        async with client.app.state.live_store.session(write=False) as session:  # type: ignore[attr-defined]
            return [tuple(row) for row in (await session.execute(text(sql), params)).all()]

    return client.portal.call(read)  # type: ignore[union-attr]


def class_id(client: TestClient, code: str) -> int:
    [(found,)] = rows(client, "SELECT id FROM live_classes WHERE code = :code", code=code)
    assert isinstance(found, int)
    return found


def student_ids(host: TestClient, code: str) -> dict[str, str]:
    """Each student's participant id, as the dashboard's roster gives it (its remove button)."""
    page = host.get(f"/class/{code}/host")
    assert page.status_code == 200
    return {
        words(row.select_one("th")): str(row.select_one("button[aria-label^=Remove]")["value"])  # type: ignore[union-attr, index]
        for row in soup(page.text).select("#roster-rows tr")
    }


def swapped(html: str) -> BeautifulSoup:
    """An event's parts as htmx swaps them: the rows it carries in a <template> (where a table's
    rows parse outside a table) taken out of it, as htmx does with out-of-band elements."""
    parsed = soup(html)
    for template in parsed.find_all("template"):
        template.replace_with(soup(template.decode_contents()))
    return parsed


def stream_status(client: TestClient, path: str) -> int:
    """The status a stream answers with (an open stream is closed at once: never waited on)."""
    with client.stream("GET", path) as response:
        return response.status_code


# ---- cookies of one class used for another ------------------------------------------------


def test_a_host_cookie_renamed_for_another_class_is_refused(sqlite_client: TestClient) -> None:
    mine = start_class(sqlite_client)
    theirs_host = other_browser(sqlite_client)
    theirs = start_class(theirs_host)
    # A validly signed host cookie, of class `mine`, under the name of class `theirs`.
    thief = other_browser(sqlite_client)
    thief.cookies.set(host_cookie(theirs), sqlite_client.cookies[host_cookie(mine)])
    for path in ("host", "screen", "export.csv"):
        assert thief.get(f"/class/{theirs}/{path}").status_code == 403, path
    for view in ("host", "screen"):
        assert stream_status(thief, f"/class/{theirs}/events?view={view}") == 403, view
    first = questions()[0]
    assert thief.post(f"/class/{theirs}/ask", data={"question": first.id}).status_code == 403
    assert thief.post(f"/class/{theirs}/end").status_code == 403
    assert thief.post(f"/class/{theirs}/delete").status_code == 403
    # Their class is as it was; the cookie still opens its own class.
    page = theirs_host.get(f"/class/{theirs}/host")
    assert page.status_code == 200
    assert words(node(page.text, ".live-state")) == "No question asked yet."
    assert sqlite_client.get(f"/class/{mine}/host").status_code == 200


def test_a_students_cookie_copied_to_another_class_is_no_student_there(
    app_client: TestClient,
) -> None:
    mine = start_class(app_client)
    theirs_host = other_browser(app_client)
    theirs = start_class(theirs_host)
    ada = student(app_client, mine, "Ada")
    bo = student(theirs_host, theirs, "Bo")
    first = questions()[0]
    for host, code in ((app_client, mine), (theirs_host, theirs)):
        assert host.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    # Ada's validly signed cookie of her class, copied under the other class's name.
    ada.cookies.set(student_cookie(theirs), ada.cookies[student_cookie(mine)])
    choice = {"question": first.id, "choice": str(first.answer_number)}
    answered = ada.post(f"/class/{theirs}/answer", data=choice, follow_redirects=False)
    # Not their student: sent to the class's join form, nothing stored.
    assert answered.status_code == 303
    assert answered.headers["location"] == f"/join/{theirs}"
    shared = ada.post(
        f"/class/{theirs}/share", data={"counts": "2,6", "means": "1,3"}, follow_redirects=False
    )
    assert shared.status_code == 303
    assert shared.headers["location"] == f"/join/{theirs}"
    page = ada.get(f"/class/{theirs}", follow_redirects=False)
    assert page.status_code == 303
    assert stream_status(ada, f"/class/{theirs}/events") == 403

    assert bo.post(f"/class/{theirs}/answer", data=choice).status_code == 200
    assert [row[:2] for row in exported(theirs_host, theirs)] == [
        ["nickname", "question"],
        ["Bo", first.id],
    ]
    theirs_id = class_id(app_client, theirs)
    assert rows(
        app_client,
        "SELECT p.nickname FROM live_answers a JOIN live_participants p"
        " ON p.id = a.participant_id WHERE a.class_id = :id",
        id=theirs_id,
    ) == [("Bo",)]
    assert rows(
        app_client,
        "SELECT nickname, shared_query FROM live_participants WHERE class_id = :id",
        id=theirs_id,
    ) == [("Bo", "")]
    assert rows(
        app_client, "SELECT class_id, shared_query FROM live_participants WHERE nickname = 'Ada'"
    ) == [(class_id(app_client, mine), "")]
    # In her own class she is still herself.
    assert ada.post(f"/class/{mine}/answer", data=choice).status_code == 200
    assert [row[0] for row in exported(app_client, mine)[1:]] == ["Ada"]


def test_a_host_cannot_remove_or_project_another_classs_student(app_client: TestClient) -> None:
    mine = start_class(app_client)
    theirs_host = other_browser(app_client)
    theirs = start_class(theirs_host)
    student(app_client, mine, "Ada")
    bo = student(theirs_host, theirs, "Bo")
    state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    assert bo.post(f"/class/{theirs}/share", data=state).status_code == 200
    bo_id = student_ids(theirs_host, theirs)["Bo"]

    for action in ("remove", "project"):
        plain = app_client.post(f"/class/{mine}/{action}", data={"participant": bo_id})
        assert plain.status_code == 422, action
        # As the dashboard's htmx controls get it: the reason alone.
        htmx = app_client.post(f"/class/{mine}/{action}", data={"participant": bo_id}, headers=HTMX)
        assert htmx.status_code == 422, action
        assert "student" in words(node(htmx.text, ".live-error")), action

    # Bo is still in his class, with his shared state; nothing of his reached the other class.
    assert list(student_ids(theirs_host, theirs)) == ["Bo"]
    assert bo.get(f"/class/{theirs}").status_code == 200
    assert rows(
        app_client,
        "SELECT nickname, class_id FROM live_participants WHERE id = :id",
        id=int(bo_id),
    ) == [("Bo", class_id(app_client, theirs))]
    assert rows(
        app_client, "SELECT screen_query FROM live_classes WHERE code = :code", code=mine
    ) == [("",)]
    assert not soup(app_client.get(f"/class/{mine}/screen").text).select("[data-value=g]")


# ---- a question's life, in turn -----------------------------------------------------------


def test_asking_the_next_question_after_a_reveal_opens_answering(app_client: TestClient) -> None:
    code = start_class(app_client)
    first, second = questions()[:2]
    ada = student(app_client, code, "Ada")
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    ada.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
    assert app_client.post(f"/class/{code}/reveal").status_code == 200
    assert app_client.post(f"/class/{code}/ask", data={"question": second.id}).status_code == 200
    status = words(node(app_client.get(f"/class/{code}/host").text, ".live-state"))
    assert status == f"Question {second.number}: Answering is open."
    choice = str(wrong(second))
    sent = ada.post(f"/class/{code}/answer", data={"question": second.id, "choice": choice})
    assert sent.status_code == 200
    assert [row[1:4] for row in exported(app_client, code)[1:]] == [
        [first.id, "1", "true" if first.answer_number == 1 else "false"],
        [second.id, choice, "false"],
    ]


@pytest.mark.parametrize("action", ["pause", "resume", "reveal"])
def test_pacing_before_any_question_is_refused(app_client: TestClient, action: str) -> None:
    code = start_class(app_client)
    refused = app_client.post(f"/class/{code}/{action}")
    assert refused.status_code == 409
    assert words(node(refused.text, "#host-error")) == "No question has been asked yet."
    htmx = app_client.post(f"/class/{code}/{action}", headers=HTMX)
    assert htmx.status_code == 409
    assert words(node(htmx.text, ".live-error")) == "No question has been asked yet."
    assert words(node(refused.text, ".live-state")) == "No question asked yet."
    assert rows(
        app_client, "SELECT question, phase FROM live_classes WHERE code = :code", code=code
    ) == [(None, "open")]
    # The first question asked is open for answers.
    first = questions()[0]
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    ada = student(app_client, code, "Ada")
    sent = ada.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
    assert sent.status_code == 200


# ---- nicknames ----------------------------------------------------------------------------

INVISIBLE = {
    "zero width space": "\u200b",
    "zero width joiner": "\u200d",
    "word joiner": "\u2060",
    "byte order mark": "\ufeff",
}


def test_a_nickname_with_an_invisible_character_is_refused(app_client: TestClient) -> None:
    code = start_class(app_client)
    student(app_client, code, "Ada")
    for name, char in INVISIBLE.items():
        for typed in (f"Ad{char}a", f"{char}Ada", f"Bo{char}", char):
            fresh = other_browser(app_client)
            answer = fresh.post(
                "/join", data={"code": code, "nickname": typed}, follow_redirects=False
            )
            assert answer.status_code == 422, (name, typed)
            assert words(node(answer.text, "#nickname-error")), (name, typed)
            assert node(answer.text, "input#nickname")["aria-invalid"] == "true"
            assert student_cookie(code) not in fresh.cookies
    assert rows(app_client, "SELECT nickname FROM live_participants") == [("Ada",)]


# ---- streams ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    name: str
    data: str


def events(response: httpx.Response) -> Iterator[Event]:
    """A stream's events as EventSource reads them; a comment (the ping, every 15 s) is an
    event named ":" here, so that a test waiting for an event knows none came before it."""
    name, data = "message", []
    for line in response.iter_lines():
        if line.startswith(":"):
            yield Event(":", line)
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif not line and data:
            yield Event(name, "\n".join(data))
            name, data = "message", []


def next_event(stream: Iterator[Event], seen: Callable[[Event], bool], what: str) -> Event:
    """The first event for which ``seen`` holds, among the next ten and before the next ping."""
    for _ in range(10):
        event = next(stream)
        assert event.name != ":", f"no event showed {what} before the stream's ping"
        if seen(event):
            return event
    raise AssertionError(f"ten events and none showed {what}")


def quiet_other_workers(client: TestClient) -> None:
    """This worker hears no other worker any more (its version poll or PostgreSQL listener
    stopped), as when the worker that made a change is killed before its word arrives: only
    this worker's own commits and what a stream reads for itself reach the streams."""
    client.portal.call(client.app.state.live_source.stop)  # type: ignore[union-attr, attr-defined]


def state_of(event: Event) -> str:
    return words(node(event.data, ".live-state"))


def test_a_stream_opened_after_a_change_made_elsewhere_starts_from_it(
    app_client: TestClient,
) -> None:
    code = start_class(app_client)
    first, second = questions()[:2]
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    quiet_other_workers(app_client)
    ident = class_id(app_client, code)
    db = app_client.app.state.live_store  # type: ignore[attr-defined]

    async def change_elsewhere() -> None:
        # The statement another worker makes for an ask, committed without a word to this one.
        async with db.session() as session:
            await store.change(session, ident, question=second.id, phase="paused")

    path = f"/class/{code}/events?view=host"
    with app_client.stream("GET", path) as first_stream:
        assert first_stream.status_code == 200
        watching = events(first_stream)
        opened = next_event(watching, lambda e: e.name == "host", "the dashboard")
        assert state_of(opened) == f"Question {first.number}: Answering is open."
        # The class's feed in this worker is held open by that stream while this happens.
        app_client.portal.call(change_elsewhere)  # type: ignore[union-attr]
        with app_client.stream("GET", path) as again:
            assert again.status_code == 200
            event = next_event(events(again), lambda e: e.name == "host", "the dashboard")
            assert state_of(event) == f"Question {second.number}: Answering is paused."
            assert words(node(event.data, "#host-now h3")).startswith(f"{second.number}. ")


def test_a_students_shared_lab_state_reaches_an_open_dashboard(app_client: TestClient) -> None:
    code = start_class(app_client)
    ada = student(app_client, code, "Ada")
    student(app_client, code, "Bo")
    ids = student_ids(app_client, code)
    quiet_other_workers(app_client)

    def projectable(event: Event) -> set[str]:
        buttons = swapped(event.data).select("button[formaction$='/project']")
        return {str(button["value"]) for button in buttons}

    def states(event: Event) -> str | None:
        found = swapped(event.data).select_one("#class-labs [data-value='states']")
        return found.get_text() if found is not None else None

    with app_client.stream("GET", f"/class/{code}/events?view=host") as dashboard:
        assert dashboard.status_code == 200
        watching = events(dashboard)
        opened = next_event(watching, lambda e: e.name == "host", "the dashboard")
        # No one has a state yet: no row offers projecting one.
        assert projectable(opened) == set()
        assert states(opened) == "0"
        state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
        assert ada.post(f"/class/{code}/share", data=state, headers=HTMX).status_code == 204
        offered: set[str] = set()  # the rows' Project buttons, in whichever event sent them

        def pictured(event: Event) -> bool:
            offered.update(projectable(event))
            return states(event) is not None

        event = next_event(watching, pictured, "Ada's shared state")
        assert states(event) == "1"
        # Ada's row now offers her state to the projector, and only hers.
        assert offered == {ids["Ada"]}
