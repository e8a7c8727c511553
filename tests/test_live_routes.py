"""The live class's routes (app/live/routes.py) through the real app on SQLite: what each
address answers, its status, headers and words, for the instructor, the projector and the
students. Written for the survivors of its mutation run (docs/testing.md, "The live class")."""

import httpx
import pytest
from fastapi.testclient import TestClient

from tests import test_live, test_live_refusals
from tests.test_live import (
    node,
    other_browser,
    questions,
    soup,
    start_class,
    student,
    words,
)

data_dir = test_live.data_dir


client = test_live_refusals.sqlite_client


@pytest.mark.parametrize("address", ["/class/new", "/join"])
def test_a_form_address_answers_another_method_405_naming_get_and_post(
    client: TestClient, address: str
) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        answered = client.request(method, address)
        assert answered.status_code == 405, (method, answered.text[:200])
        assert answered.headers["allow"] == "GET, POST"


def test_the_pacing_controls_are_documented_each_with_its_own_words_and_answers(
    client: TestClient,
) -> None:
    """Pause, resume and reveal are made by one function (``_phase_route``); each is its own
    operation in the schema (/docs), with its own description and the answers a post has."""
    schema = client.get("/openapi.json").json()
    said = {
        "pause": "Pause answering the current question.",
        "resume": "Open answering the current question again.",
        "reveal": "Reveal the answer and the distribution; answers are refused after it (409).",
    }
    for action, description in said.items():
        operation = schema["paths"][f"/class/{{code}}/{action}"]["post"]
        assert operation["summary"] == f"Class {action.title()}"
        assert operation["description"] == description
        assert {"303", "403", "404", "409", "422", "429"} <= operation["responses"].keys()


HTMX = {"HX-Request": "true"}


def test_a_pacing_control_sent_by_htmx_answers_the_dashboards_parts_as_its_post_left_them(
    client: TestClient,
) -> None:
    """Sent by htmx, a pause, a resume or a reveal answers the dashboard's live parts as its
    transaction left them, each an out-of-band swap of its element, and no reason; without
    JavaScript, 303 back to the dashboard."""
    code = start_class(client)
    student(client, code, "Ada")
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    states = {
        "pause": "Question 1: Answering is paused.",
        "resume": "Question 1: Answering is open.",
        "reveal": "Question 1: The answer is revealed; answering is closed.",
    }
    for action, state in states.items():
        done = client.post(f"/class/{code}/{action}", headers=HTMX)
        assert done.status_code == 200, action
        parts = soup(done.text)
        assert parts.select_one(".live-error") is None
        swapped = [(div["id"], div["hx-swap-oob"]) for div in parts.select("[hx-swap-oob]")]
        assert swapped == [
            ("host-now", "innerHTML"),
            ("host-counts", "innerHTML"),
            ("host-roster", "innerHTML"),
            ("host-labs", "innerHTML"),
        ], action
        assert words(node(done.text, "#host-now .live-state")) == state
        assert words(node(done.text, "#host-counts")).startswith("1 joined 1 not answered yet")
        assert words(node(client.get(f"/class/{code}/host").text, ".live-state")) == state
    plain = client.post(f"/class/{code}/pause", follow_redirects=False)
    assert plain.status_code == 409  # revealed: nothing to pause
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    plain = client.post(f"/class/{code}/pause", follow_redirects=False)
    assert plain.status_code == 303
    assert plain.headers["location"] == f"/class/{code}/host"


app_client = test_live.app_client
backend = test_live.backend

# What a form may send for a student's id that is no id: words, nothing, digits of another
# script, a sign, a fraction, and numbers past the ids' column (32 bits on PostgreSQL).
NO_IDS = ["abc", "", " ", "\uff11\uff12", "-1", "1.5", "2147483648", "99999999999", "999999999999"]


@pytest.mark.parametrize("value", NO_IDS)
def test_a_student_named_by_no_id_is_refused_naming_the_field_on_either_database(
    app_client: TestClient, value: str
) -> None:
    """Removing or letting back in a student the form names by no id is refused beside the
    field (422), never a 500; the projector is cleared by it, as by no student."""
    code = start_class(app_client)
    told = {
        "participant": "Name the student to remove.",
        "removed": "Name the removed student to let back in.",
    }
    for action, field in (("remove", "participant"), ("readmit", "removed")):
        refused = app_client.post(f"/class/{code}/{action}", data={field: value})
        assert refused.status_code == 422, (action, refused.text[:300])
        assert words(node(refused.text, "#host-error")) == told[field]
    cleared = app_client.post(
        f"/class/{code}/project", data={"participant": value}, follow_redirects=False
    )
    assert cleared.status_code == 303, cleared.text[:300]


def test_a_students_id_that_no_student_has_is_refused_as_no_such_student(
    client: TestClient,
) -> None:
    code = start_class(client)
    student(client, code, "Ada")
    for action, field, told in (
        ("remove", "participant", "No such student in this class."),
        ("readmit", "removed", "No such removed student in this class."),
        ("project", "participant", "That student has shared no lab state."),
    ):
        for value in ("2147483647", " 99 "):
            refused = client.post(f"/class/{code}/{action}", data={field: value})
            assert refused.status_code == 422, (action, value)
            assert words(node(refused.text, "#host-error")) == told


def test_the_forms_open_empty_or_with_the_code_of_their_address(client: TestClient) -> None:
    code = start_class(client)
    for address, typed in (("/join", ""), (f"/join/{code}", code), (f"/join?code={code}", code)):
        form = client.get(address)
        assert form.status_code == 200, address
        assert form.headers["cache-control"] == "no-store"
        assert node(form.text, "input#code")["value"] == typed, address
        assert node(form.text, "input#nickname")["value"] == "", address
    for address in ("/class/new", f"/class/{code}/key"):
        form = client.get(address)
        assert form.status_code == 200, address
        assert form.headers["cache-control"] == "no-store"


def test_a_refusal_of_a_class_page_is_not_stored(client: TestClient) -> None:
    code = start_class(client)
    stranger = other_browser(client)
    for address, status in ((f"/class/{code}/host", 403), ("/class/ZZZZZZ/screen", 404)):
        refused = stranger.get(address, headers={"Accept": "text/html"})
        assert refused.status_code == status, address
        assert refused.headers["cache-control"] == "no-store", address


def varies(answer: httpx.Response) -> list[str]:
    """The request headers an answer says it varies by."""
    return [name.strip() for name in answer.headers["vary"].split(",")]


def test_a_students_page_sent_to_htmx_is_its_live_part_alone_and_varies_by_it(
    client: TestClient,
) -> None:
    """An answer sent by htmx (the page's script) gets back the live part it swaps in, without
    the page around it or the student's lab; without JavaScript the whole page, with the lab.
    Both say they vary by ``HX-Request``, so no cache gives one for the other."""
    code = start_class(client)
    pupil = student(client, code, "Ada")
    first = questions()[0]
    assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    answer = {"question": first.id, "choice": str(first.answer_number)}
    part = pupil.post(f"/class/{code}/answer", data=answer, headers=HTMX)
    assert part.status_code == 200
    assert "HX-Request" in varies(part)
    shown = soup(part.text)
    assert shown.select_one("html") is None
    assert shown.select_one("#lab") is None
    assert node(part.text, "#class-question input[name=choice][checked]")["value"] == str(
        first.answer_number
    )
    whole = pupil.get(f"/class/{code}")
    assert whole.status_code == 200
    assert "HX-Request" in varies(whole)
    assert soup(whole.text).select_one("html") is not None
    assert soup(whole.text).select_one("#lab") is not None
    # Refused (answering paused), by htmx: the live part with the reason, its status 409.
    assert client.post(f"/class/{code}/pause").status_code == 200
    refused = pupil.post(f"/class/{code}/answer", data=answer, headers=HTMX)
    assert refused.status_code == 409
    assert soup(refused.text).select_one("html") is None
    assert node(refused.text, "#class-question .live-error").get_text(strip=True)
