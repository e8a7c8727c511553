"""The class's operations, each on the request's one session (one transaction): the caller
commits, then tells the streams (app/live/deps.py). What a page shows is read here too.

A refusal is a :class:`RefusalError` naming the form field at fault; its kind (not found, not
allowed, conflict, invalid, …) is for the routes' layer to answer with a status.
"""

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
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
from app.live.join import JoinError, nickname_key, read_join_code, read_nickname
from app.live.store import Answer, LiveClass, Participant, now


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


def _students(roster: store.Roster) -> dict[int, Student]:
    answers: dict[int, dict[str, tuple[int, bool]]] = {}
    for who, question, choice, correct in roster.answers:
        answers.setdefault(who, {})[question] = (choice, correct)
    return {
        who: Student(who, nickname, shared, answers.get(who, {}))
        for who, nickname, shared in roster.participants
    }


class LiveService:
    """The live classes of one server: the lessons they follow and the limit on classes."""

    def __init__(self, course: ServedLessons, class_limit: int) -> None:
        self.course = course
        self.class_limit = class_limit

    # ---- reading ----------------------------------------------------------------------

    def lesson_of(self, live: LiveClass) -> CourseLesson:
        return self.course.lesson(live.lesson) or self.course.lessons[0]

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
        roster = await store.roster(session, participant.class_id, participant.id)
        return _students(roster)[participant.id]

    async def export(self, session: AsyncSession, live: LiveClass) -> Sequence[tuple[str, Answer]]:
        return await store.export_rows(session, live.id)

    # ---- the instructor -----------------------------------------------------------------

    async def create(self, session: AsyncSession, lesson_slug: str, open_start: bool) -> LiveClass:
        """A new class following ``lesson_slug``; past the limit when starting is open."""
        if self.course.lesson(lesson_slug) is None:
            raise InvalidError(
                f"The field “lesson” names no lesson served here ({lesson_slug[:40]!r});"
                " choose one of those listed.",
                "lesson",
            )
        if open_start and await store.count_classes(session) >= self.class_limit:
            limit = self.class_limit
            raise LimitReachedError(
                f"This server already keeps {limit} {'class' if limit == 1 else 'classes'},"
                " its limit while starting one needs no password. Delete a finished class,"
                " or set ATLAS_INSTRUCTOR_PASSWORD to lift the limit."
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
                async with session.begin_nested():
                    session.add(live)
            except IntegrityError:
                continue
            return live
        raise BusyError("Could not find a free class code; try again.")

    async def ask(self, session: AsyncSession, live: LiveClass, question_id: str) -> None:
        lesson = self.lesson_of(live)
        if lesson.rendered.question(question_id) is None:
            known = ", ".join(q.question.id for q in lesson.rendered.questions)
            raise InvalidError(
                f"Unknown question {question_id[:40]!r} (one of {known}).", "question"
            )
        await store.change(session, live.id, question=question_id, phase="open")

    async def set_phase(self, session: AsyncSession, live: LiveClass, phase: str) -> None:
        if live.question is None:
            raise ConflictError("No question has been asked yet.")
        await store.change(session, live.id, phase=phase)

    async def show_results_live(self, session: AsyncSession, live: LiveClass, shown: bool) -> None:
        await store.change(session, live.id, show_live=shown)

    def _has_lab(self, live: LiveClass) -> None:
        if not self.lesson_of(live).parts.gradient_lab:
            raise ConflictError("This class's lesson has no gradient lab to share a state of.")

    async def share_lab(
        self, session: AsyncSession, live: LiveClass, query: Mapping[str, str]
    ) -> None:
        """Everyone's page shows this lab state: every student's lab moves to it (their
        sliders, and the state the dashboard counts them at), from which they explore on."""
        self._has_lab(live)
        valid = valid_lab_query(query)
        await store.set_every_lab_state(session, live.id, valid)
        await store.change(session, live.id, lab_query=valid)

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
        """The student and their answers (by the schema's cascade)."""
        student = await store.participant_by_id(session, live.id, participant_id)
        if student is None:
            raise InvalidError("No such student in this class.", "participant")
        await session.delete(student)
        await store.change(session, live.id)

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
        key = nickname_key(nickname)
        taken = ConflictError(f"“{nickname}” is taken in this class; choose another.", "nickname")
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
        try:
            async with session.begin_nested():
                session.add(student)
        except IntegrityError:  # the same nickname, joined at the same moment
            raise taken from None
        await store.change(session, live.id)
        return student, True

    async def answer(
        self,
        session: AsyncSession,
        live: LiveClass,
        participant: Participant,
        form: Mapping[str, Sequence[object]],
    ) -> None:
        """Store the student's answer to the current question (their last one counts)."""
        lesson = self.lesson_of(live)
        try:
            question, chosen = read_answer([q.question for q in lesson.rendered.questions], form)
        except AnswerError as error:
            raise InvalidError(error.message, error.field) from None
        refusal = answer_refusal(live, question.id)
        if refusal:
            raise ConflictError(refusal, "question")
        correct = check(question, chosen).correct
        await store.save_answer(session, live.id, participant.id, question.id, chosen, correct)
        await store.change(session, live.id)

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

    def drag_lab(
        self,
        live: LiveClass,
        participant: Participant,
        query: Mapping[str, str],
        drags: Drags,
    ) -> None:
        """The student's lab state as they drag: validated now (a refusal names its field),
        written with the others sent within a moment (app/live/drags.py); the same state
        again changes nothing."""
        self._has_lab(live)
        if live.ended_at is not None:
            raise ConflictError("This class has ended.")
        valid = valid_lab_query(query)
        latest = drags.latest(participant.id)
        if valid != (participant.shared_query if latest is None else latest):
            drags.put(live.id, participant.id, valid)


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
    """The lab's canonical query of a valid state; else the first field at fault."""
    panel = lab_panel(query)
    if panel.view is None or not panel.query:
        error = panel.errors[0] if panel.errors else None
        if error is None:
            raise InvalidError("The lab cannot compute this state.", "counts")
        raise InvalidError(error.message, error.param)
    return panel.query
