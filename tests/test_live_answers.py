"""A hall's answers stored together (app/live/answers.py): answers that arrive while this
worker's writer of answers is busy are stored in its next transaction, all of them; each is
judged against the class as that transaction read it, and acknowledged only once committed.
Real SQLite and a real private PostgreSQL, the real app through TestClient."""

import asyncio
import csv
import io
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, event, select, text
from sqlalchemy.exc import IntegrityError

from app.live import store
from app.live.answers import Answers
from app.live.service import (
    Answered,
    ConflictError,
    GivenAnswer,
    InvalidError,
    LiveService,
    NotFoundError,
)
from app.live.store import SQLITE_FILE, Participant, Store
from app.main import create_app
from tests.test_live import (
    app_client,  # noqa: F401  (the fixture, on each backend)
    backend,  # noqa: F401
    data_dir,  # noqa: F401
    other_browser,
    questions,
    settings_for,
    start_class,
    student,
    wrong,
)


def tokens(client: TestClient) -> dict[str, str]:
    """Every student's token by nickname, as the database holds them."""
    db: Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def read() -> dict[str, str]:
        async with db.session(write=False) as session:
            rows = await session.execute(select(Participant.nickname, Participant.token))
            return dict(rows.all())

    return client.portal.call(read)  # type: ignore[union-attr]


def exported(client: TestClient, code: str) -> list[tuple[str, str, str]]:
    """(nickname, question, choice) of every answer the class's export holds."""
    rows = list(csv.reader(io.StringIO(client.get(f"/class/{code}/export.csv").text)))[1:]
    return sorted((nickname, question, choice) for nickname, question, choice, *_ in rows)


def test_each_answer_of_one_transaction_is_judged_against_the_class_it_read(
    app_client: TestClient,  # noqa: F811
) -> None:
    first, second = questions()[:2]
    code = start_class(app_client)
    other_code = start_class(other_browser(app_client))
    for nickname in ("Ada", "Bo", "Cy", "Dee"):
        student(app_client, code, nickname)
    student(app_client, other_code, "Eve")
    assert app_client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    token = tokens(app_client)
    right, bad = str(first.answer_number), str(wrong(first))
    given = [
        GivenAnswer(code, token["Ada"], [first.id], [bad]),
        GivenAnswer(code, token["Bo"], [first.id], [right], page=True),
        GivenAnswer(code, token["Ada"], [first.id], [right], page=True),  # the later counts
        GivenAnswer(code, token["Cy"], [second.id], ["1"]),  # not the question asked
        GivenAnswer(code, token["Eve"], [first.id], [right]),  # a student of another class
        GivenAnswer("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY", token["Ada"], [first.id], [right]),
        GivenAnswer(code, token["Dee"], [first.id], ["99"]),  # no such choice
    ]
    db: Store = app_client.app.state.live_store  # type: ignore[attr-defined]
    service: LiveService = app_client.app.state.live  # type: ignore[attr-defined]

    async def answer() -> Sequence[Answered | NotFoundError]:
        async with db.session() as session:
            return await service.answer_all(session, given)

    ada_wrong, bo, ada, cy, eve, nowhere, dee = app_client.portal.call(answer)  # type: ignore[union-attr]
    for taken in (ada_wrong, bo, ada):
        assert isinstance(taken, Answered)
        assert taken.error is None
        assert taken.live.code == code
    assert isinstance(ada_wrong, Answered)
    assert ada_wrong.student is None  # its reply: a 303, though her other one shows her page
    assert isinstance(ada, Answered)
    assert ada.student is not None
    assert ada.student.vote(first.id) == (first.answer_number, True, "")
    # The reply that shows the page has the student as the transaction left them.
    assert isinstance(bo, Answered)
    assert bo.student is not None
    assert bo.student.nickname == "Bo"
    vote = bo.student.vote(first.id)
    assert vote is not None
    assert (vote.choice, vote.correct) == (first.answer_number, True)
    assert isinstance(cy, Answered)
    assert isinstance(cy.error, ConflictError)
    assert cy.error.field == "question"
    assert cy.student is not None
    assert cy.student.votes == {}
    assert isinstance(eve, Answered)
    assert eve.student_id is None
    assert isinstance(nowhere, NotFoundError)
    assert nowhere.field == "code"
    assert isinstance(dee, Answered)
    assert isinstance(dee.error, InvalidError)
    assert dee.error.field == "choice"
    assert exported(app_client, code) == [("Ada", first.id, right), ("Bo", first.id, right)]
    assert exported(app_client, other_code) == []


def test_answers_that_arrive_while_one_is_stored_are_stored_in_one_transaction(
    app_client: TestClient,  # noqa: F811
) -> None:
    """The first answer of a burst is stored at once (with any that came before its transaction
    began); the others, arriving while it is, are stored together in the next transaction: two
    commits for a burst, not one each.
    Every answer acknowledged (303) is in the export."""
    first = questions()[0]
    code = start_class(app_client)
    pupils = [student(app_client, code, f"S{n}") for n in range(12)]
    assert app_client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
    answers: Answers = app_client.app.state.live_answers  # type: ignore[attr-defined]
    service: LiveService = answers.service
    real = service.answer_all

    async def held_once(session: Any, given: Sequence[GivenAnswer]) -> Any:
        """The first transaction (of the answers that came before it started: one or more)
        waits, inside, until every other answer is waiting."""
        service.answer_all = real  # type: ignore[method-assign]
        while len(given) + len(answers._waiting) < len(pupils):
            await asyncio.sleep(0)  # the others arrive (an event, polled on the server's loop)
        return await real(session, given)

    service.answer_all = held_once  # type: ignore[method-assign]
    commits: list[int] = []
    engine = answers.db.engine.sync_engine

    def committed(_connection: Any) -> None:
        commits.append(1)

    event.listen(engine, "commit", committed)
    try:
        with ThreadPoolExecutor(len(pupils)) as pool:
            sent = [
                pool.submit(
                    pupil.post,
                    f"/class/{code}/answer",
                    data={"question": first.id, "choice": str(1 + n % 3)},
                    follow_redirects=False,
                )
                for n, pupil in enumerate(pupils)
            ]
            statuses = [future.result().status_code for future in sent]
    finally:
        service.answer_all = real  # type: ignore[method-assign]
        event.remove(engine, "commit", committed)
    assert statuses == [303] * len(pupils)
    assert len(commits) <= 2  # the first answer (perhaps with a few), then all the others
    assert len(exported(app_client, code)) == len(pupils)


def test_a_student_removed_between_the_read_and_the_write_fails_no_other_answer(
    data_dir: Path,  # noqa: F811
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On PostgreSQL a host may remove a student after the answers' transaction read them and
    before it writes their answer: the write breaks the answers' foreign key. The others of the
    transaction are stored all the same, and that student's reply is the one a removed student
    gets (the join form), not an error."""
    first = questions()[0]
    with TestClient(create_app(settings_for(data_dir, database_url=postgres_url))) as client:
        code = start_class(client)
        student(client, code, "Ada")
        student(client, code, "Bo")
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        token = tokens(client)
        answers: Answers = client.app.state.live_answers  # type: ignore[attr-defined]
        db: Store = answers.db
        real = store.save_answers
        right = str(first.answer_number)

        async def removed_meanwhile(session: Any, rows: Any) -> None:
            monkeypatch.setattr(store, "save_answers", real)  # once
            async with db.session() as other:  # the host's removal, committed first
                await other.execute(delete(Participant).where(Participant.nickname == "Bo"))
            await real(session, rows)

        monkeypatch.setattr(store, "save_answers", removed_meanwhile)

        async def both() -> list[Answered]:
            return await asyncio.gather(
                answers.give(GivenAnswer(code, token["Ada"], [first.id], [right])),
                answers.give(GivenAnswer(code, token["Bo"], [first.id], [right])),
            )

        ada, bo = client.portal.call(both)  # type: ignore[union-attr]
        assert (ada.error, bo.error) == (None, None)
        assert ada.student_id is not None
        assert bo.student_id is None  # removed: the route sends them to the join form
        assert bo.live.code == code  # ... of their class
        assert exported(client, code) == [("Ada", first.id, right)]


def test_a_student_removed_before_their_refusals_page_is_read_fails_no_other_answer(
    data_dir: Path,  # noqa: F811
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refused answer stores no row, so nothing holds its student: on PostgreSQL a host may
    remove that student after the answers' transaction judged them and before it reads their
    page for the reply. That student gets what a removed student gets (the join form); the
    other answers of the transaction are stored and acknowledged."""
    first, second = questions()[:2]
    with TestClient(create_app(settings_for(data_dir, database_url=postgres_url))) as client:
        code = start_class(client)
        student(client, code, "Ada")
        student(client, code, "Bo")
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        token = tokens(client)
        answers: Answers = client.app.state.live_answers  # type: ignore[attr-defined]
        db: Store = answers.db
        real = store.save_answers
        right = str(first.answer_number)

        async def removed_meanwhile(session: Any, rows: Any) -> None:
            monkeypatch.setattr(store, "save_answers", real)  # once
            await real(session, rows)  # Ada's row: Bo's answer was refused, it has none
            async with db.session() as other:  # the host's removal, committed meanwhile
                await other.execute(delete(Participant).where(Participant.nickname == "Bo"))

        monkeypatch.setattr(store, "save_answers", removed_meanwhile)

        async def both() -> list[Answered]:
            return await asyncio.gather(
                answers.give(GivenAnswer(code, token["Ada"], [first.id], [right])),
                # Not the question asked (409), from a page that asks for its page back.
                answers.give(GivenAnswer(code, token["Bo"], [second.id], ["1"], page=True)),
            )

        ada, bo = client.portal.call(both)  # type: ignore[union-attr]
        assert (ada.error, ada.student) == (None, None)
        assert ada.student_id is not None
        assert bo.student_id is None  # removed: the route sends them to the join form
        assert bo.live.code == code  # ... of their class
        assert exported(client, code) == [("Ada", first.id, right)]


def test_an_answer_or_a_drag_to_a_code_no_class_can_have_names_no_class(
    app_client: TestClient,  # noqa: F811
) -> None:
    """Without reading the database: a code that is not a class code's shape is no class
    (404 naming the code), with or without a student's cookie; a code of that shape without
    the cookie goes to its join form (which looks it up)."""
    code = start_class(app_client)
    pupil = student(app_client, code, "Ada")
    for client in (app_client, pupil):
        for path in ("answer", "state"):
            refused = client.post(f"/class/0/{path}", data={"choice": "1"}, follow_redirects=False)
            assert refused.status_code == 404, (path, refused.status_code)
            assert "no class with the code “0”" in refused.text
    sent = app_client.post(f"/class/{code.lower()}/answer", data={}, follow_redirects=False)
    assert (sent.status_code, sent.headers["location"]) == (303, f"/join/{code}")


def test_an_answers_transaction_that_fails_fails_each_of_its_requests(tmp_path: Path) -> None:
    """A database that breaks under the answers (here its table of answers is gone) fails
    every request of the transaction with the database's own error, which the app answers (503
    and when to try again, for an operational error), and none of them waits for ever."""
    first = questions()[0]
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        code = start_class(client)
        pupils = [student(client, code, name) for name in ("Ada", "Bo")]
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        db: Store = client.app.state.live_store  # type: ignore[attr-defined]

        async def break_it() -> None:
            async with db.session() as session:
                await session.execute(text("DROP TABLE live_answers"))

        client.portal.call(break_it)  # type: ignore[union-attr]
        for pupil in pupils:
            sent = pupil.post(f"/class/{code}/answer", data={"question": first.id, "choice": "1"})
            assert sent.status_code == 503  # an operational error of SQLite's: try again
            assert "what you sent was not saved" in sent.text
            assert int(sent.headers["Retry-After"]) >= 1


@pytest.mark.timeout(30)  # a request left waiting fails here, not at the suite's two minutes
def test_an_answer_the_database_refuses_again_alone_is_answered_and_the_others_stored(
    tmp_path: Path,
) -> None:
    """An answers' transaction that breaks a row's rule stores each of its answers again, alone,
    once: an answer refused alone too (here a trigger refuses Ada's, for ever) is answered with
    the database's own error, the server's 500, not retried without end; the others' answers
    are stored."""
    first = questions()[0]
    right = str(first.answer_number)
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        code = start_class(client)
        ada, bo = (student(client, code, name) for name in ("Ada", "Bo"))
        refused = TestClient(client.app, raise_server_exceptions=False, cookies=ada.cookies)
        refused.portal = client.portal
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        db: Store = client.app.state.live_store  # type: ignore[attr-defined]

        async def refuse_ada() -> None:
            async with db.session() as session:
                ada_id = (
                    await session.execute(
                        select(Participant.id).where(Participant.nickname == "Ada")
                    )
                ).scalar_one()
                await session.execute(
                    text(
                        "CREATE TRIGGER refuse_ada BEFORE INSERT ON live_answers"
                        f" WHEN NEW.participant_id = {ada_id}"
                        " BEGIN SELECT RAISE(ABORT, 'Ada may not answer'); END"
                    )
                )

        client.portal.call(refuse_ada)  # type: ignore[union-attr]
        answer = {"question": first.id, "choice": right}
        sent = refused.post(f"/class/{code}/answer", data=answer)
        assert sent.status_code == 500
        assert "the server could not answer this request" in sent.text
        # The error the server logs is the database's refusal (not a retry's own failure).
        with pytest.raises(IntegrityError, match="Ada may not answer"):
            ada.post(f"/class/{code}/answer", data=answer)
        stored = bo.post(f"/class/{code}/answer", data=answer)
        assert stored.status_code == 200
        assert exported(client, code) == [("Bo", first.id, right)]


@pytest.mark.timeout(30)
def test_a_request_given_up_while_its_answer_waits_leaves_the_others_answered(
    tmp_path: Path,
) -> None:
    """Three answers wait together for this worker's write turn (SQLite); the first one's
    request is given up meanwhile (its browser left). The two others are stored and their
    requests answered all the same."""
    first = questions()[0]
    right = str(first.answer_number)
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        code = start_class(client)
        for name in ("Ada", "Bo", "Cy"):
            student(client, code, name)
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        token = tokens(client)
        answers: Answers = client.app.state.live_answers  # type: ignore[attr-defined]
        turns = answers.db._writing
        assert turns is not None

        async def given_up_first() -> list[Answered]:
            async with turns.turn():  # held: the answers' transaction waits for it
                gives = [
                    asyncio.ensure_future(
                        answers.give(GivenAnswer(code, token[name], [first.id], [right]))
                    )
                    for name in ("Ada", "Bo", "Cy")
                ]
                while not turns._others:  # the writer of answers waits for the turn
                    await asyncio.sleep(0)
                gives[0].cancel()  # Ada's request given up
            done, _ = await asyncio.wait(gives[1:], timeout=10)  # a bound for a reply never given
            return [give.result() for give in gives[1:] if give in done]

        replies = client.portal.call(given_up_first)  # type: ignore[union-attr]
        assert [reply.error for reply in replies] == [None, None]
        assert ("Bo", first.id, right) in exported(client, code)
        assert ("Cy", first.id, right) in exported(client, code)


@pytest.mark.timeout(30)
def test_an_answer_waiting_as_the_server_stops_is_stored_before_it_closes(tmp_path: Path) -> None:
    """The server stops while an answer waits for the write turn (SQLite; its request given up
    with the server): the answer is stored before the database is closed."""
    first = questions()[0]
    right = str(first.answer_number)
    data = tmp_path / "data"
    with TestClient(create_app(settings_for(data))) as client:
        code = start_class(client)
        student(client, code, "Ada")
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        token = tokens(client)
        answers: Answers = client.app.state.live_answers  # type: ignore[attr-defined]
        turns = answers.db._writing
        assert turns is not None

        async def hold_until_stopping() -> None:
            """The turn held until the server begins to stop (it ends the daily purge)."""
            purge = next(t for t in asyncio.all_tasks() if t.get_name() == "live-daily-purge")
            stopping = asyncio.Event()
            purge.add_done_callback(lambda _: stopping.set())
            async with turns.turn():
                await stopping.wait()

        given = GivenAnswer(code, token["Ada"], [first.id], [right])
        running: list[asyncio.Future[Any]] = []

        async def waiting() -> None:
            running.append(asyncio.ensure_future(hold_until_stopping()))
            while not turns._busy:
                await asyncio.sleep(0)
            running.append(asyncio.ensure_future(answers.give(given)))
            while not turns._others:  # the writer of answers waits for the turn
                await asyncio.sleep(0)

        client.portal.call(waiting)  # type: ignore[union-attr]
    with sqlite3.connect(data / SQLITE_FILE) as db:
        stored = db.execute("SELECT question, choice FROM live_answers").fetchall()
    assert stored == [(first.id, first.answer_number)]


@pytest.mark.timeout(30)
def test_an_answer_to_a_class_there_is_not_is_refused_naming_its_code(tmp_path: Path) -> None:
    """An answer that reaches the writer of answers for a class there is not (one that was
    deleted since the request was checked) is refused with the code's 404, the others of its
    transaction stored."""
    first = questions()[0]
    right = str(first.answer_number)
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        code = start_class(client)
        student(client, code, "Ada")
        assert client.post(f"/class/{code}/ask", data={"question": first.id}).status_code == 200
        token = tokens(client)
        answers: Answers = client.app.state.live_answers  # type: ignore[attr-defined]
        gone = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"

        async def both() -> list[Answered | BaseException]:
            gives = [
                asyncio.ensure_future(
                    answers.give(GivenAnswer(to, token["Ada"], [first.id], [right]))
                )
                for to in (gone, code)
            ]
            done, _ = await asyncio.wait(gives, timeout=10)  # a bound for a reply never given
            return [give.exception() or give.result() for give in gives if give in done]

        nowhere, ada = client.portal.call(both)  # type: ignore[union-attr]
        assert isinstance(nowhere, NotFoundError)
        assert nowhere.field == "code"
        assert nowhere.message == f"There is no class with the code {gone}."
        assert isinstance(ada, Answered)
        assert exported(client, code) == [("Ada", first.id, right)]
