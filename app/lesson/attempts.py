"""Quiz attempts: a second try before the answer is shown, "show the answer", first answers scored.

Each question keeps the options chosen, in order, and whether the answer was shown on request.
The score is the first answer's verdict (a question shown before any answer counts as not
correct); what a question shows follows from its attempts, so it survives a reload.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from itsdangerous import URLSafeSerializer

from app.lesson.quiz import Question, Verdict, check, read_signed

# Wrong answers a question takes before it shows its answer.
TRIES = 2
_SALT = "atlas-quiz-attempts"
# Answers kept per question in the cookie.
KEPT = 4

Stage = Literal["retry", "solved", "revealed"]


@dataclass(frozen=True, slots=True)
class Attempts:
    """One question's history: options chosen (1-based, in order), and the answer shown."""

    chosen: tuple[int, ...] = ()
    shown: bool = False

    def answered(self, option: int) -> "Attempts":
        """With one more answer; the first (it is the score) and the last few are kept."""
        chosen = (*self.chosen, option)
        if len(chosen) > KEPT:
            chosen = (chosen[0], *chosen[1 - KEPT :])
        return Attempts(chosen, self.shown)

    def revealed(self) -> "Attempts":
        return Attempts(self.chosen, True)


@dataclass(frozen=True, slots=True)
class Progress:
    """What a question shows: its stage, the last verdict, and how the first answer went.

    ``retry``: a first wrong answer, the answer still hidden; ``solved``: the last answer is
    right; ``revealed``: the answer is shown (asked for, or after ``TRIES`` wrong answers).
    """

    stage: Stage
    verdict: Verdict | None
    tries: int
    first_correct: bool | None = None
    tries_left: int = 0


def progress(question: Question, attempts: Attempts) -> Progress | None:
    """The question's feedback for its attempts (None before any answer or request)."""
    verdicts = [check(question, option) for option in attempts.chosen]
    if not verdicts and not attempts.shown:
        return None
    last = verdicts[-1] if verdicts else None
    first = verdicts[0].correct if verdicts else None
    tries = len(verdicts)
    if last is not None and last.correct:
        return Progress("solved", last, tries, first)
    if attempts.shown or tries >= TRIES:
        return Progress("revealed", last, tries, first)
    return Progress("retry", last, tries, first, TRIES - tries)


def sign_log(log: Mapping[str, Attempts], secret_key: str) -> str:
    """The attempts as a signed, URL-safe cookie value."""
    data = {qid: [list(a.chosen), a.shown] for qid, a in log.items()}
    return URLSafeSerializer(secret_key, salt=_SALT).dumps(data)


def read_log(
    token: str | None, secret_key: str, questions: Sequence[Question]
) -> dict[str, Attempts]:
    """The attempts a cookie holds; a missing, forged or malformed cookie counts as none."""
    data = read_signed(token, secret_key, _SALT)
    options = {q.id: len(q.options) for q in questions}
    log: dict[str, Attempts] = {}
    for qid, entry in data.items():
        if qid not in options or not isinstance(entry, list) or len(entry) != 2:
            continue
        chosen, shown = entry
        if not isinstance(chosen, list) or not isinstance(shown, bool):
            continue
        valid = all(
            isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= options[qid]
            for c in chosen
        )
        if valid and len(chosen) <= KEPT:
            log[qid] = Attempts(tuple(chosen), shown)
    return log
