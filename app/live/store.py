"""The live classes on disk: SQLAlchemy 2 models and every query the class makes.

The database is the truth (ClassQuiz, PrairieLearn): an answer is stored before anyone is told.
Every change tells the other workers in its own transaction (:func:`change`): on PostgreSQL a
``NOTIFY`` that the database delivers at commit, elsewhere a bump of the class's ``version``,
which the workers of one host poll for (app/live/notify.py). SQLite by default, in the data
folder; any database SQLAlchemy reaches with an async driver works through the same queries and
one Alembic history. Deleting a class or a student deletes what hangs on it by the schema's
declared cascades (SQLite enforces them with ``foreign_keys=ON``).
"""

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import (
    ForeignKey,
    Index,
    String,
    Table,
    UniqueConstraint,
    and_,
    bindparam,
    delete,
    event,
    false,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.pool import ConnectionPoolEntry

from app.live.database import connect_args, engine_url

SQLITE_FILE = "classes.sqlite3"
PHASES = ("open", "paused", "revealed")
CONFIDENCES = ("sure", "unsure")  # what a student may say of an answer (or nothing)
NOTIFY_CHANNEL = "atlas_class_changed"
# Any number fixed for this app (another than the migrations'): starting classes queue on it.
CLASSES_LOCK = 0x41746C6173 + 1
# A class no student joined within this many hours stops counting against the class limit (one
# started and never used cannot hold a place for the whole retention); the purge deletes it.
UNJOINED_HOURS = 24
SKELETON_MAX = 255  # characters of a nickname's skeleton (app/live/join.py keeps within it)
CHANGED = "changed classes"  # the key in session.info


def now() -> datetime:
    """UTC now, to the second: what the export writes (ISO 8601)."""
    return moment().replace(microsecond=0)


def moment() -> datetime:
    """UTC now, to the microsecond: to tell which of two events came first."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class LiveClass(Base):
    """One class: its code, the lesson it follows, and what everyone's page shows now."""

    __tablename__ = "live_classes"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(6), unique=True)
    lesson: Mapped[str] = mapped_column(String(200))
    host_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(index=True)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    question: Mapped[str | None] = mapped_column(String(200), default=None)
    phase: Mapped[str] = mapped_column(String(10), default="open")
    show_live: Mapped[bool] = mapped_column(default=False)
    lab_query: Mapped[str] = mapped_column(String(20_000), default="")
    screen_query: Mapped[str] = mapped_column(String(20_000), default="")
    version: Mapped[int] = mapped_column(default=1)
    joining_locked: Mapped[bool] = mapped_column(default=False, server_default=false())
    # Peer instruction: the current question asked for one vote or two, the vote open now
    # (1 or 2), and when the discussion timer ends (None: no timer).
    rounds: Mapped[int] = mapped_column(default=1, server_default="1")
    round: Mapped[int] = mapped_column(default=1, server_default="1")
    timer_ends_at: Mapped[datetime | None] = mapped_column(default=None)
    # When a lab state was last sent to everyone (``lab_query``): drags from before it yield.
    lab_sent_at: Mapped[datetime | None] = mapped_column(default=None)


class Participant(Base):
    """A student in one class; ``token`` (in their signed cookie) brings them back as themselves.
    Two nicknames of one class never share a key (case and spacing) or a skeleton (look-alikes,
    app/live/join.py): unique per class, so two joins at once cannot both take one."""

    __tablename__ = "live_participants"
    __table_args__ = (
        UniqueConstraint("class_id", "nickname_key"),
        UniqueConstraint(
            "class_id", "nickname_skeleton", name="uq_live_participants_class_id_nickname_skeleton"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("live_classes.id", ondelete="CASCADE"))
    nickname: Mapped[str] = mapped_column(String(100))
    nickname_key: Mapped[str] = mapped_column(String(100))
    nickname_skeleton: Mapped[str] = mapped_column(String(SKELETON_MAX))
    token: Mapped[str] = mapped_column(String(64), unique=True)
    joined_at: Mapped[datetime]
    shared_query: Mapped[str] = mapped_column(String(20_000), default="")


class Removed(Base):
    """A student the host removed: their cookie's token and their nickname stay out of the class
    until the host readmits them (deletes this row)."""

    __tablename__ = "live_removed"
    __table_args__ = (Index("ix_live_removed_class", "class_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("live_classes.id", ondelete="CASCADE"))
    nickname: Mapped[str] = mapped_column(String(100))
    nickname_key: Mapped[str] = mapped_column(String(100))
    nickname_skeleton: Mapped[str] = mapped_column(String(SKELETON_MAX))
    token: Mapped[str] = mapped_column(String(64))
    removed_at: Mapped[datetime]


class Answer(Base):
    """A student's answer to one question in one vote (``round`` 1, or 2 for a re-vote): the
    last one they sent while that vote was open, with their confidence if they gave it."""

    __tablename__ = "live_answers"
    __table_args__ = (
        UniqueConstraint(
            "participant_id", "question", "round", name="uq_live_answers_participant_question_round"
        ),
        Index("ix_live_answers_class_question", "class_id", "question"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("live_classes.id", ondelete="CASCADE"))
    participant_id: Mapped[int] = mapped_column(
        ForeignKey("live_participants.id", ondelete="CASCADE")
    )
    question: Mapped[str] = mapped_column(String(200))
    choice: Mapped[int]
    correct: Mapped[bool]
    answered_at: Mapped[datetime]
    round: Mapped[int] = mapped_column(default=1, server_default="1")
    confidence: Mapped[str | None] = mapped_column(String(6), default=None)


# ---- the engine ---------------------------------------------------------------------------


def database_url(configured: str, data_dir: Path) -> str:
    """The configured URL (PostgreSQL's own ``postgresql://`` read by asyncpg), else SQLite in
    the data folder."""
    return engine_url(configured, data_dir / SQLITE_FILE)


def _sqlite_pragmas(connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    # WAL: readers (every stream's snapshot) never wait for the writer; NORMAL is durable
    # across a crash of the server (not of the machine) at a fraction of FULL's fsyncs.
    # Foreign keys: a deleted class takes its students and answers with it.
    cursor = connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def make_engine(url: str, pool_size: int = 5, max_overflow: int = 10) -> AsyncEngine:
    """An async engine keeping ``pool_size`` connections, up to ``max_overflow`` more at a peak
    (SQLAlchemy's defaults); for SQLite with the pragmas above and a long busy wait (several
    workers write one file: a writer waits its turn rather than failing)."""
    pool = {"pool_size": pool_size, "max_overflow": max_overflow}
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30}, **pool)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(url, pool_pre_ping=True, connect_args=connect_args(url), **pool)


class WriteTurns:
    """This worker's writers, one at a time, in the order they came, except that those asked
    ``first`` go before all the others waiting: a click on *Pause* does not wait behind the
    hundreds of answers a lecture hall sends in a second."""

    def __init__(self) -> None:
        self._busy = False
        self._first: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def turn(self, first: bool = False) -> AsyncIterator[None]:
        if self._busy:
            handed = asyncio.get_running_loop().create_future()
            (self._first if first else self._others).append(handed)
            try:
                await handed
            except asyncio.CancelledError:
                if handed.done() and not handed.cancelled():
                    self._hand_on()  # given the turn as it was cancelled: the next one's
                raise
        self._busy = True
        try:
            yield
        finally:
            self._hand_on()

    def _hand_on(self) -> None:
        """The turn to the next writer waiting (``first`` ones before), or to none."""
        for waiting in (self._first, self._others):
            while waiting:
                handed = waiting.popleft()
                if not handed.done():  # not cancelled meanwhile
                    handed.set_result(None)
                    return
        self._busy = False


class Store:
    """The engine and its sessions: one session per request (app/live/deps.py), committed or
    rolled back whole.

    The reads that every open stream of a class waits on (its feed's snapshot, the version
    poll) go through connections of their own: behind a burst of student requests queueing for
    the main pool (500 answers at once) they waited seconds, and with them every dashboard and
    student page.
    """

    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        # SQLite lets one connection write at a time and makes the others sleep and retry
        # (1, 2, 5, 10 … ms): 500 answers at once, each holding the write lock across the event
        # loop's turns, slept for seconds. This worker's writers queue here instead, and only
        # another worker's writer can make one wait in SQLite. PostgreSQL locks rows itself.
        self._writing = WriteTurns() if self.engine.dialect.name == "sqlite" else None
        self.feed_engine = make_engine(url, pool_size=2, max_overflow=2)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._feed_sessions = async_sessionmaker(self.feed_engine, expire_on_commit=False)

    @asynccontextmanager
    async def session(self, write: bool = True, first: bool = False) -> AsyncIterator[AsyncSession]:
        """One transaction; ``write``: it may write (on SQLite it waits for this worker's
        writers before it, see above; ``first``: before those that are not, as the instructor's
        actions go before a hall's answers)."""
        async with contextlib.AsyncExitStack() as stack:
            if write and self._writing is not None:
                await stack.enter_async_context(self._writing.turn(first))
            session = await stack.enter_async_context(self._sessions())
            await stack.enter_async_context(session.begin())
            yield session

    @asynccontextmanager
    async def feed_session(self) -> AsyncIterator[AsyncSession]:
        """A session for the streams' shared reads, on the connections kept for them."""
        async with self._feed_sessions() as session, session.begin():
            yield session

    async def close(self) -> None:
        await self.engine.dispose()
        await self.feed_engine.dispose()


# ---- queries ------------------------------------------------------------------------------


async def class_by_code(session: AsyncSession, code: str) -> LiveClass | None:
    return (
        await session.execute(select(LiveClass).where(LiveClass.code == code))
    ).scalar_one_or_none()


def _joined() -> Any:
    """The class (of the enclosing query) has a student."""
    return select(Participant.id).where(Participant.class_id == LiveClass.id).exists()


async def lock_classes(session: AsyncSession) -> None:
    """Hold the right to add a class until the transaction ends, so that a count of the classes
    made next stays true until commit. PostgreSQL: a transaction-scoped advisory lock, one for
    every replica. SQLite: the write that follows (the new class's insert) takes the database's
    one write lock, which another worker's insert waits for (its busy wait), so nothing here."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(CLASSES_LOCK)))


async def classes_holding_places(session: AsyncSession) -> int:
    """Classes that count against the limit: those a student joined, and those started within
    ``UNJOINED_HOURS``."""
    since = now() - timedelta(hours=UNJOINED_HOURS)
    held = select(func.count(LiveClass.id)).where(or_(LiveClass.created_at >= since, _joined()))
    return (await session.execute(held)).scalar_one()


async def change(session: AsyncSession, class_id: int, **values: Any) -> None:
    """Change the class row (``values``, if any) and tell the other workers that the class
    changed, in this transaction: PostgreSQL delivers a ``NOTIFY`` at commit (never for a
    rollback), and on one host the class's ``version`` is what the other workers poll. A
    change is also noted in ``session.info`` for this worker's own streams, told after commit.
    """
    row = update(LiveClass).where(LiveClass.id == class_id)
    if session.get_bind().dialect.name == "postgresql":
        if values:
            await session.execute(row.values(**values))
        await session.execute(select(func.pg_notify(NOTIFY_CHANNEL, str(class_id))))
    else:
        await session.execute(row.values(version=LiveClass.version + 1, **values))
    session.info.setdefault(CHANGED, set()).add(class_id)


async def participant_by_token(
    session: AsyncSession, class_id: int, token: str
) -> Participant | None:
    return (
        await session.execute(
            select(Participant).where(Participant.class_id == class_id, Participant.token == token)
        )
    ).scalar_one_or_none()


async def students_by_token(
    session: AsyncSession, tokens: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """``token → (id, class id)`` of the students holding these tokens (one statement)."""
    found = await session.execute(
        select(Participant.token, Participant.id, Participant.class_id).where(
            Participant.token.in_(tokens)
        )
    )
    return {token: (who, class_id) for token, who, class_id in found}


async def participant_by_id(
    session: AsyncSession, class_id: int, participant_id: int
) -> Participant | None:
    return (
        await session.execute(
            select(Participant).where(
                Participant.class_id == class_id, Participant.id == participant_id
            )
        )
    ).scalar_one_or_none()


async def nickname_clash(
    session: AsyncSession, class_id: int, key: str, skeleton: str
) -> str | None:
    """The nickname in the class that is this one or looks like it, if any (one query on the
    two unique indexes)."""
    found = await session.execute(
        select(Participant.nickname)
        .where(
            Participant.class_id == class_id,
            (Participant.nickname_key == key) | (Participant.nickname_skeleton == skeleton),
        )
        .limit(1)
    )
    return found.scalar_one_or_none()


async def count_participants(session: AsyncSession, class_id: int) -> int:
    found = await session.execute(
        select(func.count(Participant.id)).where(Participant.class_id == class_id)
    )
    return found.scalar_one()


async def removed_match(
    session: AsyncSession, class_id: int, token: str | None, key: str, skeleton: str
) -> Removed | None:
    """The removal that keeps this device (its token) or this nickname (or a look-alike) out."""
    condition = (Removed.nickname_key == key) | (Removed.nickname_skeleton == skeleton)
    if token:
        condition = condition | (Removed.token == token)
    found = await session.execute(
        select(Removed).where(Removed.class_id == class_id, condition).limit(1)
    )
    return found.scalar_one_or_none()


async def removed_list(session: AsyncSession, class_id: int) -> Sequence[Removed]:
    found = await session.execute(
        select(Removed).where(Removed.class_id == class_id).order_by(Removed.id)
    )
    return found.scalars().all()


async def set_every_lab_state(session: AsyncSession, class_id: int, query: str) -> None:
    """Every student of the class is at the lab state ``query`` now (one statement)."""
    await session.execute(
        update(Participant).where(Participant.class_id == class_id).values(shared_query=query)
    )


class Dragging(NamedTuple):
    """A student of a class that goes on, as a dragged state is checked against."""

    id: int
    token: str
    class_id: int
    shared_query: str
    code: str
    lesson: str
    lab_sent_at: datetime | None


async def dragging(session: AsyncSession, tokens: Sequence[str]) -> list[Dragging]:
    """The students holding these tokens whose class has not ended (one statement)."""
    found = await session.execute(
        select(
            Participant.id,
            Participant.token,
            Participant.class_id,
            Participant.shared_query,
            LiveClass.code,
            LiveClass.lesson,
            LiveClass.lab_sent_at,
        )
        .join(LiveClass, LiveClass.id == Participant.class_id)
        .where(Participant.token.in_(tokens), LiveClass.ended_at.is_(None))
    )
    return [Dragging(*row) for row in found]


async def save_lab_states(session: AsyncSession, states: Sequence[tuple[int, str]]) -> None:
    """Each ``(participant id, query)``: that student's lab state now, in one statement run
    for all of them (a student deleted meanwhile matches no row)."""
    table = Participant.__table__
    assert isinstance(table, Table)  # for the type checker: a mapped class's table
    statement = (
        update(table).where(table.c.id == bindparam("who")).values(shared_query=bindparam("query"))
    )
    await session.execute(statement, [{"who": who, "query": query} for who, query in states])


class AnswerRow(NamedTuple):
    """A student's answer to ``question`` in vote ``round``, as it is to be stored."""

    class_id: int
    participant_id: int
    question: str
    round: int
    choice: int
    correct: bool
    confidence: str | None


async def save_answers(session: AsyncSession, rows: Sequence[AnswerRow]) -> None:
    """Each row is its student's answer in its vote now: one statement, ``INSERT … ON CONFLICT
    DO UPDATE``, run for each row in order, so no answer costs a read first and of two answers
    of one student (in these rows, or stored at once by two writers) the later one counts."""
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(Answer)
    changed = ("choice", "correct", "answered_at", "confidence")
    at = now()
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["participant_id", "question", "round"],
            set_={name: statement.excluded[name] for name in changed},
        ),
        [{**row._asdict(), "answered_at": at} for row in rows],
    )


async def clear_votes(session: AsyncSession, class_id: int, question: str, round: int) -> None:
    """Forget the class's answers to ``question`` in vote ``round`` (a re-vote starts empty)."""
    await session.execute(
        delete(Answer).where(
            Answer.class_id == class_id, Answer.question == question, Answer.round == round
        )
    )


@dataclass(frozen=True, slots=True)
class Roster:
    """Every student of a class with their answers: what a snapshot is built from, as plain rows
    (a snapshot is read on every change of a class of hundreds; ORM objects would cost 5x)."""

    participants: Sequence[tuple[int, str, str]]  # id, nickname, shared_query; by joining
    # participant_id, question, round, choice, correct, confidence
    answers: Sequence[tuple[int, str, int, int, bool, str | None]]


async def roster(
    session: AsyncSession, class_id: int, participant_ids: Sequence[int] | None = None
) -> Roster:
    """The class's students with their answers; ``participant_ids``: those students alone (their
    answers found by their own index, not among the whole class's)."""
    participants = (
        select(Participant.id, Participant.nickname, Participant.shared_query)
        .where(Participant.class_id == class_id)
        .order_by(Participant.joined_at, Participant.id)
    )
    answers = select(
        Answer.participant_id,
        Answer.question,
        Answer.round,
        Answer.choice,
        Answer.correct,
        Answer.confidence,
    )
    if participant_ids is None:
        answers = answers.where(Answer.class_id == class_id)
    else:
        participants = participants.where(Participant.id.in_(participant_ids))
        answers = answers.where(Answer.participant_id.in_(participant_ids))
    return Roster(
        (await session.execute(participants)).all(),
        (await session.execute(answers.order_by(Answer.id))).all(),
    )


async def export_rows(session: AsyncSession, class_id: int) -> Sequence[tuple[str, Answer]]:
    """``(nickname, answer)`` for every answer of the class, by student then time."""
    rows = await session.execute(
        select(Participant.nickname, Answer)
        .join(Answer, Answer.participant_id == Participant.id)
        .where(Answer.class_id == class_id)
        .order_by(
            Participant.joined_at, Participant.id, Answer.answered_at, Answer.round, Answer.id
        )
    )
    return [(nickname, answer) for nickname, answer in rows]


async def versions(session: AsyncSession, class_ids: Sequence[int]) -> dict[int, int]:
    """The version of each class still there (a deleted one is missing)."""
    rows = await session.execute(
        select(LiveClass.id, LiveClass.version).where(LiveClass.id.in_(class_ids))
    )
    return {row[0]: row[1] for row in rows.all()}


async def purge(session: AsyncSession, retention_days: float) -> int:
    """Delete every class older than ``retention_days``, and every class no student joined
    older than ``UNJOINED_HOURS`` (students and answers go with it)."""
    before = now() - timedelta(days=retention_days)
    unjoined_before = now() - timedelta(hours=UNJOINED_HOURS)
    old = LiveClass.created_at < before
    unjoined = and_(LiveClass.created_at < unjoined_before, ~_joined())
    doomed = (await session.execute(select(LiveClass.id).where(or_(old, unjoined)))).scalars()
    ids = list(doomed)
    if ids:
        await session.execute(delete(LiveClass).where(LiveClass.id.in_(ids)))
    return len(ids)
