"""The class's operations: each one a transaction that bumps the class's version, then a
``publish`` (the database first, then the word: a missed message costs a look, never an answer).

A refusal is a :class:`LiveError` naming the form field and the HTTP status the routes answer.
"""

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl

from sqlalchemy.exc import IntegrityError

from app.lab.panel import lab_panel
from app.lab.view import LabView
from app.lesson.course import CourseLesson, ServedLessons
from app.lesson.quiz import AnswerError, check, read_answer
from app.lesson.render import RenderedQuestion
from app.live import store
from app.live.broker import Broker
from app.live.codes import new_code
from app.live.join import JoinError, nickname_key, read_join_code, read_nickname
from app.live.store import Answer, LiveClass, Participant, Store, now


@dataclass
class LiveError(Exception):  # not frozen: raising sets its traceback
    """A refused operation: ``field`` names the form field at fault ("" for none)."""

    status: int
    message: str
    field: str = ""


@dataclass(frozen=True, slots=True)
class Student:
    """A student as a snapshot holds them."""

    id: int
    nickname: str
    shared_query: str
    answers: Mapping[str, tuple[int, bool]]  # question id → (choice, correct)


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


class LiveService:
    """The live classes of one server: the store, the broker and the lessons they follow."""

    def __init__(self, db: Store, broker: Broker, course: ServedLessons, class_limit: int) -> None:
        self.db = db
        self.broker = broker
        self.course = course
        self.class_limit = class_limit

    # ---- reading ----------------------------------------------------------------------

    def lesson_of(self, live: LiveClass) -> CourseLesson:
        return self.course.lesson(live.lesson) or self.course.lessons[0]

    async def find(self, typed_code: str) -> LiveClass:
        """The class of a code as typed; 404 when there is none."""
        try:
            code = read_join_code(typed_code)
        except JoinError as error:
            shown = typed_code.strip()[:12]
            message = f"There is no class with the code “{shown}”: {error.message}"
            raise LiveError(404, message, "code") from None
        async with self.db.session() as session:
            live = await store.class_by_code(session, code)
        if live is None:
            raise LiveError(404, f"There is no class with the code {code}.", "code")
        return live

    async def snapshot(self, class_id: int, *, for_feed: bool = False) -> Snapshot | None:
        """The class as its pages show it now; None once it is deleted. ``for_feed``: read for
        all of a worker's streams, on the store's connections kept for that."""
        read = await self._read(class_id, None, for_feed)
        if read is None:
            return None
        live, students = read
        return Snapshot(**self._state(live), students=students)

    async def student_state(
        self, class_id: int, participant_id: int
    ) -> tuple[ClassState, Student | None] | None:
        """The class and one student as that student's page shows them: the class's row and
        the student's own answers, not the whole class's (an answer's acknowledgement reads
        this). None once the class is deleted; no student once they are removed."""
        read = await self._read(class_id, participant_id, False)
        if read is None:
            return None
        live, students = read
        return ClassState(**self._state(live)), students.get(participant_id)

    async def _read(
        self, class_id: int, participant_id: int | None, for_feed: bool
    ) -> tuple[LiveClass, dict[int, Student]] | None:
        """The class's row and its students (or the one student) with their answers."""
        async with self.db.feed_session() if for_feed else self.db.session() as session:
            live = await session.get(LiveClass, class_id)
            if live is None:
                return None
            roster = await store.roster(session, class_id, participant_id)
        answers: dict[int, dict[str, tuple[int, bool]]] = {}
        for who, question, choice, correct in roster.answers:
            answers.setdefault(who, {})[question] = (choice, correct)
        students = {
            who: Student(who, nickname, shared, answers.get(who, {}))
            for who, nickname, shared in roster.participants
        }
        return live, students

    def _state(self, live: LiveClass) -> dict[str, Any]:
        """The fields of :class:`ClassState` from the class's row."""
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
        }

    async def participant(self, live: LiveClass, token: str | None) -> Participant | None:
        if not token:
            return None
        async with self.db.session() as session:
            return await store.participant_by_token(session, live.id, token)

    async def export(self, live: LiveClass) -> Sequence[tuple[str, Answer]]:
        async with self.db.session() as session:
            return await store.export_rows(session, live.id)

    # ---- the instructor -----------------------------------------------------------------

    async def create(self, lesson_slug: str, open_start: bool) -> LiveClass:
        """A new class following ``lesson_slug``; 429 past the limit when starting is open."""
        if self.course.lesson(lesson_slug) is None:
            raise LiveError(422, "Choose one of the lessons listed.", "lesson")
        for _ in range(8):  # a repeated code is one in 887 million per class kept
            try:
                async with self.db.session() as session:
                    if open_start and await store.count_classes(session) >= self.class_limit:
                        raise LiveError(
                            429,
                            f"This server already keeps {self.class_limit}"
                            f" {'class' if self.class_limit == 1 else 'classes'}, its limit"
                            " while starting one needs no password. Delete a finished class,"
                            " or set ATLAS_INSTRUCTOR_PASSWORD to lift the limit.",
                        )
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
                    session.add(live)
                return live
            except IntegrityError:
                continue
        raise LiveError(503, "Could not find a free class code; try again.")

    async def _change(self, live: LiveClass, **values: object) -> None:
        async with self.db.session() as session:
            await store.bump(session, live.id, **values)
        self.broker.publish(live.id)

    async def ask(self, live: LiveClass, question_id: str) -> None:
        lesson = self.lesson_of(live)
        if lesson.rendered.question(question_id) is None:
            known = ", ".join(q.question.id for q in lesson.rendered.questions)
            raise LiveError(
                422, f"Unknown question {question_id[:40]!r} (one of {known}).", "question"
            )
        await self._change(live, question=question_id, phase="open")

    async def set_phase(self, live: LiveClass, phase: str) -> None:
        if phase not in store.PHASES:
            raise LiveError(422, "Unknown phase.", "phase")
        if live.question is None:
            raise LiveError(409, "No question has been asked yet.")
        await self._change(live, phase=phase)

    async def show_results_live(self, live: LiveClass, shown: bool) -> None:
        await self._change(live, show_live=shown)

    def _has_lab(self, live: LiveClass) -> None:
        if not self.lesson_of(live).parts.gradient_lab:
            raise LiveError(409, "This class's lesson has no gradient lab to share a state of.")

    async def share_lab(self, live: LiveClass, query: Mapping[str, str]) -> None:
        """Everyone's page shows this lab state (422 naming the field when it is not valid)."""
        self._has_lab(live)
        await self._change(live, lab_query=valid_lab_query(query))

    async def project(self, live: LiveClass, participant_id: int | None) -> None:
        """The projector shows this student's shared lab state (never their name), or none."""
        query = ""
        if participant_id is not None:
            async with self.db.session() as session:
                student = await store.participant_by_id(session, live.id, participant_id)
            if student is None or not student.shared_query:
                raise LiveError(422, "That student has shared no lab state.", "participant")
            query = student.shared_query
        await self._change(live, screen_query=query)

    async def remove(self, live: LiveClass, participant_id: int) -> None:
        async with self.db.session() as session:
            student = await store.participant_by_id(session, live.id, participant_id)
            if student is None:
                raise LiveError(422, "No such student in this class.", "participant")
            await store.remove_participant(session, participant_id)
            await store.bump(session, live.id)
        self.broker.publish(live.id)

    async def end(self, live: LiveClass) -> None:
        await self._change(live, ended_at=live.ended_at or now())

    async def delete(self, live: LiveClass) -> None:
        async with self.db.session() as session:
            await store.delete_class(session, live.id)
        self.broker.publish(live.id)

    async def purge(self, retention_days: float) -> int:
        async with self.db.session() as session:
            return await store.purge(session, retention_days)

    # ---- the students -------------------------------------------------------------------

    async def join(self, typed_code: str, typed_nickname: str) -> tuple[LiveClass, Participant]:
        live = await self.find(typed_code)
        if live.ended_at is not None:
            raise LiveError(
                409, "This class has ended; ask your instructor for a new code.", "code"
            )
        try:
            nickname = read_nickname(typed_nickname)
        except JoinError as error:
            raise LiveError(error.status, error.message, error.field) from None
        key = nickname_key(nickname)
        taken = LiveError(409, f"“{nickname}” is taken in this class; choose another.", "nickname")
        try:
            async with self.db.session() as session:
                if await store.nickname_taken(session, live.id, key):
                    raise taken
                student = Participant(
                    class_id=live.id,
                    nickname=nickname,
                    nickname_key=key,
                    token=secrets.token_urlsafe(24),
                    joined_at=now(),
                    shared_query="",
                )
                session.add(student)
                await session.flush()
                await store.bump(session, live.id)
        except IntegrityError:  # the same nickname, joined at the same moment
            raise taken from None
        self.broker.publish(live.id)
        return live, student

    async def answer(
        self, live: LiveClass, student: Participant, form: Mapping[str, Sequence[object]]
    ) -> None:
        """Store the student's answer to the current question (their last one counts)."""
        lesson = self.lesson_of(live)
        try:
            question, chosen = read_answer([q.question for q in lesson.rendered.questions], form)
        except AnswerError as error:
            raise LiveError(422, error.message, error.field) from None
        refusal = answer_refusal(live, question.id)
        if refusal:
            raise LiveError(409, refusal, "question")
        correct = check(question, chosen).correct
        for _ in range(2):
            try:
                async with self.db.session() as session:
                    current = await session.get(LiveClass, live.id)
                    if current is None:
                        raise LiveError(404, "This class has been deleted.")
                    refusal = answer_refusal(current, question.id)
                    if refusal:
                        raise LiveError(409, refusal, "question")
                    stored = await store.answer_of(session, student.id, question.id)
                    if stored is None:
                        stored = Answer(
                            class_id=live.id,
                            participant_id=student.id,
                            question=question.id,
                            choice=chosen,
                            correct=correct,
                            answered_at=now(),
                        )
                        session.add(stored)
                    else:
                        stored.choice, stored.correct, stored.answered_at = chosen, correct, now()
                    await store.bump(session, live.id)
                break
            except IntegrityError:  # two answers of one student at once: the second updates
                continue
        else:
            raise LiveError(503, "Your answer could not be stored just now; send it again.")
        self.broker.publish(live.id)

    async def share_own_lab(
        self, live: LiveClass, student: Participant, query: Mapping[str, str]
    ) -> None:
        self._has_lab(live)
        shared = valid_lab_query(query)
        async with self.db.session() as session:
            current = await store.participant_by_id(session, live.id, student.id)
            if current is None:
                raise LiveError(403, "You are no longer in this class.")
            current.shared_query = shared
            await store.bump(session, live.id)
        self.broker.publish(live.id)


def answer_refusal(live: LiveClass, question_id: str) -> str:
    """Why an answer to ``question_id`` is refused now ("" when it is taken)."""
    if live.ended_at is not None:
        return "The class has ended: answers are closed."
    if live.question != question_id:
        return "That is not the question being asked now; the page shows the current one."
    if live.phase == "revealed":
        return "The answer has been revealed: answers to this question are closed."
    if live.phase == "paused":
        return "The instructor has paused answering; wait for them to open it again."
    return ""


def shared_lab_view(query: str) -> LabView | None:
    """The figures of a stored lab state ("": none)."""
    return lab_panel(dict(parse_qsl(query))).view if query else None


def valid_lab_query(query: Mapping[str, str]) -> str:
    """The lab's canonical query of a valid state, or a 422 naming the first field at fault."""
    panel = lab_panel(query)
    if panel.view is None or not panel.query:
        error = panel.errors[0] if panel.errors else None
        if error is None:
            raise LiveError(422, "The lab cannot compute this state.", "counts")
        raise LiveError(422, error.message, error.param)
    return panel.query
