"""Guessing join codes is slowed: a client's wrong codes are counted, and past
``ATLAS_CODE_MISSES_PER_MINUTE`` (``FREE_MISSES``, 20) in the last ``WINDOW_S`` every lookup of a
code it makes (right or wrong: a fast right answer would tell the code) waits its turn, one a
``GAP_S`` per client, or is refused (429, ``Retry-After``) when its turn is more than
``MAX_WAIT_S`` away.

So one client tries at most about one code a second per worker once it guesses: with 31⁶ codes
and ``ATLAS_CLASS_LIMIT`` classes kept, finding one takes months, longer than a class is kept
(docs/classroom.md has the figures). Students who type the right code are never counted: a
class of 500 behind one school address joins at full speed, and a page or stream of a class
whose cookie the request carries is never held up.

A client is its address as uvicorn gives it: behind a reverse proxy listed in
``--forwarded-allow-ips``, the forwarded address; behind a proxy not listed there, the proxy's
address, so all its clients are one (and one guesser slows them all: list the proxy). Counts are
per worker and in memory: a restart forgets them, and N workers allow N times the rate.
"""

import asyncio
import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from app.live.service import LimitReachedError

FREE_MISSES = 20
WINDOW_S = 60.0
GAP_S = 1.0
MAX_WAIT_S = 10.0
MAX_CLIENTS = 10_000  # clients remembered per worker; the quietest are forgotten first


@dataclass
class TooManyGuessesError(LimitReachedError):
    """A client that guesses codes must wait ``retry_after`` seconds."""

    retry_after: int = 1


@dataclass
class _Client:
    misses: deque[float] = field(default_factory=deque)
    next_turn: float = 0.0


class Guesses:
    """This worker's count of wrong codes per client (see the module doc)."""

    def __init__(self, free_misses: int = FREE_MISSES) -> None:
        self.free_misses = free_misses
        self._clients: OrderedDict[str, _Client] = OrderedDict()

    def _recent(self, client: str, now: float) -> _Client | None:
        found = self._clients.get(client)
        if found is not None:
            while found.misses and found.misses[0] <= now - WINDOW_S:
                found.misses.popleft()
            if not found.misses and found.next_turn <= now:
                del self._clients[client]
                return None
        return found

    async def admit(self, client: str) -> None:
        """Return when this client may look a code up: at once unless it has missed
        ``free_misses`` codes in the last minute; else at its turn (at least ``GAP_S`` from now),
        or :class:`TooManyGuessesError` when that is over ``MAX_WAIT_S`` away."""
        now = time.monotonic()
        found = self._recent(client, now)
        if found is None or len(found.misses) < self.free_misses:
            return
        turn = max(now, found.next_turn) + GAP_S
        if turn - now > MAX_WAIT_S:
            wait = math.ceil(turn - now - MAX_WAIT_S)
            raise TooManyGuessesError(
                f"Too many class codes tried from here that lead to no class: wait {wait}"
                f" {'second' if wait == 1 else 'seconds'} and check the code on the"
                " instructor's screen.",
                "code",
                retry_after=wait,
            )
        found.next_turn = turn
        await asyncio.sleep(turn - now)

    def missed(self, client: str) -> None:
        """This client looked up a code that leads to no class."""
        found = self._clients.pop(client, None) or _Client()
        self._clients[client] = found  # the most recent last
        found.misses.append(time.monotonic())
        if len(found.misses) > self.free_misses:  # only whether it reached free_misses counts
            found.misses.popleft()
        while len(self._clients) > MAX_CLIENTS:
            self._clients.popitem(last=False)
