"""A class's snapshot as its three pages show it: the host's, a student's and the projector's.

Every sentence here is chosen by the numbers it describes; templates only place it. Nicknames
reach the host's view alone (the projector's view has no field that could hold one).
"""

import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import segno
from markupsafe import Markup

from app.lab.view import LabView
from app.lesson.render import RenderedQuestion
from app.live.service import ClassState, InvalidError, Snapshot, Student, Vote


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


def percent(part: int, whole: int) -> int:
    """``part`` of ``whole`` in whole percent (0 of nothing)."""
    return round(100 * part / whole) if whole else 0


def _width(part: int, whole: int) -> str:
    """An SVG width on a track of 100: ``part`` of ``whole``, unrounded to the eye."""
    return f"{100 * part / whole:.2f}" if whole else "0"


@dataclass(frozen=True, slots=True)
class Bar:
    """One choice of the distribution: its count, share of the answers and width in percent,
    and how many of its answers were said sure or unsure (the instructor's split)."""

    number: int
    html: Markup
    count: int
    percent: int
    correct: bool
    sure: int = 0
    unsure: int = 0
    answered: int = 0  # every answer of the vote: the track's whole

    @property
    def split(self) -> tuple[tuple[str, str, str], ...]:
        """The bar's segments on its track: (class, x, width) for sure, unsure, unsaid."""
        unsaid = self.count - self.sure - self.unsure
        x, segments = 0, []
        for name, part in (("sure", self.sure), ("unsure", self.unsure), ("unsaid", unsaid)):
            segments.append((name, _width(x, self.answered), _width(part, self.answered)))
            x += part
        return tuple(segments)

    @property
    def confidence(self) -> str:
        """The split in words ("" when no one said)."""
        if not (self.sure or self.unsure):
            return ""
        unsaid = self.count - self.sure - self.unsure
        parts = [f"{self.sure} sure", f"{self.unsure} guessing"]
        return ", ".join(parts + ([f"{unsaid} did not say"] if unsaid else []))


@dataclass(frozen=True, slots=True)
class Distribution:
    question: RenderedQuestion
    answered: int
    joined: int
    bars: tuple[Bar, ...]
    round: int = 1
    rounds: int = 1

    @property
    def vote(self) -> str:
        """Which vote this is, for a question asked for two ("" for one)."""
        return f"Vote {self.round} of {self.rounds}" if self.rounds > 1 else ""

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


def tally(question: RenderedQuestion, votes: Iterable[Vote | None]) -> tuple[Bar, ...]:
    """The bars of one vote on ``question``: each option's answers, sure and unsure."""
    options = len(question.options_html)
    counts, sure, unsure = [0] * options, [0] * options, [0] * options
    for vote in votes:
        if vote is None or not 1 <= vote.choice <= options:
            continue
        counts[vote.choice - 1] += 1
        sure[vote.choice - 1] += vote.confidence == "sure"
        unsure[vote.choice - 1] += vote.confidence == "unsure"
    answered = sum(counts)
    return tuple(
        Bar(
            number=number,
            html=html,
            count=counts[number - 1],
            percent=percent(counts[number - 1], answered),
            correct=number == question.question.answer_number,
            sure=sure[number - 1],
            unsure=unsure[number - 1],
            answered=answered,
        )
        for number, html in question.choices
    )


def distribution(snapshot: Snapshot) -> Distribution | None:
    """The current question's bars in the vote open now (or the last one, once revealed)."""
    question = snapshot.question
    if question is None:
        return None
    qid = question.question.id
    votes = [student.vote(qid, snapshot.round) for student in snapshot.students.values()]
    bars = tally(question, votes)
    answered = sum(bar.count for bar in bars)
    return Distribution(
        question, answered, len(snapshot.students), bars, snapshot.round, snapshot.rounds
    )


@dataclass(frozen=True, slots=True)
class Share:
    """How many answers of one vote were right."""

    correct: int
    answered: int

    @property
    def percent(self) -> int:
        return percent(self.correct, self.answered)

    @property
    def words(self) -> str:
        if not self.answered:
            return "no answers"
        return f"{self.correct} of {self.answered} right ({self.percent} %)"


@dataclass(frozen=True, slots=True)
class ShiftRow:
    """One option in both votes: its answers in vote 1 and in vote 2."""

    number: int
    html: Markup
    correct: bool
    first: int
    second: int
    first_width: str
    second_width: str


@dataclass(frozen=True, slots=True)
class Shift:
    """Vote 1 against vote 2 on one question: per option, the share right before and after,
    and how many students moved to the answer or away from it."""

    rows: tuple[ShiftRow, ...]
    before: Share
    after: Share
    both: int  # the students who answered both votes: those who could move
    to_right: int  # of them, wrong in vote 1 and right in vote 2
    to_wrong: int  # of them, right in vote 1 and wrong in vote 2

    @property
    def summary(self) -> str:
        shares = f"Right: {self.before.words} in vote 1, {self.after.words} in vote 2."
        if not self.both:
            return f"{shares} No one answered both votes."
        return (
            f"{shares} Of {plural(self.both, 'student')} who answered both votes,"
            f" {self.to_right} moved to the answer and {self.to_wrong} away from it."
        )


def shift(question: RenderedQuestion, students: Iterable[Student]) -> Shift:
    """Vote 1 against vote 2 on ``question``."""
    qid = question.question.id
    pairs = [(student.vote(qid, 1), student.vote(qid, 2)) for student in students]
    first = tally(question, [one for one, _ in pairs])
    second = tally(question, [two for _, two in pairs])
    widest = max([bar.count for bar in first + second] + [1])
    rows = tuple(
        ShiftRow(
            a.number,
            a.html,
            a.correct,
            a.count,
            b.count,
            _width(a.count, widest),
            _width(b.count, widest),
        )
        for a, b in zip(first, second, strict=True)
    )

    def share(bars: tuple[Bar, ...]) -> Share:
        return Share(sum(b.count for b in bars if b.correct), sum(b.count for b in bars))

    both = [(one, two) for one, two in pairs if one is not None and two is not None]
    to_right = sum(1 for one, two in both if two.correct and not one.correct)
    to_wrong = sum(1 for one, two in both if one.correct and not two.correct)
    return Shift(rows, share(first), share(second), len(both), to_right, to_wrong)


def current_shift(snapshot: Snapshot) -> Shift | None:
    """The current question's shift, once its vote 2 is open."""
    if snapshot.question is None or snapshot.round < 2:
        return None
    return shift(snapshot.question, snapshot.students.values())


@dataclass(frozen=True, slots=True)
class Timer:
    """The discussion timer: when it ends (the page's script counts down to it)."""

    ends: datetime

    @property
    def iso(self) -> str:
        return self.ends.strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def clock(self) -> str:
        return self.ends.strftime("%H:%M:%S UTC")


def timer(state: ClassState) -> Timer | None:
    """The running discussion timer, if any (cleared by the re-vote, the reveal, a question)."""
    if state.timer_ends_at is None or state.ended or state.phase == "revealed":
        return None
    return Timer(state.timer_ends_at)


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
    number = snapshot.question.question.number
    vote = f", vote {snapshot.round} of 2" if snapshot.rounds == 2 else ""
    return f"Question {number}{vote}: {PHASE_WORDS[snapshot.phase]}"


@dataclass(frozen=True, slots=True)
class RosterRow:
    id: int
    nickname: str
    answer: str  # the current question's choice, "" when none
    correct_count: str  # right of answered so far ("2 of 3"), or "none yet"
    shared: bool


def _row(student: Student, qid: str | None, round: int) -> RosterRow:
    """A student's row: their answer in the vote open now (both votes once vote 2 is open) and
    how many of their answers were right, re-votes kept out of the score (KlickerUZH): each
    question counts its vote 1."""
    first = student.vote(qid, 1) if qid else None
    answer = f"option {first.choice}" if first else ""
    if round == 2:
        again = student.vote(qid, 2) if qid else None
        answer = f"{answer or 'none'} → " + (f"option {again.choice}" if again else "none")
    scored = [vote for (_, vote_round), vote in student.votes.items() if vote_round == 1]
    right = sum(1 for vote in scored if vote.correct)
    return RosterRow(
        id=student.id,
        nickname=student.nickname,
        answer=answer,
        correct_count=f"{right} of {len(scored)} correct" if scored else "no answers yet",
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


def _answered(student: Student, qid: str | None, round: int) -> bool:
    """Whether the student answered the current question in the vote open now."""
    return qid is not None and student.vote(qid, round) is not None


def _kept(kind: str, student: Student, qid: str | None, round: int) -> bool:
    if kind == "waiting":
        return qid is not None and not _answered(student, qid, round)
    if kind == "answered":
        return _answered(student, qid, round)
    if kind == "shared":
        return bool(student.shared_query)
    return True


def roster_counts(snapshot: Snapshot) -> RosterCounts:
    qid = _question_id(snapshot)
    students = snapshot.students.values()
    return RosterCounts(
        joined=len(snapshot.students),
        answered=sum(1 for s in students if _answered(s, qid, snapshot.round)),
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
        newest_first, key=lambda s: (not s.shared_query, _answered(s, qid, snapshot.round))
    )  # stable: newest first within each rank
    rows = tuple(_row(student, qid, snapshot.round) for student in ranked[:size])
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
    kept = [s for s in snapshot.students.values() if _kept(kind, s, qid, snapshot.round)]
    pages = max(1, -(-len(kept) // ROSTER_PAGE))
    if not 1 <= number <= pages:
        raise InvalidError(
            f"The field “page” must be a page from 1 to {pages}: this list of the roster"
            f" has {plural(pages, 'page')}.",
            "page",
        )
    start = (number - 1) * ROSTER_PAGE
    rows = tuple(_row(s, qid, snapshot.round) for s in kept[start : start + ROSTER_PAGE])
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
    """One student's page: the question with their answer in the vote open now (and their
    first answer during a re-vote), their verdict once revealed, the discussion timer."""

    student: Student
    question: RenderedQuestion | None
    chosen: int | None
    can_answer: bool
    revealed: bool
    correct: bool | None
    note: str
    round: int = 1
    rounds: int = 1
    confidence: str = ""  # what they said of the answer shown ("" if nothing)
    first: Vote | None = None  # their vote 1, shown during and after vote 2
    timer: Timer | None = None

    @property
    def vote(self) -> str:
        return f"Vote {self.round} of {self.rounds}" if self.rounds > 1 else ""

    @property
    def key(self) -> tuple[object, ...]:
        """What this page depends on: a stream sends it again only when this changes."""
        qid = self.question.question.id if self.question else None
        return (
            qid,
            self.chosen,
            self.can_answer,
            self.revealed,
            self.note,
            self.round,
            self.rounds,
            self.confidence,
            self.first,
            self.timer,
        )


def student_view(state: ClassState, student: Student) -> StudentView:
    question = state.question
    qid = question.question.id if question else ""
    given = student.vote(qid, state.round) if question else None
    first = student.vote(qid, 1) if question and state.round == 2 else None
    revealed = question is not None and state.phase == "revealed"
    can_answer = question is not None and state.phase == "open" and not state.ended
    if state.ended:
        note = "This class has ended. Thank you for taking part."
    elif question is None:
        note = "Waiting for the instructor's first question."
    elif revealed:
        note = "" if given else "You did not answer this vote."
    elif state.phase == "paused":
        note = "The instructor has paused answering."
    elif given:
        note = f"Your answer: option {given.choice}. You may change it while answering is open."
    elif state.round == 2:
        # Their first answer is shown above the options (``first``).
        note = "Vote 2: answer again, after talking it over."
        if first is None:
            note = "You did not answer vote 1. Answer vote 2, after talking it over."
    else:
        note = "Choose one answer."
    return StudentView(
        student=student,
        question=question,
        chosen=given.choice if given else None,
        can_answer=can_answer,
        revealed=revealed,
        correct=given.correct if (given and revealed) else None,
        note=note,
        round=state.round,
        rounds=state.rounds,
        confidence=given.confidence if given else "",
        first=first,
        timer=timer(state),
    )
