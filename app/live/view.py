"""A class's snapshot as its three pages show it: the host's, a student's and the projector's.

Every sentence here is chosen by the numbers it describes; templates only place it. Nicknames
reach the host's view alone (the projector's view has no field that could hold one).
"""

import io
from dataclasses import dataclass
from functools import lru_cache

import segno
from markupsafe import Markup

from app.lab.view import LabView
from app.lesson.render import RenderedQuestion
from app.live.service import ClassState, InvalidError, Snapshot, Student


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
    correct_count: str  # right of answered so far ("2 of 3"), or "none yet"
    shared: bool


def _row(student: Student, qid: str | None) -> RosterRow:
    given = student.answers.get(qid) if qid else None
    right = sum(1 for _, correct in student.answers.values() if correct)
    return RosterRow(
        id=student.id,
        nickname=student.nickname,
        answer=f"option {given[0]}" if given else "",
        correct_count=f"{right} of {len(student.answers)}" if student.answers else "none yet",
        shared=bool(student.shared_query),
    )


def _question_id(snapshot: Snapshot) -> str | None:
    return snapshot.question.question.id if snapshot.question else None


# How many students' rows the dashboard shows: a lecture hall's 2,000 are counted there and
# listed page by page on the roster's own page (ROSTER_PAGE rows a page).
ATTENTION_ROWS = 12
ROSTER_PAGE = 100

# The roster page's filters: each one's name in the address, its words, and who it keeps.
FILTERS = {
    "all": "All students",
    "waiting": "Not answered yet",
    "answered": "Answered",
    "shared": "Shared a lab state",
}


@dataclass(frozen=True, slots=True)
class RosterCounts:
    """The class counted as the roster's filters split it."""

    joined: int
    answered: int  # the current question
    shared: int
    asked: bool  # a question is asked (else no one is waiting for an answer)

    @property
    def waiting(self) -> int:
        return self.joined - self.answered if self.asked else 0

    def of(self, kind: str) -> int:
        return {
            "all": self.joined,
            "waiting": self.waiting,
            "answered": self.answered,
            "shared": self.shared,
        }[kind]

    @property
    def shown(self) -> tuple[tuple[str, int, str], ...]:
        """The counts a page shows, each with its filter: (kind, number, words after it); who
        answered or not only while a question is asked."""
        kinds = ("all", "waiting", "answered", "shared") if self.asked else ("all", "shared")
        words = {"all": "joined", "waiting": "not answered yet", "answered": "answered"}
        return tuple((kind, self.of(kind), words.get(kind, "shared a lab state")) for kind in kinds)


def _waiting(student: Student, qid: str | None) -> bool:
    return qid is not None and qid not in student.answers


def _kept(kind: str, student: Student, qid: str | None) -> bool:
    if kind == "waiting":
        return _waiting(student, qid)
    if kind == "answered":
        return qid is not None and qid in student.answers
    if kind == "shared":
        return bool(student.shared_query)
    return True


def roster_counts(snapshot: Snapshot) -> RosterCounts:
    qid = _question_id(snapshot)
    students = snapshot.students.values()
    return RosterCounts(
        joined=len(snapshot.students),
        answered=sum(1 for s in students if qid is not None and qid in s.answers),
        shared=sum(1 for s in students if s.shared_query),
        asked=qid is not None,
    )


@dataclass(frozen=True, slots=True)
class Attention:
    """The students the dashboard lists: at most ``ATTENTION_ROWS``, those who need the
    instructor first (who shared a lab state, then who has not answered the current question,
    then the others), newest first within each."""

    counts: RosterCounts
    rows: tuple[RosterRow, ...]

    @property
    def caption(self) -> str:
        joined, shown = self.counts.joined, len(self.rows)
        if not joined:
            return "No one has joined yet."
        if joined == 1:
            return "The one student here."
        first = [
            words
            for words, number in (
                ("who shared a lab state", self.counts.shared),
                ("who has not answered", self.counts.waiting),
            )
            if number
        ]
        order = ": " + ", then ".join([*first, "the others"]) + ";" if first else ","
        whom = f"All {joined} students" if shown == joined else f"{shown} of {joined} students"
        return f"{whom}{order} newest first."


def attention(snapshot: Snapshot, size: int = ATTENTION_ROWS) -> Attention:
    qid = _question_id(snapshot)
    newest_first = list(snapshot.students.values())[::-1]
    ranked = sorted(
        newest_first, key=lambda s: (not s.shared_query, not _waiting(s, qid))
    )  # stable: newest first within each rank
    rows = tuple(_row(student, qid) for student in ranked[:size])
    return Attention(roster_counts(snapshot), rows)


@dataclass(frozen=True, slots=True)
class RosterPage:
    """One page of the full roster, filtered: the students in the order they joined."""

    counts: RosterCounts
    kind: str  # one of FILTERS
    number: int  # from 1
    pages: int
    rows: tuple[RosterRow, ...]
    first: int  # the first row's place in the filtered list, from 1

    @property
    def caption(self) -> str:
        total, joined = self.counts.of(self.kind), self.counts.joined
        if not joined:
            return "No one has joined yet."
        if not total:
            return f"None of the {plural(joined, 'student')}."
        listed = f"{total} of {plural(joined, 'student')}, in the order they joined"
        if self.pages == 1:
            return f"{listed}."
        last = self.first + len(self.rows) - 1
        return f"{listed}: {self.first}-{last} on page {self.number} of {self.pages}."


def roster_page(snapshot: Snapshot, kind: str, number: int) -> RosterPage:
    """Page ``number`` of the students ``kind`` keeps; InvalidError naming the field when the
    roster has no such filter or page."""
    if kind not in FILTERS:
        names = ", ".join(FILTERS)
        raise InvalidError(f"The field “show” must be one of {names}.", "show")
    qid = _question_id(snapshot)
    kept = [s for s in snapshot.students.values() if _kept(kind, s, qid)]
    pages = max(1, -(-len(kept) // ROSTER_PAGE))
    if not 1 <= number <= pages:
        raise InvalidError(
            f"The field “page” must be a page from 1 to {pages}: this list of the roster"
            f" has {plural(pages, 'page')}.",
            "page",
        )
    start = (number - 1) * ROSTER_PAGE
    rows = tuple(_row(s, qid) for s in kept[start : start + ROSTER_PAGE])
    return RosterPage(roster_counts(snapshot), kind, number, pages, rows, start + 1)


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
