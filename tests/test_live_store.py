"""The live class's storage (app/live/store.py): the worker's write turns, the engines' settings
and the queries the class makes, on the real app's SQLite database (and a private PostgreSQL
where the branch is PostgreSQL's), each read back from the database. Written for the survivors of
its mutation run (docs/testing.md, "The live class")."""

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.live import store
from app.live.database import CONNECT_TIMEOUT_S, QUERY_TIMEOUT_S
from app.live.store import WriteTurns
from app.main import create_app
from tests import test_live, test_live_refusals
from tests.test_live import other_browser, questions, settings_for, start_class, student
from tests.test_live_refusals import class_id, events, exported, next_event, rows, student_ids

data_dir = test_live.data_dir
T = TypeVar("T")


client = test_live_refusals.sqlite_client


def on_app(client: TestClient, work: Callable[[store.Store], Awaitable[T]]) -> T:
    """``work`` on the app's own store, on the app's loop."""
    db: store.Store = client.app.state.live_store  # type: ignore[attr-defined]

    async def run() -> T:
        return await work(db)

    return client.portal.call(run)  # type: ignore[union-attr]


# ---- the engines --------------------------------------------------------------------------


async def pragmas(engine: AsyncEngine) -> dict[str, object]:
    async with engine.connect() as connection:
        return {
            name: (await connection.execute(text(f"PRAGMA {name}"))).scalar_one()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }


def test_every_sqlite_connection_writes_ahead_durably_keeps_foreign_keys_and_waits_30_s(
    client: TestClient,
) -> None:
    """WAL (readers never wait for the writer), synchronous NORMAL (1), foreign keys on, and a
    writer of another worker waited for 30 s (30,000 ms), on the requests' connections and on
    the streams' own."""

    async def both(db: store.Store) -> list[dict[str, object]]:
        return [await pragmas(db.engine), await pragmas(db.feed_engine)]

    expected = {"journal_mode": "wal", "synchronous": 1, "foreign_keys": 1, "busy_timeout": 30_000}
    assert on_app(client, both) == [expected, expected]


def test_the_requests_keep_5_connections_and_10_more_at_a_peak_the_streams_2_and_2(
    client: TestClient,
) -> None:
    async def sizes(db: store.Store) -> list[tuple[int, int]]:
        return [
            (engine.pool.size(), engine.pool._max_overflow)  # type: ignore[attr-defined]
            for engine in (db.engine, db.feed_engine)
        ]

    assert on_app(client, sizes) == [(5, 10), (2, 2)]


def test_a_replicas_engine_pings_its_connections_and_bounds_asyncpgs_waits() -> None:
    """What the engine hands asyncpg when it connects (captured as it connects, to a port where
    nothing listens): the connection's and each query's timeouts; and a connection taken from
    the pool is pinged first (a replica restarted meanwhile)."""
    url = "postgresql+asyncpg://atlas:secret@127.0.0.1:9/atlas"
    given: list[dict[str, Any]] = []

    class CapturedError(Exception):
        pass

    async def connect() -> None:
        engine = store.make_engine(url)
        assert (engine.pool.size(), engine.pool._max_overflow) == (5, 10)  # type: ignore[attr-defined]
        assert engine.pool._pre_ping is True  # type: ignore[attr-defined]

        @event.listens_for(engine.sync_engine, "do_connect")
        def capture(dialect: object, record: object, args: object, params: dict[str, Any]) -> None:
            given.append(dict(params))
            raise CapturedError

        try:
            with pytest.raises(CapturedError):
                async with engine.connect():
                    pass
        finally:
            await engine.dispose()

    asyncio.run(connect())
    [params] = given
    assert (params["timeout"], params["command_timeout"]) == (CONNECT_TIMEOUT_S, QUERY_TIMEOUT_S)
    assert (params["host"], params["port"], params["database"]) == ("127.0.0.1", 9, "atlas")


# ---- the write turns ----------------------------------------------------------------------


async def holding(turns: WriteTurns, first: bool = False) -> tuple[asyncio.Event, asyncio.Event]:
    """A writer that takes its turn (``got`` set) and holds it until ``done`` is set."""
    got, done = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with turns.turn(first):
            got.set()
            await done.wait()

    asyncio.get_running_loop().create_task(write())
    return got, done


def test_the_instructors_writer_goes_before_the_others_waiting() -> None:
    async def run() -> list[str]:
        turns = WriteTurns()
        order: list[str] = []
        got, done = await holding(turns)
        await got.wait()  # a writer holds the turn

        async def write(name: str, first: bool) -> None:
            async with turns.turn(first):
                order.append(name)

        waiting = [asyncio.create_task(write("answer 1", False))]
        await asyncio.sleep(0)  # the answer waits in line first
        waiting += [asyncio.create_task(write("pause", True))]
        await asyncio.sleep(0)
        waiting += [asyncio.create_task(write("answer 2", False))]
        await asyncio.sleep(0)
        done.set()
        await asyncio.wait_for(asyncio.gather(*waiting), 5)
        return order

    assert asyncio.run(run()) == ["pause", "answer 1", "answer 2"]


def test_a_turn_given_back_goes_to_the_next_writer_or_to_the_next_one_to_come() -> None:
    async def run() -> None:
        turns = WriteTurns()
        # No one writing: a writer goes at once, and again after it.
        for _ in range(2):
            got, done = await holding(turns)
            await asyncio.wait_for(got.wait(), 5)
            done.set()
            await asyncio.sleep(0)
        # One writing, one waiting: the waiting one goes once the first is done, not before.
        got, done = await holding(turns)
        await got.wait()
        then, then_done = await holding(turns)
        await asyncio.sleep(0)
        assert not then.is_set()
        done.set()
        await asyncio.wait_for(then.wait(), 5)
        # A writer that gave up waiting is skipped: the turn goes to the one behind it.
        quitter = asyncio.create_task(turns.turn().__aenter__())
        behind, behind_done = await holding(turns)
        await asyncio.sleep(0)
        quitter.cancel()
        then_done.set()
        await asyncio.wait_for(behind.wait(), 5)
        behind_done.set()
        # And after everyone, the next writer goes at once.
        last, last_done = await holding(turns)
        await asyncio.wait_for(last.wait(), 5)
        last_done.set()

    asyncio.run(run())


# ---- time ---------------------------------------------------------------------------------


def test_the_moments_stored_are_utc_whatever_the_servers_time_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server set to another zone (5 hours behind UTC, 9 ahead) stores the same moments: what
    the export writes and what orders events is UTC, naive; ``now`` is to the second."""
    for zone in ("EST+5", "JST-9"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        before = datetime.now(UTC).replace(tzinfo=None)
        moment, second = store.moment(), store.now()
        after = datetime.now(UTC).replace(tzinfo=None)
        assert before <= moment <= after
        assert before.replace(microsecond=0) <= second <= after
        assert second.microsecond == 0
    monkeypatch.delenv("TZ")
    time.tzset()


# ---- PostgreSQL ---------------------------------------------------------------------------


def test_replicas_let_a_workers_writers_run_together_with_connections_of_their_own() -> None:
    """No write turns on PostgreSQL (it locks rows itself): a second writing transaction of the
    worker begins while the first is open (neither connects until it runs a statement); the
    streams' engine keeps 2 connections and 2 more, the requests' 5 and 10."""

    async def run() -> None:
        db = store.Store("postgresql+asyncpg://atlas:secret@127.0.0.1:9/atlas")
        try:
            sizes = [
                (engine.pool.size(), engine.pool._max_overflow)  # type: ignore[attr-defined]
                for engine in (db.engine, db.feed_engine)
            ]
            assert sizes == [(5, 10), (2, 2)]
            async with db.session(), db.session(first=True):
                pass
        finally:
            await db.close()

    asyncio.run(asyncio.wait_for(run(), 10))


@pytest.fixture
def postgresql_client(data_dir: Path, postgres_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir, database_url=postgres_url))) as host:
        yield host


def test_a_change_on_postgresql_notifies_the_class_at_commit_and_never_for_a_rollback(
    postgresql_client: TestClient, postgres_url: str
) -> None:
    code = start_class(postgresql_client)
    heard: list[str] = []

    async def run() -> list[str]:
        db: store.Store = postgresql_client.app.state.live_store  # type: ignore[attr-defined]
        listener = await asyncpg.connect(postgres_url)
        arrived = asyncio.Event()

        def hear(_connection: object, _pid: int, channel: str, payload: str) -> None:
            heard.append(f"{channel} {payload}")
            arrived.set()

        await listener.add_listener(store.NOTIFY_CHANNEL, hear)
        try:
            async with db.session(write=False) as session:
                live = await store.class_by_code(session, code)
                assert live is not None
            ident = live.id
            async with db.session() as session:
                await store.change(session, ident, phase="paused")
                await session.rollback()
            async with db.session() as session:
                await store.change(session, ident, question="q1", phase="paused")
                assert session.info[store.CHANGED] == {ident}
                assert heard == []  # delivered at commit, not before
            await asyncio.wait_for(arrived.wait(), 5)
            arrived.clear()
            async with db.session() as session:
                await store.change(session, ident)  # nothing to change: the word alone
            await asyncio.wait_for(arrived.wait(), 5)
            async with db.session(write=False) as session:
                again = await store.class_by_code(session, code)
                assert again is not None
                assert (again.question, again.phase, again.version) == ("q1", "paused", 1)
            return [f"{store.NOTIFY_CHANNEL} {ident}"] * 2
        finally:
            await listener.close()

    expected = postgresql_client.portal.call(run)  # type: ignore[union-attr]
    assert heard == expected


def test_starting_classes_on_postgresql_queue_on_one_lock_until_commit(
    postgresql_client: TestClient,
) -> None:
    """Two transactions counting the classes to start one: the second waits for the first's
    commit (PostgreSQL shows it waiting on the advisory lock), so its count includes it."""

    async def run() -> None:
        db: store.Store = postgresql_client.app.state.live_store  # type: ignore[attr-defined]
        first_locked = asyncio.Event()
        release = asyncio.Event()

        async def first() -> None:
            async with db.session() as session:
                await store.lock_classes(session)
                first_locked.set()
                await release.wait()

        async def second() -> None:
            async with db.session() as session:
                await store.lock_classes(session)

        holder = asyncio.create_task(first())
        try:
            await asyncio.wait_for(first_locked.wait(), 10)
            waiter = asyncio.create_task(second())
            # Wait until PostgreSQL shows the second transaction waiting on the advisory lock.
            while True:
                async with db.session(write=False) as session:
                    waiting = (
                        await session.execute(
                            text(
                                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                                " AND NOT granted"
                            )
                        )
                    ).scalar_one()
                if waiting or waiter.done():
                    break
                await asyncio.sleep(0.05)
            assert waiting == 1
            assert not waiter.done()
            release.set()
            await asyncio.wait_for(waiter, 10)
        finally:
            release.set()
            await asyncio.wait_for(holder, 10)

    postgresql_client.portal.call(run)  # type: ignore[union-attr]


# ---- the class's answers and versions -----------------------------------------------------


def stored_votes(client: TestClient, code: str) -> set[tuple[str, str, int, int]]:
    """(nickname, question, vote, choice) of every answer the class's rows hold."""
    found = rows(
        client,
        "SELECT p.nickname, a.question, a.round, a.choice FROM live_answers a"
        " JOIN live_participants p ON p.id = a.participant_id"
        " JOIN live_classes c ON c.id = a.class_id WHERE c.code = :code",
        code=code,
    )
    return {(str(n), str(q), int(str(r)), int(str(c))) for n, q, r, c in found}


def test_a_revote_forgets_that_questions_vote_2_in_that_class_alone(client: TestClient) -> None:
    first, second = questions()[:2]
    one = start_class(client)
    other_host = other_browser(client)
    other = start_class(other_host)
    ada, bo = student(client, one, "Ada"), student(other_host, other, "Bo")

    def vote(pupil: TestClient, code: str, question: str, round: int, choice: int) -> None:
        form = {"question": question, "choice": str(choice), "round": str(round)}
        assert pupil.post(f"/class/{code}/answer", data=form).status_code == 200

    def two_votes(host: TestClient, code: str, question: str) -> None:
        host.post(f"/class/{code}/ask", data={"question": question, "rounds": "2"})
        assert host.post(f"/class/{code}/revote").status_code == 200

    host_of = {one: client, other: other_host}
    two_votes(client, one, first.id)
    vote(ada, one, first.id, 2, 1)
    two_votes(other_host, other, second.id)
    vote(bo, other, second.id, 2, 2)
    client.post(f"/class/{one}/ask", data={"question": second.id, "rounds": "2"})
    vote(ada, one, second.id, 1, 3)
    assert host_of[one].post(f"/class/{one}/revote").status_code == 200
    # Class one's vote 2 of the second question starts empty: its other question's vote 2
    # stays, and so does the other class's vote 2 of that question.
    assert stored_votes(client, one) == {("Ada", first.id, 2, 1), ("Ada", second.id, 1, 3)}
    assert stored_votes(client, other) == {("Bo", second.id, 2, 2)}
    vote(ada, one, second.id, 2, 1)
    # The first question asked again with two votes: its vote 2 of before is forgotten.
    two_votes(client, one, first.id)
    assert stored_votes(client, one) == {("Ada", second.id, 1, 3), ("Ada", second.id, 2, 1)}


def test_a_change_made_by_another_worker_reaches_an_open_page_through_the_version_poll(
    client: TestClient,
) -> None:
    """On SQLite each worker looks at the versions of the classes it follows: a change another
    worker committed (here committed on this worker's database without a word to its feeds)
    reaches the dashboard open here, each time."""
    start_class(other_browser(client))  # the class's id is not its version
    code = start_class(client)
    ident = class_id(client, code)

    def change_elsewhere(**values: object) -> None:
        async def change(db: store.Store) -> None:
            async with db.session() as session:
                await store.change(session, ident, **values)

        on_app(client, change)

    with client.stream("GET", f"/class/{code}/events?view=host") as dashboard:
        watching = events(dashboard)
        next_event(watching, lambda e: e.name == "host", "the dashboard")
        for question in questions()[:3]:
            change_elsewhere(question=question.id, phase="paused")
            shown = next_event(
                watching,
                lambda e, n=question.number: f"Question {n}: Answering is paused." in e.data,
                f"question {question.number} asked elsewhere",
            )
            assert shown.name == "host"


def test_the_export_lists_each_student_in_joining_order_then_their_answers_in_time(
    client: TestClient,
) -> None:
    """By student, in the order they joined (their join times, whatever order their rows were
    made in), each with their answers in the order they were given (their times, whatever
    order their rows were made in); students who joined in the same second each keep their
    answers together."""
    code = start_class(client)
    first, second = questions()[:2]
    ada, bo, cy = (student(client, code, name) for name in ("Ada", "Bo", "Cy"))
    for question in (first, second):
        client.post(f"/class/{code}/ask", data={"question": question.id}).raise_for_status()
        for pupil in (ada, bo, cy):
            form = {"question": question.id, "choice": "1", "round": "1"}
            assert pupil.post(f"/class/{code}/answer", data=form).status_code == 200

    async def rejoined(db: store.Store) -> None:
        # Cy joined first, Ada and Bo together a second later.
        async with db.session() as session:
            for name, at in (("Cy", "2026-01-01 10:00:00"), ("Ada", "2026-01-01 10:00:01")):
                await session.execute(
                    text("UPDATE live_participants SET joined_at = :at WHERE nickname = :n"),
                    {"at": at, "n": name},
                )
            await session.execute(
                text("UPDATE live_participants SET joined_at = :at WHERE nickname = 'Bo'"),
                {"at": "2026-01-01 10:00:01"},
            )
            # Every answer to the second question stored a second before the first's.
            for question, at in ((first, "2026-01-01 10:00:05"), (second, "2026-01-01 10:00:04")):
                await session.execute(
                    text("UPDATE live_answers SET answered_at = :at WHERE question = :q"),
                    {"at": at, "q": question.id},
                )

    on_app(client, rejoined)
    listed = [(row[0], row[1]) for row in exported(client, code)[1:]]
    assert listed == [
        (name, question.id) for name in ("Cy", "Ada", "Bo") for question in (second, first)
    ]


def test_a_device_removed_trying_another_removed_students_nickname_is_refused_in_words(
    client: TestClient,
) -> None:
    """Ada and Bo removed; Ada's device (her cookie) joining as "Bo" matches both removals:
    refused with the removal's words (403), not a server error."""
    code = start_class(client)
    ada = student(client, code, "Ada")
    student(client, code, "Bo")
    for name, who in student_ids(client, code).items():
        removed = client.post(f"/class/{code}/remove", data={"participant": who})
        assert removed.status_code == 200, name
    again = ada.post("/join", data={"code": code, "nickname": "Bo"}, follow_redirects=False)
    assert again.status_code == 403
    assert "The instructor removed you from this class" in again.text


def test_a_classs_students_are_read_in_joining_order(client: TestClient) -> None:
    """By their join times, whatever order their rows were made in; in one second, by id."""
    code = start_class(client)
    for name in ("Ada", "Bo", "Cy", "Di"):
        student(client, code, name)
    ident = class_id(client, code)

    async def read(db: store.Store) -> tuple[list[str], list[str]]:
        async with db.session() as session:
            for name, at in (("Ada", 3), ("Bo", 1), ("Cy", 1), ("Di", 2)):
                await session.execute(
                    text("UPDATE live_participants SET joined_at = :at WHERE nickname = :n"),
                    {"at": f"2026-01-01 10:00:0{at}", "n": name},
                )
        async with db.session(write=False) as session:
            whole = await store.roster(session, ident)
            ids = [who for who, _, _ in whole.participants]
            some = await store.roster(session, ident, [ids[0], ids[2]])
        return [n for _, n, _ in whole.participants], [n for _, n, _ in some.participants]

    assert on_app(client, read) == (["Bo", "Cy", "Di", "Ada"], ["Bo", "Di"])


def test_a_nickname_that_is_one_students_and_looks_like_anothers_is_refused_in_words(
    client: TestClient,
) -> None:
    """A capital I looks like an l and a Cyrillic i like a Latin one: "KaI" and "Ka\u0456"
    are two students; "Kai" is the first's nickname in another case and looks like the
    second's: refused naming one of them (409), not a server error."""
    code = start_class(client)
    student(client, code, "KaI")
    student(client, code, "Ka\u0456")
    third = other_browser(client)
    sent = third.post("/join", data={"code": code, "nickname": "Kai"}, follow_redirects=False)
    assert sent.status_code == 409, sent.text[:300]


# ---- ages: the purge and the class limit, to the second -----------------------------------


def test_a_class_exactly_as_old_as_the_limits_is_kept_and_counted_a_second_older_is_not(
    client: TestClient,
) -> None:
    """Times are to the second: a class started exactly ``retention_days`` ago is kept by the
    purge, one a second older deleted; one no student joined, started exactly
    ``UNJOINED_HOURS`` ago, still holds a place against the class limit and is kept, a second
    older it holds none and is deleted."""
    codes = [start_class(other_browser(client)) for _ in range(4)]
    student(client, codes[0], "Ada")
    student(client, codes[1], "Bo")
    retention = 3.0

    async def ages(db: store.Store) -> tuple[int, int, set[str]]:
        for _ in range(10):  # until the seconds of both reads and the purge are one
            at = store.now()
            born = {
                codes[0]: at - timedelta(days=retention),  # joined, the retention exactly
                codes[1]: at - timedelta(days=retention, seconds=1),
                codes[2]: at - timedelta(hours=store.UNJOINED_HOURS),  # never joined
                codes[3]: at - timedelta(hours=store.UNJOINED_HOURS, seconds=1),
            }
            async with db.session() as session:
                for code, when in born.items():
                    live = store.LiveClass
                    await session.execute(
                        update(live).where(live.code == code).values(created_at=when)
                    )
                holding = await store.classes_holding_places(session)
                deleted = await store.purge(session, retention)
                left = await session.execute(text("SELECT code FROM live_classes"))
                kept = {str(code) for (code,) in left.all()} & set(codes)
                if store.now() == at:
                    return holding, deleted, kept
                await session.rollback()
        raise AssertionError("ten tries and never within one second")

    holding, deleted, kept = on_app(client, ages)
    assert holding == 3  # the two joined, and the unjoined exactly UNJOINED_HOURS old
    assert (deleted, kept) == (2, {codes[0], codes[2]})


def test_the_export_lists_a_students_vote_1_before_their_vote_2_given_in_one_second(
    client: TestClient,
) -> None:
    """The first question asked for two votes: Ada skips vote 1 and answers vote 2; asked again,
    she answers vote 1 (its row made after her vote 2's). Both given in one second: vote 1
    first."""
    code = start_class(client)
    first = questions()[0]
    ada = student(client, code, "Ada")

    def vote(round: int, choice: int) -> None:
        form = {"question": first.id, "choice": str(choice), "round": str(round)}
        assert ada.post(f"/class/{code}/answer", data=form).status_code == 200

    client.post(f"/class/{code}/ask", data={"question": first.id, "rounds": "2"})
    assert client.post(f"/class/{code}/revote").status_code == 200
    vote(2, 2)
    client.post(f"/class/{code}/ask", data={"question": first.id, "rounds": "2"})
    vote(1, 1)

    async def one_second(db: store.Store) -> None:
        async with db.session() as session:
            await session.execute(update(store.Answer).values(answered_at=store.now()))

    on_app(client, one_second)
    listed = [(row[0], row[5], row[2]) for row in exported(client, code)[1:]]
    assert listed == [("Ada", "1", "1"), ("Ada", "2", "2")]


def test_a_nickname_taken_in_one_class_is_free_in_another(client: TestClient) -> None:
    """Nicknames are the class's own: Ada in one class takes nothing from another class."""
    first, second = start_class(client), start_class(client)
    student(client, first, "Ada")
    student(client, second, "Ada")  # joined: student() asserts the join's redirect
    taken = other_browser(client, "127.0.0.9").post(
        "/join", data={"code": second, "nickname": "Ada"}, follow_redirects=False
    )
    assert taken.status_code == 409


def test_a_student_removed_from_one_class_may_join_another(client: TestClient) -> None:
    """A removal keeps its student (their device and their nickname) out of that class alone."""
    first, second = start_class(client), start_class(client)
    ada = student(client, first, "Ada")
    who = student_ids(client, first)["Ada"]
    removed = client.post(
        f"/class/{first}/remove", data={"participant": who}, follow_redirects=False
    )
    assert removed.status_code == 303
    again = ada.post("/join", data={"code": first, "nickname": "Ada"}, follow_redirects=False)
    assert again.status_code == 403
    elsewhere = ada.post("/join", data={"code": second, "nickname": "Ada"}, follow_redirects=False)
    assert elsewhere.status_code == 303
    assert elsewhere.headers["location"] == f"/class/{second}"
