"""The lesson's questions: parsed from the published sections, checked, and scored in a cookie.

A question section reads: its heading (the question), an ordered list (the options), a line
"Answer and reasoning", the answer (the text of one option) and the reasoning.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeSerializer

from app.lesson.loader import Section
from app.lesson.symbols import unescaped

ANSWER_MARKER = "Answer and reasoning"
_OPTION = re.compile(r"^\d+[.)]\s+(?P<text>\S.*)$")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SCORE_SALT = "atlas-quiz-score"


class QuizParseError(ValueError):
    """A question section does not have the published shape; the message names the section."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question; options are numbered from 1 as the published list numbers them."""

    id: str
    number: int
    prompt: str
    options: tuple[str, ...]
    answer_number: int
    reasoning: str

    @property
    def answer(self) -> str:
        return self.options[self.answer_number - 1]

    @property
    def choices(self) -> tuple[tuple[int, str], ...]:
        """``(number, text)`` of each option, numbered from 1."""
        return tuple(enumerate(self.options, start=1))


@dataclass(frozen=True, slots=True)
class Verdict:
    question: Question
    chosen: int
    correct: bool


@dataclass(frozen=True, slots=True)
class AnswerError(Exception):
    """A submitted answer that cannot be checked: ``field`` names the form field at fault."""

    field: str
    message: str
    question: Question | None = None

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True, slots=True)
class Score:
    correct: int
    answered: int
    total: int


def paragraphs(markdown: str) -> list[str]:
    """The blank-line separated chunks of ``markdown``, stripped, empty ones dropped."""
    return [chunk.strip() for chunk in _PARAGRAPH_BREAK.split(markdown) if chunk.strip()]


def is_question(section: Section) -> bool:
    """Whether the section is a published question (it carries the answer marker)."""
    return ANSWER_MARKER in paragraphs(section.markdown)


def parse_question(section: Section, number: int) -> Question:
    """Parse a question section; raise :class:`QuizParseError` naming the section if malformed."""
    chunks = paragraphs(section.markdown)[1:]  # the first chunk is the heading
    if ANSWER_MARKER not in chunks:
        raise QuizParseError(f"{section.id}: no {ANSWER_MARKER!r} line")
    marker = chunks.index(ANSWER_MARKER)
    option_lines = "\n".join(chunks[:marker]).splitlines()
    matches = [_OPTION.match(line.strip()) for line in option_lines]
    options = tuple(m.group("text").strip() for m in matches if m)
    if len(options) < 2 or len(options) != len(option_lines):
        raise QuizParseError(
            f"{section.id}: the options must be an ordered list of at least two items"
        )
    after = chunks[marker + 1 :]
    if len(after) < 2:
        raise QuizParseError(f"{section.id}: an answer and its reasoning must follow the marker")
    answer, reasoning = after[0], "\n\n".join(after[1:])
    return Question(
        id=section.id,
        number=number,
        prompt=section.title,
        options=options,
        answer_number=_answer_number(section.id, answer, options),
        reasoning=reasoning,
    )


def _plain(source: str) -> str:
    """Source text with Markdown escapes resolved and runs of whitespace made one space."""
    return " ".join(unescaped(source).split())


def _answer_number(section_id: str, answer: str, options: Sequence[str]) -> int:
    """Which option (from 1) the answer names: the same source text, else the same text once
    escapes and spacing are set aside (``\\[43,50\\]`` and ``[43,50]``), if only one matches.
    The verdict never depends on how the text is rendered."""
    if answer in options:
        return options.index(answer) + 1
    same = [n for n, option in enumerate(options, start=1) if _plain(option) == _plain(answer)]
    if len(same) != 1:
        raise QuizParseError(f"{section_id}: the answer {answer!r} is not one of {tuple(options)}")
    return same[0]


def check(question: Question, chosen: int) -> Verdict:
    """Whether option ``chosen`` (1-based, already validated) is the published answer."""
    return Verdict(question=question, chosen=chosen, correct=chosen == question.answer_number)


def read_question(questions: Sequence[Question], form: Mapping[str, Sequence[object]]) -> Question:
    """The question the form's ``question`` field names; :class:`AnswerError` if none."""
    by_id = {q.id: q for q in questions}
    asked = _single(form, "question", None)
    question = by_id.get(asked)
    if question is None:
        known = ", ".join(by_id)
        raise AnswerError("question", f"unknown question {asked[:40]!r} (expected one of {known})")
    return question


def read_answer(
    questions: Sequence[Question], form: Mapping[str, Sequence[object]]
) -> tuple[Question, int]:
    """Validate the raw form values (field name → submitted values) into a question and option.

    Raises :class:`AnswerError` naming the field: missing, repeated, unknown or out of range.
    """
    question = read_question(questions, form)
    raw = _single(form, "choice", question, missing="no option was chosen; pick one of them")
    count = len(question.options)
    if not raw.isascii() or not raw.isdigit():
        raise AnswerError(
            "choice", f"{raw[:20]!r} is not an option number (1 to {count})", question
        )
    # A digit string is compared by length first: int() of thousands of digits raises.
    if len(raw.lstrip("0")) > len(str(count)) or not 1 <= int(raw) <= count:
        shown = raw if len(raw) <= 12 else raw[:12] + "…"
        raise AnswerError("choice", f"option {shown} does not exist (1 to {count})", question)
    chosen = int(raw)
    return question, chosen


def _single(
    form: Mapping[str, Sequence[object]],
    field: str,
    question: Question | None,
    missing: str = "missing",
) -> str:
    values = form.get(field, ())
    if not values:
        raise AnswerError(field, missing, question)
    if len(values) > 1:
        raise AnswerError(field, "sent more than once", question)
    value = values[0]
    if not isinstance(value, str):
        raise AnswerError(field, "must be a form value, not a file", question)
    if not value.strip():
        raise AnswerError(field, missing, question)
    return value.strip()


def score(results: Mapping[str, bool], questions: Sequence[Question]) -> Score:
    """Correct and answered counts over the lesson's questions."""
    known = [results[q.id] for q in questions if q.id in results]
    return Score(correct=sum(known), answered=len(known), total=len(questions))


def read_signed(token: str | None, secret_key: str, salt: str) -> dict[str, object]:
    """The dict a signed cookie value holds; a missing, forged or malformed one holds none."""
    if not token:
        return {}
    try:
        data = URLSafeSerializer(secret_key, salt=salt).loads(token)
    except BadSignature:
        return {}
    return data if isinstance(data, dict) else {}


def _score_salt(lesson_id: str) -> str:
    # Scores are kept per lesson: lessons share question ids (section-11…), not their results.
    return f"{_SCORE_SALT}:{lesson_id}"


def sign_results(results: Mapping[str, bool], secret_key: str, lesson_id: str) -> str:
    """The per-question results of lesson ``lesson_id`` as a signed, URL-safe cookie value."""
    return URLSafeSerializer(secret_key, salt=_score_salt(lesson_id)).dumps(dict(results))


def read_results(
    token: str | None, secret_key: str, questions: Sequence[Question], lesson_id: str
) -> dict[str, bool]:
    """The results a cookie holds for lesson ``lesson_id``; a missing, forged or malformed
    cookie, or one signed for another lesson, counts as none."""
    data = read_signed(token, secret_key, _score_salt(lesson_id))
    known = {q.id for q in questions}
    return {k: v for k, v in data.items() if k in known and isinstance(v, bool)}
