"""The class's operations, each on the request's one session (one transaction): the caller
commits, then tells the streams (app/live/deps.py). What a page shows is read here too.

A refusal is a :class:`RefusalError` naming the form field at fault; its kind (not found, not
allowed, conflict, invalid, …) is for the routes' layer to answer with a status.
"""

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.lab.panel import lab_panel
from app.lab.view import LabView
from app.lesson.course import CourseLesson, ServedLessons
from app.lesson.quiz import AnswerError, check, read_answer
from app.lesson.render import RenderedQuestion
from app.live import store
from app.live.codes import new_code
from app.live.drags import Drags
from app.live.join import (
    JoinError,
    nickname_key,
    nickname_skeleton,
    read_join_code,
    read_nickname,
)
from app.live.store import CONFIDENCES, Answer, LiveClass, Participant, Removed, now

# The longest lab state a class keeps, as the lab's own canonical link (app/lab/query.py): the
# lab checks its ranks, items and digits; this bounds what a class stores and every page that
# shows it (the database's columns hold 20,000). Far more than a lesson's states need.
SHARED_STATE_MAX = 4_000

ROUNDS = (1, 2)  # a question asked for one vote, or for a vote, a discussion and a re-vote
TIMER_S = (10, 3600)  # a discussion timer's bounds in seconds


@dataclass
class RefusalError(Exception):  # not frozen: raising sets its traceback
    """A refused operation: ``field`` names the form field at fault ("" for none)."""

    message: str
    field: str = ""


class NotFoundError(RefusalError):
    """No such class (or it has just been deleted)."""


class NotAllowedError(RefusalError):
    """Not this class's host, or no longer its student, or not the password."""


class ConflictError(RefusalError):
    """Refused in the class's present state (paused, revealed, ended, a taken nickname)."""


class InvalidError(RefusalError):
    """A field's value is not valid."""


class LimitReachedError(RefusalError):
    """The server keeps as many classes as it may."""


class BusyError(RefusalError):
    """Could not be done just now; the same request may succeed again."""


class Vote(NamedTuple):
    """A student's answer in one vote: the option, whether it is right, and how sure they said
    they were ("sure", "unsure", or "" when they did not say)."""

    choice: int
    correct: bool
    confidence: str


@dataclass(frozen=True, slots=True)
class Student:
    """A student as a snapshot holds them."""

    id: int
    nickname: str
    shared_query: str
    votes: Mapping[tuple[str, int], Vote]  # (question id, round) → their answer in that vote

    def vote(self, question_id: str, round: int = 1) -> Vote | None:
        return self.votes.get((question_id, round))


@dataclass(frozen=True)
class ClassState:
    """The class itself as its pages show it now, from its row."""

    code: str
    lesson: CourseLesson
    version: int
    ended: bool
    question: RenderedQuestion | None
    phase: str
    show_live: bool
    lab_query: str
    screen_query: str
    host_token: str
    joining_locked: bool
    rounds: int  # the current question's votes: 1, or 2 (peer instruction)
    round: int  # the vote open now: 1, or 2 once the re-vote is opened
    timer_ends_at: datetime | None  # the discussion timer's end (UTC), if one is running

    # Computed once per read, however many pages are rendered from it (a change of the class
    # renders the live part of each student's stream from one snapshot).
    @cached_property
    def lab(self) -> LabView | None:
        """The lab state shared with everyone."""
        return shared_lab_view(self.lab_query)

    @cached_property
    def projected(self) -> LabView | None:
        """The lab state on the projector."""
        return shared_lab_view(self.screen_query)


@dataclass(frozen=True)
class Snapshot(ClassState):
    """Everything a class's pages show now, read in one transaction."""

    students: Mapping[int, Student]  # by id, in the order they joined


def _students(roster: store.Roster) -> dict[int, Student]:
    votes: dict[int, dict[tuple[str, int], Vote]] = {}
    for who, question, round, choice, correct, confidence in roster.answers:
        votes.setdefault(who, {})[question, round] = Vote(choice, correct, confidence or "")
    return {
        who: Student(who, nickname, shared, votes.get(who, {}))
        for who, nickname, shared in roster.participants
    }


@dataclass(frozen=True, slots=True)
class GivenAnswer:
    """A student's answer as their request gave it: the class code of its address, the token of
    their signed cookie, the form's fields, and whether the reply shows their page (htmx)."""

    code: str
    token: str
    question: Sequence[str]
    choice: Sequence[str]
    round: str = ""
    confidence: str = ""
    page: bool = False


class Answered(NamedTuple):
    """What became of a given answer in its transaction: the class as read; the student's id
    (None: the cookie's student is not in the class: removed); the refusal, if any; the student
    with their answers, read when the reply shows their page (refused, or asked by htmx)."""

    live: LiveClass
    student_id: int | None
    error: RefusalError | None = None
    student: Student | None = None


class LiveService:
    """The live classes of one server: the lessons they follow and the limit on classes."""

    def __init__(self, course: ServedLessons, class_limit: int, class_size: int = 1_000) -> None:
        self.course = course
        self.class_limit = class_limit
        self.class_size = class_size

    def _full(self) -> "LimitReachedError":
        limit = self.class_limit
        return LimitReachedError(
            f"This server already keeps {limit} {'class' if limit == 1 else 'classes'}, its"
            " limit (ATLAS_CLASS_LIMIT). Delete a finished class; a class no student has"
            f" joined stops counting {store.UNJOINED_HOURS} hours after it started."
        )

    # ---- reading ----------------------------------------------------------------------

    def lesson_of(self, live: LiveClass) -> CourseLesson:
        return self.lesson_of_slug(live.lesson)

    def lesson_of_slug(self, slug: str) -> CourseLesson:
        return self.course.lesson(slug) or self.course.lessons[0]

    def state(self, live: LiveClass) -> ClassState:
        """The class's row as its pages show it."""
        return ClassState(**self._state(live))

    def _state(self, live: LiveClass) -> dict[str, Any]:
        lesson = self.lesson_of(live)
        return {
            "code": live.code,
            "lesson": lesson,
            "version": live.version,
            "ended": live.ended_at is not None,
            "question": lesson.rendered.question(live.question) if live.question else None,
            "phase": live.phase,
            "show_live": live.show_live,
            "lab_query": live.lab_query,
            "screen_query": live.screen_query,
            "host_token": live.host_token,
            "joining_locked": live.joining_locked,
            "rounds": live.rounds,
            "round": live.round,
            "timer_ends_at": live.timer_ends_at,
        }

    async def find(self, session: AsyncSession, typed_code: str) -> LiveClass:
        """The class of a code as typed."""
        try:
            code = read_join_code(typed_code)
        except JoinError as error:
            shown = typed_code.strip()[:12]
            message = f"There is no class with the code “{shown}”: {error.message}"
            raise NotFoundError(message, "code") from None
        live = await store.class_by_code(session, code)
        if live is None:
            raise NotFoundError(f"There is no class with the code {code}.", "code")
        return live

    async def snapshot(self, session: AsyncSession, class_id: int) -> Snapshot | None:
        """The class as its pages show it now; None once it is deleted."""
        live = await session.get(LiveClass, class_id)
        if live is None:
            return None
        students = _students(await store.roster(session, class_id))
        return Snapshot(**self._state(live), students=students)

    async def student(self, session: AsyncSession, participant: Participant) -> Student:
        """One student with their own answers (their page reads no one else's)."""
        roster = await store.roster(session, participant.class_id, [participant.id])
        return _students(roster)[participant.id]

    async def removed(self, session: AsyncSession, live: LiveClass) -> Sequence[Removed]:
        """The students the host removed, who stay out until readmitted."""
        return await store.removed_list(session, live.id)

    async def export(self, session: AsyncSession, live: LiveClass) -> Sequence[tuple[str, Answer]]:
        return await store.export_rows(session, live.id)

    # ---- the instructor -----------------------------------------------------------------

    async def create(self, session: AsyncSession, lesson_slug: str) -> LiveClass:
        """A new class following ``lesson_slug``, unless the server keeps its limit already
        (counted with the new class in, under the classes' lock: classes started at once,
        on any worker or replica, never pass the limit together)."""
        if self.course.lesson(lesson_slug) is None:
            raise InvalidError(
                f"The field “lesson” names no lesson served here ({lesson_slug[:40]!r});"
                " choose one of those listed.",
                "lesson",
            )
        for _ in range(8):  # a repeated code is one in 887 million per class kept
            live = LiveClass(
                code=new_code(),
                lesson=lesson_slug,
                host_token=secrets.token_urlsafe(24),
                created_at=now(),
                phase="open",
                show_live=False,
                lab_query="",
                screen_query="",
                version=1,
            )
            try:
                async with session.begin_nested():  # a refusal rolls the new class back
                    await store.lock_classes(session)
                    session.add(live)
                    await session.flush()
                    held = await store.classes_holding_places(session)
                    if held > self.class_limit:
                        raise self._full()
            except IntegrityError:
                continue
            return live
        raise BusyError("Could not find a free class code; try again.")

    async def ask(
        self, session: AsyncSession, live: LiveClass, question_id: str, rounds: str = "1"
    ) -> None:
        """Ask a question for one vote (``rounds`` "1") or two (vote, discuss, re-vote);
        vote 1 opens."""
        votes = read_rounds(rounds)
        lesson = self.lesson_of(live)
        if lesson.rendered.question(question_id) is None:
            known = ", ".join(q.question.id for q in lesson.rendered.questions)
            raise InvalidError(
                f"Unknown question {question_id[:40]!r} (one of {known}).", "question"
            )
        await store.change(
            session,
            live.id,
            question=question_id,
            phase="open",
            rounds=votes,
            round=1,
            timer_ends_at=None,
        )

    async def set_phase(self, session: AsyncSession, live: LiveClass, phase: str) -> None:
        if live.question is None:
            raise ConflictError("No question has been asked yet.")
        if live.phase == "revealed" and phase != "revealed":
            # Reopening a revealed question would let a student change a vote they now know
            # the verdict of (Runestone's pitfall): asking it again starts a fresh vote.
            raise ConflictError(
                "The answer has been revealed: answering this question stays closed."
                " Ask it again for a new vote."
            )
        timer = {"timer_ends_at": None} if phase == "revealed" else {}
        await store.change(session, live.id, phase=phase, **timer)

    async def revote(self, session: AsyncSession, live: LiveClass) -> None:
        """Open vote 2 of a question asked for two votes: each student answers again."""
        refusal = revote_refusal(live)
        if refusal:
            raise ConflictError(refusal)
        assert live.question is not None  # revote_refusal says so
        # A question asked again: the vote 2 of its earlier asking would count as answered.
        await store.clear_votes(session, live.id, live.question, 2)
        await store.change(session, live.id, round=2, phase="open", timer_ends_at=None)

    async def start_timer(self, session: AsyncSession, live: LiveClass, seconds: str) -> None:
        """A discussion timer of ``seconds`` on the projector and the students' pages; it
        decides nothing (the instructor opens the re-vote)."""
        length = read_seconds(seconds)
        if live.ended_at is not None:
            raise ConflictError("The class has ended.")
        if live.question is None:
            raise ConflictError("No question has been asked yet: a timer times its discussion.")
        if live.phase == "revealed":
            raise ConflictError("The answer has been revealed: there is nothing left to discuss.")
        ends = now() + timedelta(seconds=length)
        await store.change(session, live.id, timer_ends_at=ends)

    async def show_results_live(self, session: AsyncSession, live: LiveClass, shown: bool) -> None:
        await store.change(session, live.id, show_live=shown)

    def _has_lab(self, live: LiveClass) -> None:
        if not self.has_lab(live.lesson):
            raise ConflictError("This class's lesson has no gradient lab to share a state of.")

    async def share_lab(
        self, session: AsyncSession, live: LiveClass, query: Mapping[str, str]
    ) -> None:
        """Everyone's page shows this lab state: every student's lab moves to it (their
        sliders, and the state the dashboard counts them at), from which they explore on."""
        self._has_lab(live)
        valid = valid_lab_query(query)
        await store.set_every_lab_state(session, live.id, valid)
        await store.change(session, live.id, lab_query=valid, lab_sent_at=store.moment())

    async def project(
        self, session: AsyncSession, live: LiveClass, participant_id: int | None
    ) -> None:
        """The projector shows this student's shared lab state (never their name), or none."""
        query = ""
        if participant_id is not None:
            student = await store.participant_by_id(session, live.id, participant_id)
            if student is None or not student.shared_query:
                raise InvalidError("That student has shared no lab state.", "participant")
            query = student.shared_query
        await store.change(session, live.id, screen_query=query)

    async def remove(self, session: AsyncSession, live: LiveClass, participant_id: int) -> None:
        """The student and their answers (by the schema's cascade); their device (cookie) and
        their nickname stay out until :meth:`readmit`."""
        student = await store.participant_by_id(session, live.id, participant_id)
        if student is None:
            raise InvalidError("No such student in this class.", "participant")
        session.add(
            Removed(
                class_id=live.id,
                nickname=student.nickname,
                nickname_key=student.nickname_key,
                nickname_skeleton=student.nickname_skeleton,
                token=student.token,
                removed_at=now(),
            )
        )
        await session.delete(student)
        await store.change(session, live.id)

    async def readmit(self, session: AsyncSession, live: LiveClass, removed_id: int) -> None:
        """A removed student may join again (their device and nickname are let in)."""
        found = await session.get(Removed, removed_id)
        if found is None or found.class_id != live.id:
            raise InvalidError("No such removed student in this class.", "removed")
        await session.delete(found)
        await store.change(session, live.id)

    async def lock(self, session: AsyncSession, live: LiveClass, locked: bool) -> None:
        """Close joining (students already in stay, and come back) or open it again."""
        await store.change(session, live.id, joining_locked=locked)

    async def end(self, session: AsyncSession, live: LiveClass) -> None:
        await store.change(session, live.id, ended_at=live.ended_at or now())

    async def delete(self, session: AsyncSession, live: LiveClass) -> None:
        """The class, its students and their answers (by the schema's cascades)."""
        await session.delete(live)
        await store.change(session, live.id)

    # ---- the students -------------------------------------------------------------------

    async def join(
        self, session: AsyncSession, live: LiveClass, typed_nickname: str, token: str | None
    ) -> tuple[Participant, bool]:
        """The student joining ``live``, and whether they are new: a device whose cookie holds
        a student of the class comes back as that student."""
        if live.ended_at is not None:
            raise ConflictError("This class has ended; ask your instructor for a new code.", "code")
        back = await store.participant_by_token(session, live.id, token) if token else None
        if back is not None:
            return back, False
        try:
            nickname = read_nickname(typed_nickname)
        except JoinError as error:
            raise InvalidError(error.message, error.field) from None
        key, skeleton = nickname_key(nickname), nickname_skeleton(nickname)
        if await store.removed_match(session, live.id, token, key, skeleton) is not None:
            raise NotAllowedError(
                "The instructor removed you from this class; only they can let you back in.",
                "nickname",
            )
        if live.joining_locked:
            raise ConflictError(
                "The instructor has closed joining for this class; ask them to open it.", "code"
            )
        if await store.count_participants(session, live.id) >= self.class_size:
            raise ConflictError(
                f"This class is full: it has {self.class_size} students, the most a class"
                " takes (ATLAS_CLASS_SIZE).",
                "code",
            )
        clash = await store.nickname_clash(session, live.id, key, skeleton)
        if clash is not None:
            raise ConflictError(_clash_message(nickname, clash), "nickname")
        student = Participant(
            class_id=live.id,
            nickname=nickname,
            nickname_key=key,
            nickname_skeleton=skeleton,
            token=secrets.token_urlsafe(24),
            joined_at=now(),
            shared_query="",
        )
        try:
            async with session.begin_nested():
                session.add(student)
        except IntegrityError:  # the same (or a look-alike) nickname, joined at the same moment
            raise ConflictError(_clash_message(nickname, None), "nickname") from None
        await store.change(session, live.id)
        return student, True

    async def answer_all(
        self, session: AsyncSession, given: Sequence[GivenAnswer]
    ) -> list[Answered | NotFoundError]:
        """Judge each answer against its class as this transaction reads it and store those
        taken (a student's last one counts); then read the students whose reply shows their
        page. Each class and the students are read once for all the answers. An answer to a
        class there is not (deleted) has its refusal for outcome."""
        lives = {code: await store.class_by_code(session, code) for code in {g.code for g in given}}
        students = await store.students_by_token(session, [g.token for g in given])
        outcomes: list[Answered | NotFoundError] = []
        rows: list[store.AnswerRow] = []
        for answer in given:
            live = lives[answer.code]
            if live is None:
                outcomes.append(
                    NotFoundError(f"There is no class with the code {answer.code}.", "code")
                )
                continue
            who, class_id = students.get(answer.token, (None, None))
            if who is None or class_id != live.id:  # removed, or another class's
                outcomes.append(Answered(live, None))
                continue
            try:
                row = self._judge(live, who, answer)
            except RefusalError as error:
                outcomes.append(Answered(live, who, error))
                continue
            rows.append(row)
            outcomes.append(Answered(live, who))
        if rows:
            await store.save_answers(session, rows)
            for class_id in {row.class_id for row in rows}:
                await store.change(session, class_id)
        return await self._with_pages(session, given, outcomes)

    def _judge(self, live: LiveClass, who: int, given: GivenAnswer) -> store.AnswerRow:
        """The answer to store, or the refusal: the form's question must be the one asked now,
        in the vote the student's page shows (``round``, "" is vote 1), with a choice it has and
        a confidence, if given, that is one of those offered."""
        lesson = self.lesson_of(live)
        form = {"question": given.question, "choice": given.choice}
        try:
            question, chosen = read_answer([q.question for q in lesson.rendered.questions], form)
        except AnswerError as error:
            raise InvalidError(error.message, error.field) from None
        vote = read_round(given.round)
        sure = read_confidence(given.confidence)
        refusal = answer_refusal(live, question.id, vote)
        if refusal:
            raise ConflictError(refusal, "question")
        correct = check(question, chosen).correct
        return store.AnswerRow(live.id, who, question.id, vote, chosen, correct, sure)

    async def _with_pages(
        self,
        session: AsyncSession,
        given: Sequence[GivenAnswer],
        outcomes: list[Answered | NotFoundError],
    ) -> list[Answered | NotFoundError]:
        """The outcomes, each refused one and each whose reply is the page with its student. A
        refused answer stores no row, so nothing holds its student meanwhile: one removed since
        it was judged is answered as removed (the join form), and fails no other answer."""
        shown: list[tuple[int, Answered, int]] = []  # (place, outcome, student)
        for place, (answer, outcome) in enumerate(zip(given, outcomes, strict=True)):
            if (
                isinstance(outcome, Answered)
                and outcome.student_id is not None
                and (answer.page or outcome.error)
            ):
                shown.append((place, outcome, outcome.student_id))
        by_class: dict[int, list[int]] = {}
        for _, outcome, who in shown:
            by_class.setdefault(outcome.live.id, []).append(who)
        students: dict[int, Student] = {}
        for class_id, ids in by_class.items():
            students.update(_students(await store.roster(session, class_id, ids)))
        for place, outcome, who in shown:
            page = students.get(who)
            outcomes[place] = (
                Answered(outcome.live, None) if page is None else outcome._replace(student=page)
            )
        return outcomes

    async def share_own_lab(
        self,
        session: AsyncSession,
        live: LiveClass,
        participant: Participant,
        query: Mapping[str, str],
    ) -> None:
        """The student's lab state (the sliders of their page, sent as they drag, or their
        form without JavaScript) reaches the instructor; the same state again changes nothing."""
        self._has_lab(live)
        valid = valid_lab_query(query)
        if valid != participant.shared_query:
            participant.shared_query = valid
            await store.change(session, live.id)

    def drag_lab(self, code: str, token: str, query: Mapping[str, str], drags: Drags) -> None:
        """The lab state of the student holding ``token``, as they drag in class ``code``:
        validated now (a refusal names its field), written with the others sent within a
        moment where it belongs (app/live/drags.py)."""
        drags.put(code, token, valid_lab_query(query))

    def has_lab(self, lesson: str) -> bool:
        """Whether the lesson of this slug (a class's) has the gradient lab."""
        return self.lesson_of_slug(lesson).parts.gradient_lab


def _clash_message(nickname: str, clash: str | None) -> str:
    if clash is None or clash == nickname:
        return f"“{nickname}” is taken in this class; choose another."
    if nickname_key(clash) == nickname_key(nickname):
        return f"“{nickname}” is taken in this class (as “{clash}”); choose another."
    return (
        f"“{nickname}” looks like “{clash}”, already in this class (one could not be told from"
        " the other); choose another."
    )


def answer_refusal(live: LiveClass, question_id: str, round: int = 1) -> str:
    """Why an answer to ``question_id`` in vote ``round`` is refused now ("" when it is taken)."""
    if live.ended_at is not None:
        return "The class has ended: answers are closed."
    if live.question != question_id:
        return "That is not the question being asked now; the page shows the current one."
    if live.phase == "revealed":
        return "The answer has been revealed: answers to this question are closed."
    if round != live.round:
        if round < live.round:
            return "Vote 1 has closed and vote 2 is open: the page now shows vote 2."
        return "Vote 2 of this question is not open; the page shows the vote that is."
    if live.phase == "paused":
        return "The instructor has paused answering; wait for them to open it again."
    return ""


def revote_refusal(live: LiveClass) -> str:
    """Why vote 2 cannot open now ("" when it can)."""
    if live.ended_at is not None:
        return "The class has ended."
    if live.question is None:
        return "No question has been asked yet."
    if live.rounds != 2:
        return "This question was asked for one vote: ask it for two votes to re-vote."
    if live.phase == "revealed":
        return "The answer has been revealed: ask the question again for a new vote."
    if live.round == 2:
        return "Vote 2 is open already."
    return ""


def _whole(text: str, field: str, allowed: Sequence[int], what: str) -> int:
    raw = text.strip()
    value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 6 else None
    if value is None or value not in allowed:
        raise InvalidError(f"The field “{field}” must be {what} (got {raw[:20]!r}).", field)
    return value


def read_rounds(text: str) -> int:
    """A question's number of votes: "1" or "2" ("" is 1)."""
    return _whole(text or "1", "rounds", ROUNDS, "1 (one vote) or 2 (vote, discuss, re-vote)")


def read_round(text: str) -> int:
    """The vote an answer is for, as the student's page says it ("" is vote 1)."""
    return _whole(text or "1", "round", ROUNDS, "1 or 2")


def read_seconds(text: str) -> int:
    low, high = TIMER_S
    allowed = range(low, high + 1)
    return _whole(text, "seconds", allowed, f"a whole number of seconds from {low} to {high}")


def read_confidence(text: str) -> str | None:
    """How sure the student says they are: "sure", "unsure", or nothing ("")."""
    if not text:
        return None
    if text not in CONFIDENCES:
        raise InvalidError(
            f"The field “confidence” must be “sure”, “unsure” or empty (got {text[:20]!r}).",
            "confidence",
        )
    return text


def shared_lab_view(query: str) -> LabView | None:
    """The figures of a stored lab state ("": none)."""
    return lab_panel(dict(parse_qsl(query))).view if query else None


def valid_lab_query(query: Mapping[str, str]) -> str:
    """The lab's canonical query of a valid state, within ``SHARED_STATE_MAX`` characters;
    else the first field at fault (the longest one when the state is too long)."""
    panel = lab_panel(query)
    if panel.view is None or not panel.query:
        error = panel.errors[0] if panel.errors else None
        if error is None:
            raise InvalidError("The lab cannot compute this state.", "counts")
        raise InvalidError(error.message, error.param)
    if len(panel.query) > SHARED_STATE_MAX:
        field, value = max(panel.pairs, key=lambda pair: len(pair[1]))
        raise InvalidError(
            f"This lab state is {len(panel.query):,} characters long as a link; a shared state"
            f" holds at most {SHARED_STATE_MAX:,}. Its field “{field}” alone has"
            f" {len(value):,}: use fewer ranks, items or digits.",
            field,
        )
    return panel.query
