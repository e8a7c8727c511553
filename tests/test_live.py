"""The live class through the real app (TestClient runs its lifespan: migrations, purge) on a
real SQLite file in a temporary data folder: joins, host-only pages, cross-site refusal, the
question's life (ask, answer, pause, reveal), export, retention and a restart."""

import asyncio
import codecs
import contextlib
import csv
import io
import re
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.lesson.loader import load_lesson
from app.lesson.quiz import Question
from app.lesson.render import render_lesson
from app.live.access import ParticipantKey, stable_key, student_cookie
from app.live.codes import ALPHABET, LENGTH, new_code, read_code
from app.live.database import SharedKeyError
from app.live.export import neutral
from app.live.instructor import FREE_GUESSES
from app.live.store import SQLITE_FILE
from app.main import create_app
from app.settings import Settings
from app.web.secretkey import PASSWORD_FILE
from tests.conftest import INSTRUCTOR_PASSWORD, ROOT
from tests.test_course import course_folder

GRADIENT = "distributed-gradient-weighting"
SHARD = "sharded-matmul-ownership"

KEY = "test-live-key"
# The export's columns, in order: round 1 or 2 (a re-vote), confidence sure, unsure or empty.
EXPORT_HEADER = [
    "nickname",
    "question",
    "choice",
    "correct",
    "answered_at",
    "round",
    "confidence",
]


def questions() -> list[Question]:
    lesson = render_lesson(load_lesson(Settings().lesson_path))
    return [item.question for item in lesson.questions]


def wrong(question: Question) -> int:
    return next(n for n, _ in question.choices if n != question.answer_number)


def settings_for(data_dir: Path, **extra: object) -> Settings:
    return Settings(data_dir=data_dir, secret_key=KEY, confirm_enabled=False, **extra)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> dict[str, str]:
    """Each backend the class runs on: SQLite (the default, nothing configured), and a real
    private PostgreSQL (several replicas)."""
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("postgres_url")}


@pytest.fixture
def app_client(data_dir: Path, backend: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir, **backend))) as client:
        yield client


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def start_class(client: TestClient) -> str:
    started = client.post(
        "/class/new", data={"password": INSTRUCTOR_PASSWORD}, follow_redirects=False
    )
    assert started.status_code == 303, started.text[:300]
    location = started.headers["location"]
    assert location.startswith("/class/")
    assert location.endswith("/host")
    cookie = started.headers["set-cookie"]
    assert "httponly" in cookie.lower()
    return location.split("/")[2]


def start_class_with_a_letter(client: TestClient) -> str:
    """A class whose code holds a letter: a code of digits alone (8⁶ of the 31⁶) reads the same
    in lower case, so a test of the lower-case address needs another class."""
    while (code := start_class(client)).lower() == code:
        pass
    return code


def other_browser(client: TestClient, address: str = "testclient") -> TestClient:
    """Another browser on the same running app: its own cookies, the app's own event loop (a
    PostgreSQL connection belongs to the loop that opened it; a client never entered would run
    each request in a loop of its own); from another ``address`` if given (every TestClient's
    is ``testclient``)."""
    other = TestClient(client.app, client=(address, 50000))
    other.portal = client.portal
    return other


def student(host: TestClient, code: str, nickname: str) -> TestClient:
    """A second browser: the same app, its own cookies."""
    client = other_browser(host)
    joined = client.post("/join", data={"code": code, "nickname": nickname}, follow_redirects=False)
    assert joined.status_code == 303, joined.text[:300]
    assert joined.headers["location"] == f"/class/{code.upper()}"
    return client


def node(html: str, selector: str) -> Tag:
    found = soup(html).select_one(selector)
    assert found is not None, f"no {selector} in the page"
    return found


def words(tag: Tag) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())


# ---- codes --------------------------------------------------------------------------------


def test_codes_avoid_look_alikes_and_read_case_insensitively() -> None:
    assert not set("0O1IL") & set(ALPHABET)
    for _ in range(200):
        code = new_code()
        assert len(code) == LENGTH
        assert set(code) <= set(ALPHABET)
        assert read_code(code.lower()) == code
        assert read_code(f" {code[:3]}-{code[3:].lower()} ") == code
    assert read_code("ABCDE0") is None  # a zero is never in a code
    assert read_code("ABCDE") is None


# ---- joining ------------------------------------------------------------------------------


def test_bad_joins_say_why_beside_the_field(app_client: TestClient) -> None:
    code = start_class(app_client)
    student(app_client, code, "Ada")
    cases = [
        ({"code": code, "nickname": "   "}, 422, "nickname"),
        ({"code": code, "nickname": "x" * 25}, 422, "nickname"),
        ({"code": code, "nickname": "  aDA "}, 409, "nickname"),  # taken, case and spaces aside
        ({"code": "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", "nickname": "Bo"}, 404, "code"),
        ({"code": "hello!", "nickname": "Bo"}, 404, "code"),
    ]
    for form, status, field in cases:
        fresh = other_browser(app_client)
        answer = fresh.post("/join", data=form, follow_redirects=False)
        assert answer.status_code == status, (form, answer.status_code)
        page = soup(answer.text)
        error = page.select_one(f"#{field}-error")
        assert error is not None, (form, answer.text[-800:])
        assert error.get_text(strip=True)
        field_input = page.select_one(f"input#{field}")
        assert field_input is not None
        assert field_input.get("aria-invalid") == "true"
        # What the student typed is kept in the form, escaped.
        assert page.select_one("input#nickname")["value"] == form["nickname"]  # type: ignore[index]
    # 24 characters after trimming are fine.
    student(app_client, code.lower(), f"  {'y' * 24}  ")


def test_join_form_from_the_qr_address_has_the_code(app_client: TestClient) -> None:
    code = start_class(app_client)
    page = app_client.get(f"/join/{code.lower()}")
    assert page.status_code == 200
    assert node(page.text, "input#code")["value"] == code


def test_a_code_in_lower_case_leads_to_the_class(app_client: TestClient) -> None:
    code = start_class_with_a_letter(app_client)
    sent_on = app_client.get(f"/class/{code.lower()}/host?x=1", follow_redirects=False)
    assert sent_on.status_code == 308
    assert sent_on.headers["location"] == f"/class/{code}/host?x=1"
    assert app_client.get(f"/class/{code.lower()}/host").status_code == 200


def test_in_a_course_the_class_follows_the_lesson_chosen(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    folder = course_folder(tmp_path / "course")
    settings = settings_for(tmp_path / "data", lesson_path=folder)
    with TestClient(create_app(settings)) as host:
        form = soup(host.get("/class/new").text)
        slugs = [str(o["value"]) for o in form.select("select#lesson option")]
        assert GRADIENT in slugs
        assert SHARD in slugs
        refused = host.post(
            "/class/new", data={"lesson": "no-such-lesson", "password": INSTRUCTOR_PASSWORD}
        )
        assert refused.status_code == 422
        assert node(refused.text, "#lesson-error").get_text(strip=True)
        shard = host.post(
            "/class/new",
            data={"lesson": SHARD, "password": INSTRUCTOR_PASSWORD},
            follow_redirects=False,
        )
        shard_code = shard.headers["location"].split("/")[2]
        course = host.app.state.course  # type: ignore[attr-defined]
        shard_question = course.lesson(SHARD).rendered.questions[0]
        asked = host.post(f"/class/{shard_code}/ask", data={"question": shard_question.question.id})
        assert asked.status_code == 200
        prompt = words(node(asked.text, "#current-question"))
        assert " ".join(shard_question.prompt_html.striptags().split()) in prompt
        # That lesson has no gradient lab: no lab state to share.
        assert soup(asked.text).select_one("#lab-counts") is None
        no_lab = host.post(f"/class/{shard_code}/lab", data={"counts": "2,6", "means": "1,3"})
        assert no_lab.status_code == 409

        gradient = host.post(
            "/class/new",
            data={"lesson": GRADIENT, "password": INSTRUCTOR_PASSWORD},
            follow_redirects=False,
        )
        code = gradient.headers["location"].split("/")[2]
        pupil = student(host, code, "Ada")
        host.post(
            f"/class/{code}/lab", data={"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
        )
        # The student's own lab is the gradient lesson's, at the state sent.
        own = soup(pupil.get(f"/class/{code}").text)
        assert [i["value"] for i in own.select("#lab-form input[name=counts]")] == ["2", "6"]
        assert own.select_one("#class-lab-sent") is not None


def test_an_unknown_class_is_an_html_404(app_client: TestClient) -> None:
    for path in ("/class/ABCDEF", "/class/ABCDEF/host", "/class/nope/screen"):
        answer = app_client.get(path, headers={"Accept": "text/html"})
        assert answer.status_code == 404
        assert answer.headers["content-type"].startswith("text/html")
        assert "no class with the code" in words(node(answer.text, "main")).lower()
        # A script asking the same gets the reason as JSON, as every refusal of the app.
        assert app_client.get(path).json()["detail"]


# ---- who may do what ----------------------------------------------------------------------

HOST_GETS = ["host", "screen", "export.csv", "events?view=host", "events?view=screen"]
HOST_POSTS = [
    "ask",
    "pause",
    "resume",
    "reveal",
    "show",
    "lab",
    "project",
    "remove",
    "end",
    "delete",
]


def test_every_host_url_refuses_anyone_without_the_host_cookie(app_client: TestClient) -> None:
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    stranger = other_browser(app_client)
    for client in (pupil, stranger):
        for path in HOST_GETS:
            assert client.get(f"/class/{code}/{path}").status_code == 403, path
        for path in HOST_POSTS:
            answer = client.post(f"/class/{code}/{path}", data={"question": questions()[0].id})
            assert answer.status_code == 403, path
    # The host of another class is a stranger here.
    other = other_browser(app_client)
    start_class(other)
    assert other.get(f"/class/{code}/host").status_code == 403
    # The class is untouched.
    assert app_client.get(f"/class/{code}/host").status_code == 200


def test_a_forged_host_cookie_is_refused(app_client: TestClient) -> None:
    code = start_class(app_client)
    forger = other_browser(app_client)
    forger.cookies.set(f"atlas-host-{code}", app_client.cookies[f"atlas-host-{code}"] + "x")
    assert forger.get(f"/class/{code}/host").status_code == 403


def _keyed_link(html: str, selector: str) -> tuple[str, str]:
    """A link's path (what a request sends) and its key (after "#", which no request sends)."""
    link = node(html, selector)["value"]
    assert isinstance(link, str)
    address, _, key = link.partition("#")
    return "/" + address.split("://", 1)[1].split("/", 1)[1], key


def test_the_cohost_link_keeps_its_key_out_of_every_url(app_client: TestClient) -> None:
    code = start_class(app_client)
    path, key = _keyed_link(app_client.get(f"/class/{code}/host").text, "#cohost-url")
    assert path == f"/class/{code}/key"
    assert key
    assert key not in path
    cohost = other_browser(app_client)
    assert cohost.get(f"/class/{code}/host?key={key}").status_code == 403  # the old way
    form = cohost.get(path)
    assert form.status_code == 200
    assert node(form.text, "form#key-form input#key")["name"] == "key"
    refused = cohost.post(path, data={"key": key + "x"}, follow_redirects=False)
    assert refused.status_code == 403
    assert node(refused.text, "#key-error").get_text(strip=True)
    entered = cohost.post(path, data={"key": key}, follow_redirects=False)
    assert entered.status_code == 303
    assert entered.headers["location"] == f"/class/{code}/host"
    assert cohost.get(f"/class/{code}/host").status_code == 200


def test_the_projector_link_opens_the_projectors_view_only(app_client: TestClient) -> None:
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    first = questions()[0]
    host_page = app_client.get(f"/class/{code}/host").text
    path, key = _keyed_link(host_page, "#screen-url")
    _, host_key = _keyed_link(host_page, "#cohost-url")
    assert key != host_key
    projector = other_browser(app_client)
    assert projector.get(f"/class/{code}/screen").status_code == 403
    entered = projector.post(path, data={"key": key}, follow_redirects=False)
    assert entered.status_code == 303
    assert entered.headers["location"] == f"/class/{code}/screen"
    screen = projector.get(f"/class/{code}/screen")
    assert screen.status_code == 200
    assert "Ada" not in screen.text
    # Nothing of the host's: the dashboard, its stream, the export and every action.
    assert projector.get(f"/class/{code}/host").status_code == 403
    assert projector.get(f"/class/{code}/events?view=host").status_code == 403
    assert projector.get(f"/class/{code}/export.csv").status_code == 403
    for action, form in [
        ("ask", {"question": first.id}),
        ("reveal", {}),
        ("remove", {"participant": "1"}),
        ("end", {}),
        ("delete", {}),
    ]:
        answer = projector.post(f"/class/{code}/{action}", data=form, follow_redirects=False)
        assert answer.status_code == 403, action
    # A student's cookie opens no projector either.
    assert pupil.get(f"/class/{code}/screen").status_code == 403
    assert app_client.get(f"/class/{code}/host").status_code == 200


def test_links_follow_atlas_public_url_not_the_host_header(
    data_dir: Path, backend: dict[str, str]
) -> None:
    public = "https://lab.example.org"
    with TestClient(create_app(settings_for(data_dir, public_url=public, **backend))) as host:
        code = start_class(host)
        pages = [
            host.get(f"/class/{code}/host", headers={"Host": name}).text
            for name in ("testserver", "evil.example")
        ]
        screen = host.get(f"/class/{code}/screen", headers={"Host": "evil.example"}).text
    for page in pages:
        assert "evil.example" not in page
        assert node(page, ".live-join-url a.bare-url")["href"] == f"{public}/join/{code}"
        for selector in ("#cohost-url", "#screen-url"):
            assert str(node(page, selector)["value"]).startswith(f"{public}/class/{code}/key#")
    assert "evil.example" not in screen
    assert str(node(pages[0], ".live-qr")) == str(node(pages[1], ".live-qr"))


def test_without_atlas_public_url_links_follow_the_address_asked(app_client: TestClient) -> None:
    code = start_class(app_client)
    page = app_client.get(f"/class/{code}/host", headers={"Host": "lab.school.example"}).text
    join = node(page, ".live-join-url a.bare-url")["href"]
    assert join == f"http://lab.school.example/join/{code}"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "null"},
    ],
)
def test_cross_site_posts_are_refused(app_client: TestClient, headers: dict[str, str]) -> None:
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    first = questions()[0]
    attempts = [
        (other_browser(app_client), "/class/new", {}),
        (other_browser(app_client), "/join", {"code": code, "nickname": "Eve"}),
        (app_client, f"/class/{code}/ask", {"question": first.id}),
        (app_client, f"/class/{code}/delete", {}),
        (pupil, f"/class/{code}/answer", {"question": first.id, "choice": "1"}),
    ]
    for client, path, form in attempts:
        answer = client.post(path, data=form, headers=headers, follow_redirects=False)
        assert answer.status_code == 403, path
    # Nothing changed: no question asked, no Eve, the class still there.
    page = app_client.get(f"/class/{code}/host")
    assert page.status_code == 200
    assert node(page.text, "#participant-count").get_text() == "1"
    assert "No question asked yet." in page.text


# ---- a question's life --------------------------------------------------------------------


def test_ask_answer_reveal(app_client: TestClient) -> None:
    code = start_class(app_client)
    first = questions()[0]
    ada, bo, cy = (student(app_client, code, name) for name in ("Ada", "Bo", "Cy"))
    unknown = app_client.post(f"/class/{code}/ask", data={"question": "no-such-section"})
    assert unknown.status_code == 422
    assert node(unknown.text, "#question-error").get_text(strip=True)

    assert app_client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    page = ada.get(f"/class/{code}")
    radios = soup(page.text).select("#class-question input[type=radio][name=choice]")
    assert [r["value"] for r in radios] == [str(n) for n, _ in first.choices]

    right, other = str(first.answer_number), str(wrong(first))
    for client, choice in ((ada, other), (bo, right), (cy, other)):
        sent = client.post(f"/class/{code}/answer", data={"question": first.id, "choice": choice})
        assert sent.status_code == 200
    # Ada changes her mind while answering is open: her last answer counts.
    ada.post(f"/class/{code}/answer", data={"question": first.id, "choice": right})
    bad = bo.post(f"/class/{code}/answer", data={"question": first.id, "choice": "99"})
    assert bad.status_code == 422

    host = app_client.get(f"/class/{code}/host").text
    assert node(host, "#participant-count").get_text() == "3"
    assert node(host, "#answer-count").get_text() == "3"
    counts = {li["data-choice"]: int(li["data-count"]) for li in soup(host).select("[data-choice]")}  # type: ignore[arg-type]
    expected = {str(n): 0 for n, _ in first.choices}
    expected[right] += 2
    expected[other] += 1
    assert counts == expected

    # Before the reveal a student sees no verdict.
    assert soup(cy.get(f"/class/{code}").text).select_one("#class-verdict") is None
    app_client.post(f"/class/{code}/pause")
    paused = cy.post(f"/class/{code}/answer", data={"question": first.id, "choice": right})
    assert paused.status_code == 409
    assert "paused" in paused.text
    app_client.post(f"/class/{code}/resume")
    app_client.post(f"/class/{code}/reveal")
    late = cy.post(f"/class/{code}/answer", data={"question": first.id, "choice": right})
    assert late.status_code == 409
    assert "revealed" in words(node(late.text, ".live-error"))
    for client, correct in ((ada, "true"), (bo, "true"), (cy, "false")):
        verdict = node(client.get(f"/class/{code}").text, "#class-verdict")
        assert verdict["data-correct"] == correct
        assert verdict.select_one(".reasoning") is not None

    # The next question: answering opens again, with nothing answered yet.
    second = questions()[1]
    app_client.post(f"/class/{code}/ask", data={"question": second.id})
    assert node(app_client.get(f"/class/{code}/host").text, "#answer-count").get_text() == "0"
    stale = ada.post(f"/class/{code}/answer", data={"question": first.id, "choice": right})
    assert stale.status_code == 409


def test_nicknames_are_escaped_everywhere_and_never_projected(app_client: TestClient) -> None:
    code = start_class(app_client)
    nasty = "<x-evil>Eve</x-evil>"
    pupil = student(app_client, code, nasty)
    app_client.post(f"/class/{code}/ask", data={"question": questions()[0].id})
    for html in (app_client.get(f"/class/{code}/host").text, pupil.get(f"/class/{code}").text):
        assert nasty not in html
        assert soup(html).find("x-evil") is None
        assert any(nasty == tag.get_text() for tag in soup(html).select(".live-nickname"))
    screen = app_client.get(f"/class/{code}/screen").text
    assert "Eve" not in screen
    assert "x-evil" not in screen


def test_a_removed_student_and_their_answers_are_gone(app_client: TestClient) -> None:
    code = start_class(app_client)
    first = questions()[0]
    rude = student(app_client, code, "Rude")
    student(app_client, code, "Kind")
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    rude.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
    host = app_client.get(f"/class/{code}/host").text
    row = next(r for r in soup(host).select("tbody tr") if "Rude" in r.get_text())
    remove = row.find_parent("form")
    assert remove is not None
    assert remove["action"] == f"/class/{code}/remove"
    who = row.select_one("button[aria-label='Remove Rude']")["value"]  # type: ignore[index]
    assert app_client.post(f"/class/{code}/remove", data={"participant": who}).status_code == 200
    host = app_client.get(f"/class/{code}/host").text
    assert "Rude" not in node(host, "#host-roster").get_text()
    assert words(node(host, "#removed-list")).startswith("Rude")  # kept out, until let back in
    assert node(host, "#answer-count").get_text() == "0"
    assert "Rude" not in app_client.get(f"/class/{code}/export.csv").text
    # Their page sends them back to the join form.
    back = rude.get(f"/class/{code}", follow_redirects=False)
    assert back.status_code == 303
    assert back.headers["location"] == f"/join/{code}"


def test_the_shared_lab_state_shows_the_lessons_numbers(app_client: TestClient) -> None:
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    bad = app_client.post(f"/class/{code}/lab", data={**state, "eta": "fast"})
    assert bad.status_code == 422
    assert node(bad.text, "#eta-error").get_text(strip=True)
    assert node(bad.text, "#lab-eta")["value"] == "fast"
    assert app_client.post(f"/class/{code}/lab", data=state).status_code == 200
    # The student's own lab is at the state sent, and says so.
    lab = node(pupil.get(f"/class/{code}").text, "#class-own-lab")
    assert "sent this state to everyone" in words(node(str(lab), "#class-lab-sent"))
    # Exact: g = (2·1 + 6·3)/8 = 5/2, the rank mean (1 + 3)/2 = 2; w_new = 10 - η·g.
    counts, means = [2, 6], [1, 3]
    g = sum(Fraction(n) * m for n, m in zip(counts, means, strict=True)) / sum(counts)
    eta, w = Fraction(1, 10), Fraction(10)
    figures = {tag["data-value"]: tag.get_text(strip=True) for tag in lab.select("[data-value]")}
    assert Fraction(figures["g"]) == g == Fraction(5, 2)
    assert Fraction(figures["rank-mean"]) == Fraction(2)
    assert Fraction(figures["w-new"]) == w - eta * g == Fraction(39, 4)  # 9.75
    assert Fraction(figures["w-new-rank-mean"]) == Fraction(49, 5)  # 9.8
    # Once she moves on, her lab is hers: no longer the state sent.
    moved = {**state, "counts": "3,6"}
    assert pupil.post(f"/class/{code}/share", data=moved, follow_redirects=False).status_code == 303
    assert soup(pupil.get(f"/class/{code}").text).select_one("#class-lab-sent") is None


def test_a_students_shared_state_goes_on_the_projector_without_their_name(
    app_client: TestClient,
) -> None:
    code = start_class(app_client)
    pupil = student(app_client, code, "Zelda")
    bad = pupil.post(f"/class/{code}/share", data={"counts": "1,3", "means": "2,x"})
    assert bad.status_code == 422
    # The student's lab shows the state as sent, its error at the field.
    assert node(bad.text, "#lab-mean-1")["aria-invalid"] == "true"
    assert node(bad.text, "#msg-lab-mean-1").get_text(strip=True)
    shared = pupil.post(
        f"/class/{code}/share", data={"counts": "1,3", "means": "2,2", "eta": "0.5", "w": "1"}
    )
    assert shared.status_code == 200
    host = app_client.get(f"/class/{code}/host").text
    project = node(host, "button[formaction]")
    assert project["formaction"] == f"/class/{code}/project"
    who = project["value"]
    assert app_client.post(f"/class/{code}/project", data={"participant": who}).status_code == 200
    screen = app_client.get(f"/class/{code}/screen").text
    # Both ranks' means are 2, so g = 2 and w_new = 1 - 0.5·2 = 0.
    figures = {dd["data-value"]: dd.get_text(strip=True) for dd in soup(screen).select("dd")}
    assert Fraction(figures["g"]) == 2
    assert Fraction(figures["w-new"]) == 0
    assert "Zelda" not in screen


def test_the_projector_shows_the_distribution_only_when_told(app_client: TestClient) -> None:
    code = start_class(app_client)
    first = questions()[0]
    pupil = student(app_client, code, "Ada")
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    pupil.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
    assert not soup(app_client.get(f"/class/{code}/screen").text).select("[data-choice]")
    app_client.post(f"/class/{code}/show", data={"shown": "1"})
    live = soup(app_client.get(f"/class/{code}/screen").text).select("[data-choice]")
    assert next(int(li["data-count"]) for li in live) == 1  # type: ignore[arg-type]
    assert not soup(app_client.get(f"/class/{code}/screen").text).select(".live-bar-correct")
    app_client.post(f"/class/{code}/reveal")
    assert soup(app_client.get(f"/class/{code}/screen").text).select(".live-bar-correct")


def test_an_ended_class_takes_no_joins_or_answers_and_delete_removes_it(
    app_client: TestClient,
) -> None:
    code = start_class(app_client)
    first = questions()[0]
    pupil = student(app_client, code, "Ada")
    app_client.post(f"/class/{code}/ask", data={"question": first.id})
    app_client.post(f"/class/{code}/end")
    late = other_browser(app_client).post("/join", data={"code": code, "nickname": "Late"})
    assert late.status_code == 409
    answer = pupil.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
    assert answer.status_code == 409
    assert app_client.get(f"/class/{code}/export.csv").status_code == 200
    gone = app_client.post(f"/class/{code}/delete", follow_redirects=False)
    assert gone.status_code == 303
    assert app_client.get(f"/class/{code}/host").status_code == 404
    assert pupil.get(f"/class/{code}").status_code == 404


# ---- export -------------------------------------------------------------------------------


def test_export_has_one_row_per_student_per_answered_question(app_client: TestClient) -> None:
    code = start_class(app_client)
    first, second = questions()[:2]
    names = ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", 'Plain, "quoted"']
    pupils = [student(app_client, code, name) for name in names]
    before = datetime.now(UTC).replace(microsecond=0)
    for question in (first, second):
        app_client.post(f"/class/{code}/ask", data={"question": question.id})
        for pupil in pupils[:3]:
            pupil.post(
                f"/class/{code}/answer",
                data={"question": question.id, "choice": str(question.answer_number)},
            )
    pupils[3].post(
        f"/class/{code}/answer", data={"question": second.id, "choice": str(wrong(second))}
    )
    exported = app_client.get(f"/class/{code}/export.csv")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/csv")
    assert exported.content.startswith(codecs.BOM_UTF8)
    rows = list(csv.reader(io.StringIO(exported.content.decode("utf-8-sig"))))
    assert rows[0] == EXPORT_HEADER
    body = rows[1:]
    assert len(body) == 3 * 2 + 1
    for nickname, question_id, choice, correct, answered_at, vote, sure in body:
        assert (vote, sure) == ("1", "")  # one vote each, no confidence said
        assert nickname[0] not in "=+-@", nickname
        assert nickname.lstrip("'") in names
        question = next(q for q in questions() if q.id == question_id)
        assert correct == ("true" if int(choice) == question.answer_number else "false")
        moment = datetime.strptime(answered_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert before - timedelta(seconds=1) <= moment <= datetime.now(UTC) + timedelta(seconds=1)
    assert {row[0] for row in body} == {neutral(n) for n in names[:4]}
    assert ["'@SUM(A1)", second.id, str(wrong(second)), "false"] == body[-1][:4]
    # A download named after the class, kept in no cache; every text cell quoted and numbers
    # bare, each line ended by CR LF (RFC 4180), so a spreadsheet splitting on ";" keeps a cell
    # whole.
    assert exported.headers["content-disposition"] == f'attachment; filename="class-{code}.csv"'
    assert exported.headers["cache-control"] == "no-store"
    lines = exported.content.decode("utf-8-sig").split("\r\n")
    assert lines[0] == ",".join(f'"{column}"' for column in EXPORT_HEADER)
    answered_at = body[-1][4]
    assert lines[-2:] == [
        f'"\'@SUM(A1)","{second.id}",{wrong(second)},"false","{answered_at}",1,""',
        "",
    ]


def test_neutral_cells() -> None:
    for cell in ("=1+1", "+1", "-1", "@A1", "\t=1", "\r=1"):
        assert neutral(cell) == "'" + cell
    for cell in ("Ada", "1-2", "a=b", ""):
        assert neutral(cell) == cell


# ---- on disk ------------------------------------------------------------------------------


def test_a_restart_keeps_every_class_student_and_answer(data_dir: Path) -> None:
    first = questions()[0]
    with TestClient(create_app(settings_for(data_dir))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        host.post(f"/class/{code}/ask", data={"question": first.id})
        pupil.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
        host_cookies, pupil_cookies = dict(host.cookies), dict(pupil.cookies)
    with TestClient(create_app(settings_for(data_dir))) as again:
        again.cookies.update(host_cookies)
        page = again.get(f"/class/{code}/host")
        assert page.status_code == 200
        assert node(page.text, "#participant-count").get_text() == "1"
        assert node(page.text, "#answer-count").get_text() == "1"
        back = other_browser(again)
        back.cookies.update(pupil_cookies)
        mine = back.get(f"/class/{code}")
        assert mine.status_code == 200
        assert soup(mine.text).select_one("input[name=choice][value='1']").has_attr("checked")  # type: ignore[union-attr]


def _age(data_dir: Path, code: str, days: float, *others: str) -> None:
    """Class ``code`` (and ``others``, in the same transaction) started ``days`` ago."""
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        old = (datetime.now(UTC) - timedelta(days=days)).replace(tzinfo=None)
        for one in (code, *others):
            db.execute(
                "UPDATE live_classes SET created_at = ? WHERE code = ?", (old.isoformat(" "), one)
            )


def test_classes_past_retention_are_deleted_on_start(data_dir: Path) -> None:
    with TestClient(create_app(settings_for(data_dir, class_retention_days=2))) as host:
        old, young = start_class(host), start_class(host)
        student(host, old, "Ada")
        student(host, young, "Bea")  # joined: it is kept until its retention, not a day
        cookies = dict(host.cookies)
    _age(data_dir, old, 3)
    _age(data_dir, young, 1)
    with TestClient(create_app(settings_for(data_dir, class_retention_days=2))) as again:
        again.cookies.update(cookies)
        assert again.get(f"/class/{old}/host").status_code == 404
        assert again.get(f"/class/{young}/host").status_code == 200
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        kept = db.execute("SELECT nickname FROM live_participants").fetchall()
        assert kept == [("Bea",)]


def purged(data_dir: Path) -> str:
    """What ``python -m app purge`` says, run beside the server on ``data_dir``."""
    done = subprocess.run(
        [sys.executable, "-m", "app", "purge"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "ATLAS_DATA_DIR": str(data_dir), "ATLAS_SECRET_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_python_m_app_purge_deletes_old_classes_on_demand(data_dir: Path) -> None:
    with TestClient(create_app(settings_for(data_dir))) as host:
        code = start_class(host)
    _age(data_dir, code, 31)
    assert "deleted 1 class" in purged(data_dir)
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        assert db.execute("SELECT count(*) FROM live_classes").fetchone() == (0,)


def test_the_class_limit_counts_joined_and_recent_classes(data_dir: Path) -> None:
    settings = settings_for(data_dir, class_limit=2)
    with TestClient(create_app(settings)) as host:
        joined, unjoined = start_class(host), start_class(host)
        student(host, joined, "Ada")
        refused = host.post("/class/new", follow_redirects=False)
        assert refused.status_code == 429
        assert "ATLAS_CLASS_LIMIT" in node(refused.text, ".live-error").text
        # A class no one joined stops holding a place a day after it started; a joined one
        # holds it for the retention.
        _age(data_dir, joined, 2)
        _age(data_dir, unjoined, 2)
        third = start_class(host)
        assert host.post("/class/new", follow_redirects=False).status_code == 429
    assert "deleted 1 class" in purged(data_dir)
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        kept = {code for (code,) in db.execute("SELECT code FROM live_classes")}
    assert kept == {joined, third}


def test_starting_a_class_takes_the_instructor_password(data_dir: Path) -> None:
    with TestClient(create_app(settings_for(data_dir, instructor_password="s3cret"))) as host:
        assert soup(host.get("/class/new").text).select_one("input#password") is not None
        # Each refusal says where the password is found: the server's log, or the setting.
        where = "the one the server printed at start (its log), or ATLAS_INSTRUCTOR_PASSWORD"
        for typed, told in [
            ("", f"The field “password” is empty: type {where} if set."),
            ("guess", f"The “password” typed is not the instructor password: {where} if set."),
            ("s3cret ", f"The “password” typed is not the instructor password: {where} if set."),
        ]:
            wrong_one = host.post("/class/new", data={"password": typed}, follow_redirects=False)
            assert wrong_one.status_code == 422, typed
            assert told in node(wrong_one.text, "#password-error").get_text(" ", strip=True)
            assert node(wrong_one.text, "input#password")["aria-invalid"] == "true"
        right = host.post("/class/new", data={"password": "s3cret"}, follow_redirects=False)
        assert right.status_code == 303
        assert "atlas-instructor" in host.cookies
        # The device is remembered: not asked again.
        assert soup(host.get("/class/new").text).select_one("input#password") is None
        assert host.post("/class/new", follow_redirects=False).status_code == 303
        # Another device is asked; a forged or other server's cookie is not the instructor's.
        other = other_browser(host)
        assert soup(other.get("/class/new").text).select_one("input#password") is not None
        other.cookies.set("atlas-instructor", host.cookies["atlas-instructor"] + "x")
        assert other.post("/class/new", follow_redirects=False).status_code == 422
    # A new password forgets every remembered device.
    with TestClient(create_app(settings_for(data_dir, instructor_password="new"))) as again:
        again.cookies.set("atlas-instructor", host.cookies["atlas-instructor"], path="/class")
        assert again.post("/class/new", follow_redirects=False).status_code == 422


def test_wrong_passwords_from_one_address_are_limited(data_dir: Path) -> None:
    with TestClient(create_app(settings_for(data_dir))) as host:
        for _ in range(FREE_GUESSES):
            assert host.post("/class/new", data={"password": "guess"}).status_code == 422
        # Past the free guesses even the right password waits: guessing it is not faster.
        limited = host.post("/class/new", data={"password": INSTRUCTOR_PASSWORD})
        assert limited.status_code == 429
        assert node(limited.text, "#password-error").get_text(" ", strip=True) == (
            "Too many wrong passwords from this address: try again in 10 minutes."
        )
        assert 540 < int(limited.headers["Retry-After"]) <= 600  # when, for a script too
        # Another address is not held up by this one's guesses: it starts a class.
        elsewhere = other_browser(host, "192.0.2.9")
        started = elsewhere.post(
            "/class/new", data={"password": INSTRUCTOR_PASSWORD}, follow_redirects=False
        )
        assert started.status_code == 303


def test_without_a_password_set_one_is_made_once_and_kept(data_dir: Path) -> None:
    settings = settings_for(data_dir, instructor_password="")
    made = create_app(settings).state.settings.instructor_password
    kept = data_dir / PASSWORD_FILE
    assert kept.read_text() == made
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert re.fullmatch(r"[2-9A-Z]{4}-[2-9A-Z]{4}-[2-9A-Z]{4}", made)
    with TestClient(create_app(settings)) as host:
        assert host.app.state.settings.instructor_password == made  # type: ignore[attr-defined]
        assert host.post("/class/new", data={"password": made}).status_code == 200


def test_postgresql_needs_the_password_set() -> None:
    settings = Settings(
        database_url="postgresql://u@localhost/x", secret_key=KEY, instructor_password=""
    )
    with pytest.raises(SharedKeyError, match="ATLAS_INSTRUCTOR_PASSWORD"):
        create_app(settings)


def test_a_students_requests_carry_their_key(app_client: TestClient) -> None:
    """ParticipantKey gives each student's requests (the lesson's too) a key of their own."""
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    seen: list[object] = []

    async def inner(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope.get("state", {}).get("participant"))

    middleware = ParticipantKey(inner, KEY)
    signed = pupil.cookies[student_cookie(code)]
    # A validly signed cookie of another purpose (the host's) is no student's key either.
    host_signed = app_client.cookies[f"atlas-host-{code}"]
    for header in (
        f"{student_cookie(code)}={signed}",
        f"{student_cookie(code)}={signed[:-2]}xx",
        f"{student_cookie(code)}={host_signed}",
        "other=1",
    ):
        scope = {"type": "http", "headers": [(b"cookie", header.encode())]}
        # On the app's own loop, as a request runs (never a second loop beside it).
        app_client.portal.call(middleware, scope, None, None)
    key, forged, host, none = seen

    async def token_of_ada() -> str:
        async with app_client.app.state.live_store.session() as session:  # type: ignore[attr-defined]
            return str(
                (await session.execute(text("SELECT token FROM live_participants"))).scalar_one()
            )

    token = app_client.portal.call(token_of_ada)
    assert key == stable_key(token)  # Ada's own key: derived from her token, not equal to it
    assert token not in str(key)
    assert forged is None
    assert host is None
    assert none is None


def test_a_feed_reads_the_class_while_every_request_connection_is_taken(
    app_client: TestClient,
) -> None:
    # 500 answers at once hold every connection of the requests' pool; the read that every
    # stream of the class waits on (its feed's snapshot) must not queue behind them.
    code = start_class(app_client)
    state = app_client.app.state  # type: ignore[attr-defined]
    db = state.live_store

    async def run() -> None:
        async with db.session() as session:
            live = await state.live.find(session, code)
        pool = db.engine.pool
        async with contextlib.AsyncExitStack() as held:
            for _ in range(5 + 10):  # the requests' pool: 5 kept, 10 more at a peak
                session = await held.enter_async_context(db.session(write=False))
                await session.execute(text("SELECT 1"))
            # Every connection of the requests' pool is out: a request's read would wait.
            assert pool.checkedin() == 0
            assert pool.overflow() == 10

            async def read() -> object:
                async with state.live_feeds.follow(live.id) as feed:
                    return feed.snapshot

            snapshot = await asyncio.wait_for(read(), 5)
            assert snapshot is not None
            assert snapshot.code == code

    app_client.portal.call(run)
