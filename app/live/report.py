"""The report after a class (``/class/{CODE}/report``): each question asked with its votes,
the share right in each and the shift between them, and each student's answers.

Built from a snapshot like the class's other pages; every number is counted here and the
template only places it. Re-votes are reported but scored nowhere (KlickerUZH's habit), and
there is no leaderboard or speed (docs/classroom.md says why).
"""

from dataclasses import dataclass

from app.lesson.render import RenderedQuestion
from app.live.service import ROUNDS, Snapshot, Student, Vote
from app.live.view import Bar, Share, Shift, plural, shift, tally


@dataclass(frozen=True, slots=True)
class VoteReport:
    """One vote on one question: its bars, the share right, and what the students said of
    their confidence."""

    round: int
    bars: tuple[Bar, ...]
    share: Share
    sure: Share  # the answers said sure, and how many of those were right
    unsure: int

    @property
    def confidence(self) -> str:
        if not (self.sure.answered or self.unsure):
            return "No one said how sure they were."
        wrong = self.sure.answered - self.sure.correct
        return (
            f"{self.sure.answered} said sure ({wrong} of them wrong),"
            f" {self.unsure} said they were guessing."
        )


@dataclass(frozen=True, slots=True)
class QuestionReport:
    question: RenderedQuestion
    votes: tuple[VoteReport, ...]  # vote 1, and vote 2 when anyone answered one
    shift: Shift | None


@dataclass(frozen=True, slots=True)
class Cell:
    """One student's answers to one question: vote 1, and vote 2 if the question had one."""

    first: Vote | None
    second: Vote | None
    revoted: bool  # the question had a vote 2


@dataclass(frozen=True, slots=True)
class StudentRow:
    nickname: str
    cells: tuple[Cell, ...]
    right: Share  # vote 1 of each question (re-votes are not scored)


@dataclass(frozen=True, slots=True)
class Report:
    code: str
    lesson_title: str
    ended: bool
    joined: int
    questions: tuple[QuestionReport, ...]
    students: tuple[StudentRow, ...]

    @property
    def summary(self) -> str:
        state = "The class has ended." if self.ended else "The class is still running."
        asked = plural(len(self.questions), "question")
        return f"{state} {plural(self.joined, 'student')} joined; {asked} answered."


def _vote(question: RenderedQuestion, round: int, votes: list[Vote | None]) -> VoteReport:
    bars = tally(question, votes)
    given = [vote for vote in votes if vote is not None]
    sure = [vote for vote in given if vote.confidence == "sure"]
    return VoteReport(
        round=round,
        bars=bars,
        share=Share(sum(b.count for b in bars if b.correct), sum(b.count for b in bars)),
        sure=Share(sum(1 for vote in sure if vote.correct), len(sure)),
        unsure=sum(1 for vote in given if vote.confidence == "unsure"),
    )


def _question(question: RenderedQuestion, students: list[Student]) -> QuestionReport | None:
    qid = question.question.id
    votes = []
    for round in ROUNDS:
        given = [student.vote(qid, round) for student in students]
        if any(given):
            votes.append(_vote(question, round, given))
    if not votes:
        return None
    revoted = any(vote.round == 2 for vote in votes)
    return QuestionReport(question, tuple(votes), shift(question, students) if revoted else None)


def class_report(snapshot: Snapshot) -> Report:
    students = list(snapshot.students.values())
    asked = [
        found
        for question in snapshot.lesson.rendered.questions
        if (found := _question(question, students)) is not None
    ]
    rows = []
    for student in students:
        cells = []
        for item in asked:
            qid = item.question.question.id
            revoted = item.shift is not None
            cells.append(
                Cell(student.vote(qid, 1), student.vote(qid, 2) if revoted else None, revoted)
            )
        scored = [cell.first for cell in cells if cell.first is not None]
        rows.append(
            StudentRow(
                student.nickname,
                tuple(cells),
                Share(sum(1 for vote in scored if vote.correct), len(scored)),
            )
        )
    return Report(
        code=snapshot.code,
        lesson_title=snapshot.lesson.rendered.header.title.striptags(),
        ended=snapshot.ended,
        joined=len(students),
        questions=tuple(asked),
        students=tuple(rows),
    )
