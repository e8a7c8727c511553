"""A class's snapshot as its three pages show it: the host's, a student's and the projector's.

Every sentence here is chosen by the numbers it describes; templates only place it. Nicknames
reach the host's view alone (the projector's view has no field that could hold one).
"""

import io
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import segno
from markupsafe import Markup

from app.lab.view import LabView
from app.lesson.render import RenderedQuestion
from app.live.service import ClassState, Snapshot, Student


def plural(count: int, one: str) -> str:
    return f"{count} {one if count == 1 else one + 's'}"


@lru_cache(maxsize=64)
def qr_svg(url: str) -> Markup:
    """The join address as a QR code, inline SVG (offline: drawn here, by segno)."""
    buffer = io.BytesIO()
    segno.make(url, error="m").save(
        buffer,
        kind="svg",
        xmldecl=False,
        svgns=True,
        svgclass="qr",
        scale=1,
        border=2,
        omitsize=True,
        title="QR code of the join address",
        dark="#000",
        light="#fff",
    )
    # segno's own SVG: its only text is the title above and path data.
    return Markup(buffer.getvalue().decode())


@dataclass(frozen=True, slots=True)
class Bar:
    """One choice of the distribution: its count, share of the answers and width in percent."""

    number: int
    html: Markup
    count: int
    percent: int
    correct: bool


@dataclass(frozen=True, slots=True)
class Distribution:
    question: RenderedQuestion
    answered: int
    joined: int
    bars: tuple[Bar, ...]

    @property
    def summary(self) -> str:
        if not self.joined:
            return "No one has joined yet."
        if not self.answered:
            return f"No answers yet from the {plural(self.joined, 'student')} here."
        if self.answered == self.joined:
            return (
                f"All {plural(self.joined, 'student')} answered."
                if self.joined > 1
                else ("The one student here answered.")
            )
        return f"{self.answered} of {plural(self.joined, 'student')} answered."


def distribution(snapshot: Snapshot) -> Distribution | None:
    question = snapshot.question
    if question is None:
        return None
    qid = question.question.id
    counts = [0] * len(question.options_html)
    for student in snapshot.students.values():
        given = student.answers.get(qid)
        if given is not None and 1 <= given[0] <= len(counts):
            counts[given[0] - 1] += 1
    answered = sum(counts)
    bars = tuple(
        Bar(
            number=number,
            html=html,
            count=counts[number - 1],
            percent=round(100 * counts[number - 1] / answered) if answered else 0,
            correct=number == question.question.answer_number,
        )
        for number, html in question.choices
    )
    return Distribution(question, answered, len(snapshot.students), bars)


PHASE_WORDS = {
    "open": "Answering is open.",
    "paused": "Answering is paused.",
    "revealed": "The answer is revealed; answering is closed.",
}


def status(snapshot: Snapshot) -> str:
    """The class's state in one sentence."""
    if snapshot.ended:
        return "This class has ended: no one can join or answer."
    if snapshot.question is None:
        return "No question asked yet."
    return f"Question {snapshot.question.question.number}: {PHASE_WORDS[snapshot.phase]}"


@dataclass(frozen=True, slots=True)
class RosterRow:
    id: int
    nickname: str
    answer: str  # the current question's choice, "" when none
    correct_count: str
    projectable: bool


def roster(snapshot: Snapshot, only: Iterable[int] | None = None) -> tuple[RosterRow, ...]:
    """Every student's row in the order they joined, or only these students' rows."""
    qid = snapshot.question.question.id if snapshot.question else None
    rows = []
    chosen = snapshot.students.values() if only is None else [snapshot.students[w] for w in only]
    for student in chosen:
        given = student.answers.get(qid) if qid else None
        right = sum(1 for _, correct in student.answers.values() if correct)
        rows.append(
            RosterRow(
                id=student.id,
                nickname=student.nickname,
                answer=f"option {given[0]}" if given else "",
                correct_count=f"{right} of {len(student.answers)} correct"
                if student.answers
                else "no answers yet",
                # Every row offers projecting when the lesson has a lab (a student without a
                # state is refused then): a row changes on no drag, so 500 students starting
                # to drag do not resend 500 rows.
                projectable=snapshot.lesson.parts.gradient_lab,
            )
        )
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class SharedLab:
    """A lab state the class looks at: its figures and the link that opens it in the lab."""

    view: LabView
    href: str


def shared_lab(view: LabView | None, query: str, lesson_path: str) -> SharedLab | None:
    return SharedLab(view, f"{lesson_path}?{query}#lab") if view is not None else None


@dataclass(frozen=True, slots=True)
class StudentView:
    """One student's page: the question with their answer, their verdict once revealed."""

    student: Student
    question: RenderedQuestion | None
    chosen: int | None
    can_answer: bool
    revealed: bool
    correct: bool | None
    note: str

    @property
    def key(self) -> tuple[object, ...]:
        """What this page depends on: a stream sends it again only when this changes."""
        qid = self.question.question.id if self.question else None
        return (qid, self.chosen, self.can_answer, self.revealed, self.note)


def student_view(state: ClassState, student: Student) -> StudentView:
    question = state.question
    given = student.answers.get(question.question.id) if question else None
    revealed = question is not None and state.phase == "revealed"
    can_answer = question is not None and state.phase == "open" and not state.ended
    if state.ended:
        note = "This class has ended. Thank you for taking part."
    elif question is None:
        note = "Waiting for the instructor's first question."
    elif revealed:
        note = "" if given else "You did not answer this question."
    elif state.phase == "paused":
        note = "The instructor has paused answering."
    elif given:
        note = f"Your answer: option {given[0]}. You may change it while answering is open."
    else:
        note = "Choose one answer."
    return StudentView(
        student=student,
        question=question,
        chosen=given[0] if given else None,
        can_answer=can_answer,
        revealed=revealed,
        correct=given[1] if (given and revealed) else None,
        note=note,
    )
