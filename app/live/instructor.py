"""Who may start a class: the instructor password, and a limit on guessing it.

A device that gave the password is remembered by its instructor cookie (app/live/access.py) and
is not asked again. An address that sent ``FREE_GUESSES`` wrong passwords within ``WINDOW_S`` is
refused (429), right password or not, until the oldest of them is that old: a handful of guesses
per ten minutes, per worker. (No pause before answering a wrong one: the request holds its
database session, on SQLite this worker's turn to write, and students' answers would wait.)
The count is in this worker's memory: a restart forgets it, and each worker (or replica) counts
its own.
"""

import hmac
import math
import time
from collections import deque

from starlette.requests import Request

from app.live.service import InvalidError, LimitReachedError

FREE_GUESSES = 5
WINDOW_S = 600.0
# Addresses remembered at most; past it the ones whose guesses are all old are forgotten first.
KEPT_ADDRESSES = 10_000


class Guesses:
    """Wrong guesses by client address, for one worker."""

    def __init__(self) -> None:
        self._wrong: dict[str, deque[float]] = {}

    def _recent(self, who: str, now: float) -> deque[float]:
        times = self._wrong.get(who, deque())
        while times and times[0] <= now - WINDOW_S:
            times.popleft()
        return times

    def wait_s(self, who: str) -> float:
        """Seconds before ``who`` may guess again (0: now)."""
        now = time.monotonic()
        times = self._recent(who, now)
        if len(times) < FREE_GUESSES:
            return 0.0
        return times[0] + WINDOW_S - now

    def wrong(self, who: str) -> None:
        now = time.monotonic()
        if len(self._wrong) >= KEPT_ADDRESSES:
            for address in [a for a, times in self._wrong.items() if not self._recent(a, now)]:
                del self._wrong[address]
        self._wrong[who] = self._recent(who, now)
        self._wrong[who].append(now)


def _address(request: Request) -> str:
    return request.client.host if request.client else ""


def check_password(request: Request, typed: str) -> None:
    """Pass if ``typed`` is the instructor password; else refuse naming the field ``password``,
    or refuse an address that guessed wrong too often."""
    guesses: Guesses = request.app.state.password_guesses
    who = _address(request)
    # Nothing awaited from the check to the count: guesses sent at once are counted one by
    # one, never let through together.
    wait = guesses.wait_s(who)
    if wait > 0:
        minutes = math.ceil(wait / 60)
        raise LimitReachedError(
            f"Too many wrong passwords from this address: try again in {minutes}"
            f" {'minute' if minutes == 1 else 'minutes'}.",
            "password",
        )
    which = "the one the server printed at start (its log), or ATLAS_INSTRUCTOR_PASSWORD if set"
    if not typed:
        raise InvalidError(f"The field “password” is empty: type {which}.", "password")
    password = request.app.state.settings.instructor_password
    if hmac.compare_digest(typed.encode(), password.encode()):
        return
    guesses.wrong(who)
    raise InvalidError(f"The “password” typed is not the instructor password: {which}.", "password")
