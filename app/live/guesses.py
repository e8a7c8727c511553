"""Wrong guesses counted per client, one kind a :class:`Guesses` (codes here, the instructor
password in app/live/instructor.py).

Guessing join codes is slowed: a client's wrong codes are counted, and past
``ATLAS_CODE_MISSES_PER_MINUTE`` (``FREE_MISSES``, 20) in the last ``WINDOW_S`` every lookup of a
code it makes (right or wrong: a fast
right answer would tell the code) waits its turn, one a ``GAP_S`` per client, or is refused
(429, ``Retry-After``) when its turn is more than ``MAX_WAIT_S`` away.

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
    """A client that guesses must wait ``retry_after`` seconds."""

    retry_after: int = 1


@dataclass
class _Client:
    misses: deque[float] = field(default_factory=deque)
    next_turn: float = 0.0


def _duration(seconds: int) -> str:
    if seconds >= 120:
        minutes = math.ceil(seconds / 60)
        return f"{minutes} minutes"
    return f"{seconds} {'second' if seconds == 1 else 'seconds'}"


class Guesses:
    """This worker's count of one kind of wrong guess per client (see the module doc): past
    ``free`` misses in the last ``window_s``, a client's tries take turns ``gap_s`` apart, and
    one whose turn is more than ``max_wait_s`` away is refused (``field`` named, ``told`` saying
    why, and when it may try again). Codes use the defaults above; the instructor password
    (app/live/instructor.py) refuses at once past its few free guesses."""

    def __init__(
        self,
        field: str,
        told: str,
        free: int = FREE_MISSES,
        window_s: float = WINDOW_S,
        gap_s: float = GAP_S,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        self.field, self.told = field, told
        self.free, self.window_s, self.gap_s, self.max_wait_s = free, window_s, gap_s, max_wait_s
        self._clients: OrderedDict[str, _Client] = OrderedDict()

    def _recent(self, client: str, now: float) -> _Client | None:
        found = self._clients.get(client)
        if found is not None:
            while found.misses and found.misses[0] <= now - self.window_s:
                found.misses.popleft()
            if not found.misses and found.next_turn <= now:
                del self._clients[client]
                return None
        return found

    async def admit(self, client: str) -> None:
        """Return when this client may try: at once unless it missed ``free`` times in the
        window; else at its turn (at least ``gap_s`` from now), or :class:`TooManyGuessesError`
        when that is over ``max_wait_s`` away. Nothing is awaited before a try is admitted at
        once, so tries that arrive together are counted one by one."""
        now = time.monotonic()
        found = self._recent(client, now)
        if found is None or len(found.misses) < self.free:
            return
        # How far its turn is, from now: reckoned apart from the clock's reading, whose
        # rounding can make a 290-s wait 290.00000000001 s and say 291.
        ahead = max(0.0, found.next_turn - now) + self.gap_s
        if ahead > self.max_wait_s:
            # Free again at its turn, or when enough misses left the window.
            freed = found.misses[len(found.misses) - self.free] + self.window_s - now
            wait = max(1, math.ceil(min(ahead - self.max_wait_s, freed)))
            raise TooManyGuessesError(
                f"{self.told}: try again in {_duration(wait)}.", self.field, retry_after=wait
            )
        found.next_turn = now + ahead
        await asyncio.sleep(ahead)

    def missed(self, client: str) -> None:
        """This client's try was wrong."""
        found = self._clients.pop(client, None) or _Client()
        self._clients[client] = found  # the most recent last
        found.misses.append(time.monotonic())
        if len(found.misses) > self.free * 4:  # only whether it passed ``free`` counts
            found.misses.popleft()
        while len(self._clients) > MAX_CLIENTS:
            self._clients.popitem(last=False)
