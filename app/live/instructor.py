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

from starlette.requests import Request

from app.live.guesses import Guesses
from app.live.service import InvalidError

FREE_GUESSES = 5
WINDOW_S = 600.0


def password_guesses() -> Guesses:
    """Past ``FREE_GUESSES`` wrong in ``WINDOW_S``, an address is refused until the oldest of
    them is that old (its turn never comes sooner)."""
    return Guesses(
        "password",
        "Too many wrong passwords from this address",
        free=FREE_GUESSES,
        window_s=WINDOW_S,
        gap_s=WINDOW_S,
        max_wait_s=0,
    )


def _address(request: Request) -> str:
    return request.client.host if request.client else ""


async def check_password(request: Request, typed: str) -> None:
    """Pass if ``typed`` is the instructor password; else refuse naming the field ``password``,
    or refuse an address that guessed wrong too often."""
    guesses: Guesses = request.app.state.password_guesses
    who = _address(request)
    await guesses.admit(who)
    which = "the one the server printed at start (its log), or ATLAS_INSTRUCTOR_PASSWORD if set"
    if not typed:
        raise InvalidError(f"The field “password” is empty: type {which}.", "password")
    password = request.app.state.settings.instructor_password
    if hmac.compare_digest(typed.encode(), password.encode()):
        return
    guesses.missed(who)
    raise InvalidError(f"The “password” typed is not the instructor password: {which}.", "password")
