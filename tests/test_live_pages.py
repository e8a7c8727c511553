"""The class's pages and their live parts (app/live/pages.py) through the real app on SQLite:
the links, addresses and parts each page shows, for the instructor, the projector and the
students. Written for the survivors of its mutation run (docs/testing.md, "The live class")."""

from fractions import Fraction
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests import test_live, test_live_refusals
from tests.conftest import INSTRUCTOR_PASSWORD
from tests.test_course import course_folder
from tests.test_live import (
    GRADIENT,
    node,
    questions,
    settings_for,
    soup,
    start_class,
    student,
    words,
)
from tests.test_live_refusals import events, next_event

data_dir = test_live.data_dir


client = test_live_refusals.sqlite_client


def test_every_class_page_is_not_stored(client: TestClient) -> None:
    code = start_class(client)
    for address in (f"/class/{code}/host", f"/class/{code}/screen", f"/class/{code}/students"):
        shown = client.get(address)
        assert shown.status_code == 200, address
        assert shown.headers["cache-control"] == "no-store", address
        assert node(shown.text, "main") is not None


STATE = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}


@pytest.mark.parametrize("in_course", [False, True])
def test_the_lab_link_is_the_lessons_own_address_under_the_proxys_prefix(
    tmp_path: Path, in_course: bool
) -> None:
    """Behind a proxy serving the app under ``/atlas``, the dashboard's "Open it in the lab"
    leads to the class's lesson under that prefix: the site's root for a lone lesson, the
    lesson's own address in a course; at the state sent."""
    extra: dict[str, object] = {}
    lesson = "/"
    if in_course:
        (tmp_path / "course").mkdir()
        extra["lesson_path"] = course_folder(tmp_path / "course")
        lesson = f"/learn/{GRADIENT}/"
    with TestClient(
        create_app(settings_for(tmp_path / "data", **extra)), root_path="/atlas"
    ) as host:
        started = host.post(
            "/class/new",
            data={"password": INSTRUCTOR_PASSWORD, "lesson": GRADIENT if in_course else ""},
            follow_redirects=False,
        )
        assert started.status_code == 303, started.text[:300]
        code = started.headers["location"].split("/")[3]
        assert host.post(f"/atlas/class/{code}/lab", data=STATE).status_code == 200
        dashboard = soup(host.get(f"/atlas/class/{code}/host").text)
        [link] = [a for a in dashboard.select("a") if words(a) == "Open it in the lab"]
        address = urlsplit(str(link["href"]))
        assert address.path == f"/atlas{lesson}"
        assert address.fragment == "lab"
        assert parse_qs(address.query) == {key: [value] for key, value in STATE.items()}


def test_a_students_lab_sends_to_its_own_class_and_is_gone_once_the_class_ends(
    client: TestClient,
) -> None:
    """The student's own lab posts a state to the class's share address (the form without
    JavaScript, and the page's script) and drags to its state address; an ended class shows
    no lab."""
    code = start_class(client)
    pupil = student(client, code, "Ada")
    lab = node(pupil.get(f"/class/{code}").text, "#lab")
    assert lab["data-share-url"] == f"/class/{code}/share"
    assert lab["data-drag-url"] == f"/class/{code}/state"
    assert node(str(lab), "#lab-form")["action"] == f"/class/{code}/share"
    assert client.post(f"/class/{code}/end").status_code == 200
    ended = pupil.get(f"/class/{code}")
    assert ended.status_code == 200
    assert soup(ended.text).select_one("#lab") is None
    assert soup(ended.text).select_one("#class-question") is not None


def test_the_projector_says_which_vote_is_open_for_a_question_of_two(
    client: TestClient,
) -> None:
    code = start_class(client)
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    assert soup(client.get(f"/class/{code}/screen").text).select_one(".live-vote") is None
    two = {"question": first.id, "rounds": "2"}
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert words(node(client.get(f"/class/{code}/screen").text, ".live-vote")) == "Vote 1 of 2"
    assert client.post(f"/class/{code}/revote").status_code == 200
    assert words(node(client.get(f"/class/{code}/screen").text, ".live-vote")) == "Vote 2 of 2"


def shows(html: str) -> str:
    """The digest a student's live part carries of what it shows."""
    return str(node(html, "#class-question")["data-shows"])


def test_a_students_live_part_carries_a_digest_that_changes_with_what_it_shows(
    client: TestClient,
) -> None:
    """The page's script swaps in a live part only when its digest differs from the one shown:
    the same page has the same digest, a page that shows something else another."""
    code = start_class(client)
    pupil = student(client, code, "Ada")
    waiting = pupil.get(f"/class/{code}").text
    assert shows(waiting) == shows(pupil.get(f"/class/{code}").text)
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    asked = pupil.get(f"/class/{code}").text
    answer = {"question": first.id, "choice": str(first.answer_number)}
    assert pupil.post(f"/class/{code}/answer", data=answer).status_code == 200
    answered = pupil.get(f"/class/{code}").text
    assert client.post(f"/class/{code}/end").status_code == 200
    ended = pupil.get(f"/class/{code}").text
    digests = [shows(page) for page in (waiting, asked, answered, ended)]
    assert all(digests)
    assert len(set(digests)) == 4, digests


def test_a_students_stream_shows_their_page_first(client: TestClient) -> None:
    code = start_class(client)
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    pupil = student(client, code, "Ada")
    with pupil.stream("GET", f"/class/{code}/events") as response:
        assert response.status_code == 200
        shown = next_event(events(response), lambda e: e.name == "class", "the student's page")
    assert shows(shown.data) == shows(pupil.get(f"/class/{code}").text)
    assert node(shown.data, "input[name=question]")["value"] == first.id


def test_a_state_sent_to_everyone_moves_a_students_lab_on_their_stream(
    client: TestClient,
) -> None:
    """The instructor's "send to everyone" reaches a student's open page as an out-of-band
    swap of their own lab, at the state sent and saying so (their own drags are not sent
    back)."""
    code = start_class(client)
    pupil = student(client, code, "Ada")
    with pupil.stream("GET", f"/class/{code}/events") as response:
        stream = events(response)
        next_event(stream, lambda e: e.name == "class", "the student's page")
        assert client.post(f"/class/{code}/lab", data=STATE).status_code == 200
        moved = next_event(stream, lambda e: "class-own-lab" in e.data, "the student's lab moved")
    assert moved.name == "class"
    lab = node(moved.data, "#class-own-lab")
    assert lab["hx-swap-oob"] == "outerHTML"
    assert words(node(str(lab), "#class-lab-sent")) == (
        "Your instructor sent this state to everyone: explore from here."
    )
    form = node(str(lab), "#lab-form")
    assert form["action"] == f"/class/{code}/share"
    assert [str(i["value"]) for i in form.select("input[name=counts]")] == ["2", "6"]
    assert [str(i["value"]) for i in form.select("input[name=means]")] == ["1", "3"]


def test_the_dashboards_stream_sends_nothing_for_a_change_it_does_not_show(
    client: TestClient,
) -> None:
    """Locking joining changes the class but none of the dashboard's live parts (the lock's
    own control is not one): its stream sends no event for it; the pause that follows is the
    next event."""
    code = start_class(client)
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    with (
        client.stream("GET", f"/class/{code}/events?view=host") as host,
        client.stream("GET", f"/class/{code}/events?view=screen") as screen,
    ):
        dashboard, projector = events(host), events(screen)
        next_event(dashboard, lambda e: e.name == "host", "the dashboard")
        next_event(projector, lambda e: e.name == "screen", "the projector")
        assert client.post(f"/class/{code}/lock").status_code == 200
        # The projector shows the lock (no way to join any more): the class was read again.
        next_event(projector, lambda e: "join-qr" not in e.data, "the lock")
        assert client.post(f"/class/{code}/pause").status_code == 200
        paused = next(dashboard)
    assert paused.name == "host"
    assert words(node(paused.data, "#host-now .live-state")) == ("Question 1: Answering is paused.")


def test_the_dashboard_shows_the_same_join_qr_as_the_projector(client: TestClient) -> None:
    """The dashboard's QR code is the join address's, the one the projector shows."""
    code = start_class(client)
    dashboard = node(client.get(f"/class/{code}/host").text, "#join-qr svg")
    projector = node(client.get(f"/class/{code}/screen").text, "#join-qr svg")
    assert dashboard.select("path, rect")  # a code drawn, not an empty picture
    assert str(dashboard) == str(projector)


def test_the_dashboard_offers_each_of_the_lessons_questions_the_next_one_chosen(
    client: TestClient,
) -> None:
    code = start_class(client)
    lesson = questions()
    offered = soup(client.get(f"/class/{code}/host").text).select("select#question option")
    assert [str(option["value"]) for option in offered] == [q.id for q in lesson]
    assert [words(option).split(".")[0] for option in offered] == [
        str(n) for n in range(1, len(lesson) + 1)
    ]
    assert client.post(f"/class/{code}/ask", data={"question": lesson[0].id}).status_code == 200
    offered = soup(client.get(f"/class/{code}/host").text).select("select#question option")
    assert [str(option["value"]) for option in offered if option.has_attr("selected")] == [
        lesson[1].id
    ]


def test_the_dashboard_shows_the_state_on_the_projector_until_taken_off(
    client: TestClient,
) -> None:
    """A student's state put on the projector shows on the dashboard too, with its figures and
    a way to take it off; taken off, it is gone from both."""
    code = start_class(client)
    pupil = student(client, code, "Zelda")
    state = {"counts": "1,3", "means": "2,2", "eta": "0.5", "w": "1"}
    assert pupil.post(f"/class/{code}/share", data=state).status_code == 200
    host = f"/class/{code}/host"
    assert soup(client.get(host).text).select_one("#projected-title") is None
    who = node(client.get(host).text, f"button[formaction='/class/{code}/project']")["value"]
    assert client.post(f"/class/{code}/project", data={"participant": who}).status_code == 200
    shown = soup(client.get(host).text)
    title = shown.select_one("#projected-title")
    assert title is not None
    assert words(title) == "A student's lab state on the projector"
    section = title.find_parent("section")
    figures = {dd["data-value"]: dd.get_text(strip=True) for dd in section.select("dd")}
    # Both ranks' means are 2: g = 2, and w_new = 1 - 0.5 · 2 = 0.
    assert Fraction(figures["g"]) == 2
    assert Fraction(figures["w-new"]) == 0
    off = section.select_one("form")
    assert off["action"] == f"/class/{code}/project"
    assert client.post(off["action"], data={}).status_code == 200
    assert soup(client.get(host).text).select_one("#projected-title") is None
    assert "Zelda" not in client.get(f"/class/{code}/screen").text


def test_the_projected_state_can_be_sent_to_everyone_from_the_page_and_its_stream(
    client: TestClient,
) -> None:
    """Under the picture of the class's labs, the state on the projector is offered to send to
    everyone: on the dashboard's page (no out-of-band swap there) and in the picture its stream
    sends when a state changes, each form posting that state to the class's lab address."""
    code = start_class(client)
    zelda, ada = student(client, code, "Zelda"), student(client, code, "Ada")
    state = {"counts": "1,3", "means": "2,2", "eta": "0.5", "w": "1"}
    assert zelda.post(f"/class/{code}/share", data=state).status_code == 200
    host = f"/class/{code}/host"
    who = node(client.get(host).text, f"button[formaction='/class/{code}/project']")["value"]
    assert client.post(f"/class/{code}/project", data={"participant": who}).status_code == 200

    def send_form(picture: str) -> dict[str, str]:
        labs = node(picture, "#class-labs")
        [form] = [f for f in labs.select("form") if "to everyone" in words(f)]
        assert form["action"] == f"/class/{code}/lab"
        return {field["name"]: field["value"] for field in form.select("input[type=hidden]")}

    page = client.get(host).text
    assert node(page, "#class-labs").get("hx-swap-oob") is None
    assert send_form(page) == state
    with client.stream("GET", f"{host.removesuffix('/host')}/events?view=host") as dashboard:
        watching = events(dashboard)
        next_event(watching, lambda e: e.name == "host", "the dashboard")
        moved = {**state, "counts": "2,2"}
        assert ada.post(f"/class/{code}/share", data=moved).status_code == 200
        drawn = next_event(watching, lambda e: 'id="class-labs"' in e.data, "the new picture")
        assert node(drawn.data, "#class-labs")["hx-swap-oob"] == "outerHTML"
        assert send_form(drawn.data) == state


def test_a_lesson_without_the_lab_has_no_picture_of_lab_states(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    settings = settings_for(tmp_path / "data", lesson_path=course_folder(tmp_path / "course"))
    with TestClient(create_app(settings)) as host:
        start_class(host)  # the device is the instructor's from now on
        started = host.post("/class/new", data={"lesson": test_live.SHARD}, follow_redirects=False)
        code = started.headers["location"].split("/")[2]
        student(host, code, "Ada")
        page = soup(host.get(f"/class/{code}/host").text)
        assert page.select_one("#class-labs") is None
        assert page.select_one("#class-labs-title") is None
