"""Peer instruction through the real app on a real database: a question asked for two votes,
the discussion timer, the re-vote, confidence, the shift, the export's columns and the report
after the class, each number derived here from the answers posted (exact fractions); and every
step out of turn or bad field refused with its reason."""

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.live.database import engine_url
from app.live.migrate import alembic_config, replay
from app.live.service import TIMER_S
from app.live.store import SQLITE_FILE
from app.main import create_app
from app.settings import Settings
from tests import test_live, test_live_refusals
from tests.test_live import (
    EXPORT_HEADER,
    node,
    other_browser,
    questions,
    settings_for,
    soup,
    start_class,
    student,
    words,
)
from tests.test_live_refusals import HTMX, exported, rows

data_dir = test_live.data_dir
backend = test_live.backend
app_client = test_live.app_client
sqlite_client = test_live_refusals.sqlite_client  # SQLite alone, where storage is not tested


@dataclass(frozen=True)
class Sent:
    """One answer the test posted: who, which vote, which option, how sure ("" unsaid)."""

    nickname: str
    round: int
    choice: int
    confidence: str = ""


def answer(client: TestClient, code: str, question_id: str, sent: Sent) -> int:
    form = {"question": question_id, "choice": str(sent.choice), "round": str(sent.round)}
    if sent.confidence:
        form["confidence"] = sent.confidence
    return client.post(f"/class/{code}/answer", data=form).status_code


def counts(html: str, selector: str, attribute: str) -> dict[int, int]:
    return {
        int(str(li["data-choice"])): int(str(li[attribute])) for li in soup(html).select(selector)
    }


# Question 1 has three options, option 2 right. Vote 1, then vote 2, as five students answer.
FIRST = questions()[0]
RIGHT = FIRST.answer_number
VOTE_1 = [
    Sent("Ada", 1, 1, "sure"),
    Sent("Bo", 1, RIGHT, "unsure"),
    Sent("Cy", 1, 3, "unsure"),
    Sent("Di", 1, RIGHT, "sure"),
    # Ed does not answer vote 1.
]
VOTE_2 = [
    Sent("Ada", 2, RIGHT, "sure"),
    Sent("Bo", 2, RIGHT, "sure"),
    Sent("Cy", 2, 1),
    Sent("Di", 2, 3, "sure"),
    Sent("Ed", 2, RIGHT, "unsure"),
]
NAMES = ["Ada", "Bo", "Cy", "Di", "Ed"]


def share(sent: list[Sent]) -> Fraction:
    return Fraction(sum(1 for s in sent if s.choice == RIGHT), len(sent))


def test_two_votes_with_a_timer_confidence_and_a_shift(app_client: TestClient) -> None:
    code = start_class(app_client)
    pupils = {name: student(app_client, code, name) for name in NAMES}
    app_client.post(f"/class/{code}/show", data={"shown": "1"})  # live results on the projector
    asked = app_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    assert asked.status_code == 200
    assert words(node(asked.text, ".live-state")) == "Question 1, vote 1 of 2: Answering is open."
    for sent in VOTE_1:
        assert answer(pupils[sent.nickname], code, FIRST.id, sent) == 200

    # Vote 1: the instructor sees the distribution with its confidence split; the projector
    # (even with live results on) and the students see only how many answered.
    host = app_client.get(f"/class/{code}/host").text
    assert counts(host, "[data-choice]", "data-count") == {
        n: sum(1 for s in VOTE_1 if s.choice == n) for n in (1, 2, 3)
    }
    for level in ("sure", "unsure"):
        assert counts(host, "[data-choice]", f"data-{level}") == {
            n: sum(1 for s in VOTE_1 if s.choice == n and s.confidence == level) for n in (1, 2, 3)
        }
    screen = app_client.get(f"/class/{code}/screen").text
    assert not soup(screen).select("[data-count]")
    assert "4 of 5 students answered." in words(node(screen, "#screen-live"))
    for pupil in pupils.values():
        assert not soup(pupil.get(f"/class/{code}").text).select("[data-count]")

    # The discussion timer: the server keeps its end; the projector and students show it.
    before = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    assert app_client.post(f"/class/{code}/timer", data={"seconds": "90"}).status_code == 200
    after = datetime.now(UTC).replace(tzinfo=None)
    for html in (
        app_client.get(f"/class/{code}/screen").text,
        pupils["Ada"].get(f"/class/{code}").text,
    ):
        ends = datetime.strptime(str(node(html, "#timer")["data-ends"]), "%Y-%m-%dT%H:%M:%SZ")
        assert before + timedelta(seconds=90) <= ends <= after + timedelta(seconds=90)
        assert node(html, "#timer time")["datetime"] == node(html, "#timer")["data-ends"]

    # Vote 2 opens: the timer ends, each student sees their first answer and answers again.
    assert app_client.post(f"/class/{code}/revote").status_code == 200
    ada_page = pupils["Ada"].get(f"/class/{code}").text
    assert soup(ada_page).select_one("#timer") is None
    assert node(ada_page, "[data-first]")["data-first"] == "1"
    assert node(ada_page, "input[name=round]")["value"] == "2"
    assert soup(pupils["Ed"].get(f"/class/{code}").text).select_one("[data-first]") is None
    # A page still showing vote 1 is refused, and told why.
    stale = pupils["Ada"].post(
        f"/class/{code}/answer", data={"question": FIRST.id, "choice": "2", "round": "1"}
    )
    assert stale.status_code == 409
    assert "Vote 1 has closed" in words(node(stale.text, ".live-error"))
    assert not soup(app_client.get(f"/class/{code}/screen").text).select(".live-shift")
    for sent in VOTE_2:
        assert answer(pupils[sent.nickname], code, FIRST.id, sent) == 200
    # Vote 2's bars on the dashboard count vote 2 alone; the shift is there already.
    host = app_client.get(f"/class/{code}/host").text
    assert counts(host, "[data-choice]", "data-count") == {
        n: sum(1 for s in VOTE_2 if s.choice == n) for n in (1, 2, 3)
    }

    assert app_client.post(f"/class/{code}/reveal").status_code == 200
    for html in (
        app_client.get(f"/class/{code}/host").text,
        app_client.get(f"/class/{code}/screen").text,
    ):
        chart = node(html, "#shift")
        per_option = {
            int(str(row["data-option"])): (int(str(row["data-vote1"])), int(str(row["data-vote2"])))
            for row in chart.select("[data-option]")
        }
        assert per_option == {
            n: (
                sum(1 for s in VOTE_1 if s.choice == n),
                sum(1 for s in VOTE_2 if s.choice == n),
            )
            for n in (1, 2, 3)
        }
        before_share = Fraction(
            int(str(chart["data-before-correct"])), int(str(chart["data-before-answered"]))
        )
        after_share = Fraction(
            int(str(chart["data-after-correct"])), int(str(chart["data-after-answered"]))
        )
        assert before_share == share(VOTE_1) == Fraction(2, 4)
        assert after_share == share(VOTE_2) == Fraction(3, 5)
        summary = words(node(html, ".live-shift-summary"))
        assert "2 of 4 right (50 %) in vote 1, 3 of 5 right (60 %) in vote 2" in summary
        # Of the four who answered both votes (Ed missed vote 1), Ada moved to the answer and
        # Di away from it.
        assert (chart["data-both"], chart["data-to-right"], chart["data-to-wrong"]) == (
            "4",
            "1",
            "1",
        )
        assert "Of 4 students who answered both votes, 1 moved to the answer and 1 away" in summary
    assert "Ed" not in app_client.get(f"/class/{code}/screen").text

    # The export: one row per student per vote, with its round and confidence.
    table = exported(app_client, code)
    assert table[0] == EXPORT_HEADER
    got = sorted((r[0], r[5], r[2], r[6], r[3]) for r in table[1:])
    assert got == sorted(
        (
            s.nickname,
            str(s.round),
            str(s.choice),
            s.confidence,
            "true" if s.choice == RIGHT else "false",
        )
        for s in VOTE_1 + VOTE_2
    )


def test_the_report_counts_each_vote_and_each_students_answers(app_client: TestClient) -> None:
    code = start_class(app_client)
    pupils = {name: student(app_client, code, name) for name in NAMES}
    app_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    for sent in VOTE_1:
        answer(pupils[sent.nickname], code, FIRST.id, sent)
    app_client.post(f"/class/{code}/revote")
    for sent in VOTE_2:
        answer(pupils[sent.nickname], code, FIRST.id, sent)
    # Question 3 for one vote: three answer it.
    third = questions()[2]
    app_client.post(f"/class/{code}/ask", data={"question": third.id})
    single = [Sent("Ada", 1, third.answer_number), Sent("Bo", 1, 1), Sent("Cy", 1, 3, "sure")]
    for sent in single:
        answer(pupils[sent.nickname], code, third.id, sent)
    app_client.post(f"/class/{code}/end")  # the report is there after the class too

    assert pupils["Ada"].get(f"/class/{code}/report").status_code == 403
    assert other_browser(app_client).get(f"/class/{code}/report").status_code == 403
    page = app_client.get(f"/class/{code}/report")
    assert page.status_code == 200
    html = page.text
    assert words(node(html, "#report-summary")) == (
        "The class has ended. 5 students joined; 2 questions answered."
    )
    # Which class, of which lesson (the class's lesson: the course's first).
    title = render_lesson(load_lesson(Settings().lesson_path)).header.title.striptags()
    assert words(node(html, "h1")) == f"Report of class {code}"
    assert words(node(html, "p.kicker")) == f"Live class · {title}"
    # Question 2 was never asked: not in the report.
    assert [str(s["data-question"]) for s in soup(html).select("section[data-question]")] == [
        FIRST.id,
        third.id,
    ]

    def per_vote(question_id: str, answers: dict[int, list[Sent]], right: int) -> None:
        section = node(html, f"section[data-question='{question_id}']")
        for row in section.select("tr[data-option]"):
            option = int(str(row["data-option"]))
            for vote, sent in answers.items():
                assert int(str(row[f"data-vote{vote}"])) == sum(
                    1 for s in sent if s.choice == option
                )
        shares = {int(str(li["data-round"])): li for li in section.select("li[data-round]")}
        assert sorted(shares) == sorted(answers)
        for vote, sent in answers.items():
            li = shares[vote]
            exact = Fraction(sum(1 for s in sent if s.choice == right), len(sent))
            assert Fraction(int(str(li["data-correct"])), int(str(li["data-answered"]))) == exact
            assert f"({round(100 * exact)} %)" in words(li)
            sure = [s for s in sent if s.confidence == "sure"]
            assert int(str(li["data-sure"])) == len(sure)
            assert int(str(li["data-sure-correct"])) == sum(1 for s in sure if s.choice == right)
            assert int(str(li["data-unsure"])) == sum(1 for s in sent if s.confidence == "unsure")

    per_vote(FIRST.id, {1: VOTE_1, 2: VOTE_2}, RIGHT)
    per_vote(third.id, {1: single}, third.answer_number)
    shift = node(html, f"section[data-question='{FIRST.id}'] .live-report-shift")
    assert (shift["data-to-right"], shift["data-to-wrong"]) == ("1", "1")
    assert soup(html).select_one(f"section[data-question='{third.id}'] .live-report-shift") is None

    # Each student's answers, vote 1 → vote 2; "right" counts vote 1 alone (re-votes unscored).
    table = {
        words(tr.select_one("th")): tr for tr in soup(html).select("#report-students tbody tr")
    }
    assert list(table) == NAMES
    for name, tr in table.items():
        cell = tr.select_one(f"td[data-question='{FIRST.id}']")
        assert cell is not None
        given = [g.get("data-choice") for g in cell.select(".live-given")]
        first = next((str(s.choice) for s in VOTE_1 if s.nickname == name), None)
        second = next((str(s.choice) for s in VOTE_2 if s.nickname == name), None)
        assert given == [first, second]
        scored = [s for s in VOTE_1 + single if s.nickname == name]
        rights = [s for s in scored if s.choice == (RIGHT if s in VOTE_1 else third.answer_number)]
        right = tr.select_one("td[data-correct]")
        assert right is not None
        assert (int(str(right["data-correct"])), int(str(right["data-answered"]))) == (
            len(rights),
            len(scored),
        )
    # No leaderboard and no speed: the students in the order they joined (not by score), and
    # no column but their answers and vote 1's share right.
    headers = [words(th) for th in soup(html).select("#report-students thead th")]
    assert headers == ["Nickname", f"Q{FIRST.number}", f"Q{third.number}", "Right (vote 1)"]


# ---- refusals -----------------------------------------------------------------------------


def test_steps_out_of_turn_are_refused_with_their_reason(sqlite_client: TestClient) -> None:
    client = sqlite_client
    code = start_class(client)
    ada = student(client, code, "Ada")

    def refused(path: str, reason: str, **form: str) -> None:
        for headers in ({}, HTMX):
            got = client.post(f"/class/{code}/{path}", data=form, headers=headers)
            assert got.status_code == 409, (path, form)
            assert reason in words(node(got.text, ".live-error")), (path, got.text[-500:])

    refused("revote", "No question has been asked yet.")
    refused("timer", "No question has been asked yet", seconds="60")
    client.post(f"/class/{code}/ask", data={"question": FIRST.id})  # one vote
    refused("revote", "asked for one vote")
    # A page that claims vote 2 while vote 1 is open is refused too.
    vote_2 = ada.post(
        f"/class/{code}/answer", data={"question": FIRST.id, "choice": "1", "round": "2"}
    )
    assert vote_2.status_code == 409
    assert "Vote 2 of this question is not open" in words(node(vote_2.text, ".live-error"))

    client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    assert client.post(f"/class/{code}/revote").status_code == 200
    refused("revote", "Vote 2 is open already.")
    client.post(f"/class/{code}/reveal")
    refused("revote", "The answer has been revealed")
    refused("timer", "The answer has been revealed", seconds="60")
    # A revealed question stays closed: neither pause nor resume reopens it.
    refused("resume", "The answer has been revealed")
    refused("pause", "The answer has been revealed")
    late = ada.post(
        f"/class/{code}/answer", data={"question": FIRST.id, "choice": "1", "round": "2"}
    )
    assert late.status_code == 409
    assert "revealed" in words(node(late.text, ".live-error"))
    assert rows(client, "SELECT count(*) FROM live_answers") == [(0,)]
    assert rows(
        client, "SELECT phase, round, rounds FROM live_classes WHERE code = :code", code=code
    ) == [("revealed", 2, 2)]
    client.post(f"/class/{code}/end")
    client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    refused("revote", "The class has ended.")
    refused("timer", "The class has ended.", seconds="60")


@pytest.mark.parametrize(
    ("path", "field", "form"),
    [
        ("ask", "rounds", {"question": FIRST.id, "rounds": "3"}),
        ("ask", "rounds", {"question": FIRST.id, "rounds": "two"}),
        ("timer", "seconds", {"seconds": ""}),
        ("timer", "seconds", {"seconds": "abc"}),
        ("timer", "seconds", {"seconds": str(TIMER_S[0] - 1)}),
        ("timer", "seconds", {"seconds": str(TIMER_S[1] + 1)}),
        ("timer", "seconds", {"seconds": "-30"}),
        ("timer", "seconds", {"seconds": "1e3"}),
    ],
)
def test_bad_host_fields_are_422_naming_the_field(
    sqlite_client: TestClient, path: str, field: str, form: dict[str, str]
) -> None:
    code = start_class(sqlite_client)
    sqlite_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    got = sqlite_client.post(f"/class/{code}/{path}", data=form)
    assert got.status_code == 422
    assert f"“{field}”" in words(node(got.text, f"#{field}-error"))
    assert node(got.text, f"#{field}")["aria-invalid"] == "true"
    htmx = sqlite_client.post(f"/class/{code}/{path}", data=form, headers=HTMX)
    assert htmx.status_code == 422
    assert f"“{field}”" in words(node(htmx.text, ".live-error"))
    # Nothing changed: still vote 1 of two, no timer.
    assert rows(
        sqlite_client,
        "SELECT rounds, round, timer_ends_at FROM live_classes WHERE code = :code",
        code=code,
    ) == [(2, 1, None)]


@pytest.mark.parametrize(
    ("field", "form"),
    [
        ("confidence", {"confidence": "very"}),
        ("confidence", {"confidence": "SURE"}),
        ("round", {"round": "3"}),
        ("round", {"round": "x"}),
    ],
)
def test_bad_answer_fields_are_422_naming_the_field(
    sqlite_client: TestClient, field: str, form: dict[str, str]
) -> None:
    code = start_class(sqlite_client)
    ada = student(sqlite_client, code, "Ada")
    sqlite_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    got = ada.post(f"/class/{code}/answer", data={"question": FIRST.id, "choice": "1", **form})
    assert got.status_code == 422
    assert f"“{field}”" in words(node(got.text, ".live-error"))
    assert rows(sqlite_client, "SELECT count(*) FROM live_answers") == [(0,)]


def test_peer_actions_are_the_hosts_alone(sqlite_client: TestClient) -> None:
    code = start_class(sqlite_client)
    ada = student(sqlite_client, code, "Ada")
    sqlite_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    for client in (ada, other_browser(sqlite_client)):
        assert client.get(f"/class/{code}/report").status_code == 403
        assert client.post(f"/class/{code}/revote").status_code == 403
        assert client.post(f"/class/{code}/timer", data={"seconds": "60"}).status_code == 403
    assert rows(
        sqlite_client, "SELECT round, timer_ends_at FROM live_classes WHERE code = :code", code=code
    ) == [(1, None)]


def test_a_question_asked_again_starts_its_re_vote_empty(sqlite_client: TestClient) -> None:
    code = start_class(sqlite_client)
    ada = student(sqlite_client, code, "Ada")
    for choice in (1, 3):
        sqlite_client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
        sqlite_client.post(f"/class/{code}/revote")
        host = sqlite_client.get(f"/class/{code}/host").text
        assert counts(host, "[data-choice]", "data-count") == {1: 0, 2: 0, 3: 0}
        assert answer(ada, code, FIRST.id, Sent("Ada", 2, choice)) == 200
        sqlite_client.post(f"/class/{code}/reveal")
    assert rows(sqlite_client, "SELECT round, choice FROM live_answers") == [(2, 3)]


def _at_0001_with_an_answer(connection: Connection) -> None:
    replay(connection, "0001")
    connection.execute(
        text(
            "INSERT INTO live_classes (code, lesson, host_token, created_at, phase,"
            " show_live, lab_query, screen_query, version, question)"
            " VALUES ('ABCDEF', 'x', 't', CURRENT_TIMESTAMP, 'open', false, '', '', 1, :q)"
        ),
        {"q": FIRST.id},
    )
    connection.execute(
        text(
            "INSERT INTO live_participants (class_id, nickname, nickname_key, token,"
            " joined_at, shared_query) VALUES (1, 'Ada', 'ada', 'tok', CURRENT_TIMESTAMP, '')"
        )
    )
    connection.execute(
        text(
            "INSERT INTO live_answers (class_id, participant_id, question, choice, correct,"
            " answered_at) VALUES (1, 1, :q, 2, true, CURRENT_TIMESTAMP)"
        ),
        {"q": FIRST.id},
    )


async def _make_old_database(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_at_0001_with_an_answer)
    finally:
        await engine.dispose()


def test_a_database_from_before_keeps_its_answers_as_vote_1(
    data_dir: Path, backend: dict[str, str]
) -> None:
    # A server upgraded in the middle of a term, on either database: its classes' students and
    # answers stay (the answers become vote-1 answers), through every revision since the first.
    data_dir.mkdir(parents=True)
    url = engine_url(backend.get("database_url", ""), data_dir / SQLITE_FILE)
    asyncio.run(_make_old_database(url))
    with TestClient(create_app(settings_for(data_dir, **backend))) as client:
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert rows(client, "SELECT version_num FROM alembic_version") == [(head,)]
        assert rows(client, "SELECT nickname FROM live_participants") == [("Ada",)]
        assert rows(client, "SELECT round, confidence, choice FROM live_answers") == [(1, None, 2)]
        assert rows(client, "SELECT rounds, round, timer_ends_at FROM live_classes") == [
            (1, 1, None)
        ]
