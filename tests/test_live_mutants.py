"""What the live class's mutation run (docs/testing.md, "Mutation testing") showed no test
held, each asserted from its definition: a client's wrong guesses and their turns
(app/live/guesses.py), on timings of tenths of a second, so the run stays fast; the cookies of
a class (app/live/access.py)."""

import asyncio
import contextlib
import itertools
import logging
import socket
import sqlite3
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from http.cookies import Morsel, SimpleCookie
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from alembic.script import ScriptDirectory
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from app.live import guesses as guesses_module
from app.live import lifecycle
from app.live.access import ParticipantKey, host_cookie, screen_cookie, student_cookie
from app.live.codes import new_code, read_code
from app.live.database import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    RETRY_AFTER_S,
    SharedKeyError,
    backoff,
    connect_args,
    engine_url,
    reachable,
    unreachable,
)
from app.live.deps import stream_turn
from app.live.drags import LOOKUP_BATCH
from app.live.guesses import MAX_CLIENTS, Guesses, TooManyGuessesError
from app.live.join import (
    JoinError,
    nickname_key,
    nickname_skeleton,
    read_join_code,
    read_nickname,
)
from app.live.lifecycle import migrate_now, purge_now
from app.live.store import SQLITE_FILE, UNJOINED_HOURS
from app.live.streams import OPENING_PER_CLIENT, Held, Streams, Turn
from app.main import create_app
from app.settings import Settings
from app.web.server import CONNECTION_SCOPE_KEY
from bench._stores import Postgres
from tests.conftest import INSTRUCTOR_PASSWORD, ROOT
from tests.test_listeners import wait_for
from tests.test_live import (
    KEY,
    _age,
    _keyed_link,
    other_browser,
    questions,
    settings_for,
    start_class,
    start_class_with_a_letter,
    student,
)
from tests.test_live_labs import DRAGGED, lab_form
from tests.test_live_refusals import events, next_event

# Each test takes a second or two; a mutant that makes a try wait for hours fails here, not at
# the suite's two minutes.
pytestmark = pytest.mark.timeout(30)

TOLD = "Too many codes"


def guesses(**timing: float) -> Guesses:
    return Guesses("code", TOLD, **timing)  # type: ignore[arg-type]


def refusal(limit: Guesses, client: str) -> TooManyGuessesError:
    with pytest.raises(TooManyGuessesError) as refused:
        asyncio.run(limit.admit(client))
    return refused.value


def admitted_at_once(limit: Guesses, client: str) -> bool:
    """The try is admitted without waiting a turn or being refused (nothing is awaited before
    a try is admitted at once)."""

    async def first_step() -> bool:
        task = asyncio.ensure_future(limit.admit(client))
        await asyncio.sleep(0)  # one step of the loop: a try admitted at once has returned
        if not task.done():
            task.cancel()
            return False
        return task.exception() is None

    return asyncio.run(first_step())


# ---- guesses ------------------------------------------------------------------------------


def test_a_client_tries_freely_until_it_has_missed_free_times() -> None:
    limit = guesses(free=3, window_s=60, gap_s=30, max_wait_s=60)
    for _ in range(2):
        limit.missed("eve")
    assert admitted_at_once(limit, "eve")  # two misses of three free
    limit.missed("eve")
    assert not admitted_at_once(limit, "eve")  # the third: its tries take turns
    assert admitted_at_once(limit, "bob")  # another client is not held up


def test_past_the_free_misses_tries_take_turns_a_gap_apart_and_past_the_wait_are_refused() -> None:
    gap, wait = 0.2, 0.5
    limit = guesses(free=2, window_s=60, gap_s=gap, max_wait_s=wait)
    limit.missed("eve")
    limit.missed("eve")

    async def four_at_once() -> list[float | TooManyGuessesError]:
        started = time.monotonic()

        async def one() -> float | TooManyGuessesError:
            try:
                await limit.admit("eve")
            except TooManyGuessesError as error:
                return error
            return time.monotonic() - started

        return list(await asyncio.gather(one(), one(), one(), one()))

    first, second, third, fourth = asyncio.run(four_at_once())
    # Turns at one gap and two gaps from now; the third's (three gaps, 0.6 s) is past the
    # longest wait (0.5 s): refused, and so is the fourth.
    assert isinstance(first, float)
    assert first >= gap
    assert isinstance(second, float)
    assert second >= 2 * gap
    for refused in (third, fourth):
        assert isinstance(refused, TooManyGuessesError)
        assert refused.field == "code"
        assert refused.retry_after == 1  # its turn comes in a tenth of a second: 1 s, whole
        assert refused.message == f"{TOLD}: try again in 1 second."


def test_a_try_whose_turn_is_the_longest_wait_away_waits_for_it() -> None:
    """Refused only when its turn is *more* than ``max_wait_s`` away (a quarter second: exact
    in binary, so the turn is exactly that far)."""
    limit = guesses(free=1, window_s=60, gap_s=0.25, max_wait_s=0.25)
    limit.missed("eve")
    started = time.monotonic()
    asyncio.run(limit.admit("eve"))
    assert time.monotonic() - started >= 0.25


def test_a_refusal_says_when_the_client_may_try_again_its_turn_or_its_misses_leaving() -> None:
    # Turn 300 s away, the wait 10 s: free again in 290 s (its turn), said in whole minutes.
    by_turn = guesses(free=1, window_s=1000, gap_s=300, max_wait_s=10)
    by_turn.missed("eve")
    refused = refusal(by_turn, "eve")
    assert refused.retry_after == 290
    assert refused.message == f"{TOLD}: try again in 5 minutes."
    # The same, but its miss leaves the window in 100 s: sooner than its turn.
    by_window = guesses(free=1, window_s=100, gap_s=300, max_wait_s=10)
    by_window.missed("eve")
    refused = refusal(by_window, "eve")
    assert 99 <= refused.retry_after <= 100
    assert refused.message == f"{TOLD}: try again in {refused.retry_after} seconds."
    # Of three misses with two free, the second oldest leaving frees it: the window from it.
    two_free = guesses(free=2, window_s=100, gap_s=300, max_wait_s=10)
    two_free.missed("eve")
    two_free.missed("eve")
    two_free.missed("eve")
    assert 99 <= refusal(two_free, "eve").retry_after <= 100


@pytest.mark.parametrize(
    "reading", [0.0, 32728.185951439325, 65349.77915431363, 130848.87966840655]
)
def test_a_refusal_says_the_same_wait_whatever_the_clock_reads(
    monkeypatch: pytest.MonkeyPatch, reading: float
) -> None:
    """A turn 300 s away with a 10-s wait is 290 s at any reading of the clock: at these (of
    about 1 in 1,300), ``now + 300 - 10 - now`` is 290.00000000001 in floating point, which a
    wait rounded up would say as 291."""
    monkeypatch.setattr(guesses_module, "time", SimpleNamespace(monotonic=lambda: reading))
    limit = guesses(free=1, window_s=1000, gap_s=300, max_wait_s=10)
    limit.missed("eve")
    assert refusal(limit, "eve").retry_after == 290


def test_at_two_minutes_a_wait_is_said_in_minutes_rounded_up() -> None:
    for turn, said in [(129, "119 seconds"), (130, "2 minutes"), (131, "3 minutes")]:
        limit = guesses(free=1, window_s=1000, gap_s=turn, max_wait_s=10)
        limit.missed("eve")
        assert refusal(limit, "eve").message == f"{TOLD}: try again in {said}."


def test_misses_older_than_the_window_are_forgotten() -> None:
    limit = guesses(free=1, window_s=0.05, gap_s=300, max_wait_s=10)
    limit.missed("eve")
    assert not admitted_at_once(limit, "eve")
    time.sleep(0.06)  # the window itself is what is tested: past it, the miss is gone
    assert admitted_at_once(limit, "eve")


def test_the_quietest_client_is_forgotten_past_the_clients_remembered() -> None:
    limit = guesses(free=1, window_s=600, gap_s=300, max_wait_s=10)
    limit.missed("first")
    limit.missed("second")
    for n in range(MAX_CLIENTS - 2):
        limit.missed(f"c{n}")
    limit.missed("first")  # missed again: the most recent now
    assert not admitted_at_once(limit, "second")  # all remembered so far
    limit.missed("one more")
    assert admitted_at_once(limit, "second")  # the quietest, forgotten
    assert not admitted_at_once(limit, "first")
    assert not admitted_at_once(limit, "one more")


def test_many_misses_still_free_the_client_when_the_last_free_ones_leave_the_window() -> None:
    limit = guesses(free=2, window_s=100, gap_s=300, max_wait_s=10)
    for _ in range(20):
        limit.missed("eve")
    # However many it missed, it is free again when all but the last free-1 left the window.
    assert 99 <= refusal(limit, "eve").retry_after <= 100


# ---- cookies ------------------------------------------------------------------------------


def set_cookies(response: httpx.Response) -> dict[str, Morsel[str]]:
    """The cookies a response sets, by name, with their attributes."""
    found: dict[str, Morsel[str]] = {}
    for header in response.headers.get_list("set-cookie"):
        jar: SimpleCookie = SimpleCookie()
        jar.load(header)
        found.update(jar)
    return found


@pytest.mark.parametrize(("scheme", "secure"), [("http", ""), ("https", True)])
def test_every_cookie_of_a_class_is_http_only_same_site_and_kept_to_its_class(
    tmp_path: Path, scheme: str, secure: object
) -> None:
    """The instructor's (for the retention), the host's and the projector's (the class's
    pages), a student's (every page, the lesson's too: a month), under the proxy's prefix;
    Secure when the page came over HTTPS."""
    retention_days = 2.5
    settings = settings_for(tmp_path / "data", class_retention_days=retention_days)
    base = f"{scheme}://testserver"
    with TestClient(create_app(settings), base_url=base, root_path="/atlas") as host:
        started = host.post(
            "/class/new", data={"password": INSTRUCTOR_PASSWORD}, follow_redirects=False
        )
        assert started.status_code == 303
        code = started.headers["location"].split("/")[3]
        cookies = set_cookies(started)
        instructor, hosted = cookies["atlas-instructor"], cookies[f"atlas-host-{code}"]
        path, key = _keyed_link(host.get(f"/atlas/class/{code}/host").text, "#screen-url")
        projector = TestClient(host.app, base_url=base, root_path="/atlas")
        projector.portal = host.portal
        entered = projector.post(path, data={"key": key}, follow_redirects=False)
        screen = set_cookies(entered)[f"atlas-screen-{code}"]
        joined = projector.post(
            "/atlas/join", data={"code": code, "nickname": "Ada"}, follow_redirects=False
        )
        pupil = set_cookies(joined)[f"atlas-class-{code}"]
    month = 30 * 24 * 60 * 60
    expected = [
        (instructor, "/atlas/class", round(retention_days * 24 * 60 * 60)),
        (hosted, f"/atlas/class/{code}", month),
        (screen, f"/atlas/class/{code}", month),
        (pupil, "/atlas/", month),
    ]
    for cookie, where, age in expected:
        assert cookie["httponly"] is True, cookie.key
        assert cookie["samesite"].lower() == "lax", cookie.key
        assert cookie["secure"] == secure, cookie.key
        assert cookie["path"] == where, cookie.key
        assert cookie["max-age"] == str(age), cookie.key


def test_a_students_key_is_found_past_another_classs_cookie_that_is_not_valid(
    tmp_path: Path,
) -> None:
    """A browser in two classes carries two student cookies; one no longer valid (a server
    key changed, a cookie cut short) does not hide the other's key; the same words in another
    header are no cookie."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        signed = pupil.cookies[student_cookie(code)]
        seen: list[object] = []

        async def inner(scope: Scope, receive: Receive, send: Send) -> None:
            seen.append(scope.get("state", {}).get("participant"))

        middleware = ParticipantKey(inner, KEY)
        broken = f"{student_cookie('ZZZZZZ')}={signed[:-2]}xx"
        for name, header in (
            (b"cookie", f"{student_cookie(code)}={signed}"),
            (b"cookie", f"{broken}; {student_cookie(code)}={signed}"),
            (b"x-note", f"{student_cookie(code)}={signed}"),  # the same words, not a cookie
        ):
            scope: Scope = {"type": "http", "headers": [(name, header.encode())]}
            host.portal.call(middleware, scope, None, None)
    alone, behind, elsewhere = seen
    assert alone is not None
    assert behind == alone
    assert elsewhere is None


# ---- a class's code guessed ---------------------------------------------------------------


def test_past_the_free_misses_every_code_lookup_waits_except_with_the_classs_own_cookie(
    tmp_path: Path,
) -> None:
    """Two codes of no class from one address (every TestClient is ``testclient``); then each
    lookup of a code from it, right or wrong, waits its turn: refused at once here (429 with
    Retry-After), its longest wait set to none. A request with a cookie of the URL's class (its
    host's, a student's), its code typed in any case, is never held up; a cookie of another
    class is no help."""
    settings = settings_for(tmp_path / "data", code_misses_per_minute=2)
    with TestClient(create_app(settings)) as host:
        code = start_class_with_a_letter(host)
        other = other_browser(host)
        other_code = start_class(other)
        pupil = student(host, code, "Ada")
        host.app.state.live_guesses.max_wait_s = 0  # type: ignore[attr-defined]
        guesser = other_browser(host)
        unknown = next(c for c in ("ZZZZZZ", "YYYYYY") if c not in (code, other_code))
        assert guesser.get(f"/class/{unknown}").status_code == 404
        joined = guesser.post("/join", data={"code": unknown, "nickname": "Eve"})
        assert joined.status_code == 404
        for held in (
            guesser.get(f"/class/{code}"),
            guesser.post(f"/class/{code}/share", data={}),
            other.get(f"/class/{code}/host"),  # the host of another class
        ):
            assert held.status_code == 429, held.request.url
            assert int(held.headers["Retry-After"]) >= 1
        # An answer without a student's cookie reads no class: every code alike goes to its
        # join form (which is held up), so it tells a guesser nothing.
        for any_code in (code, unknown):
            sent = guesser.post(f"/class/{any_code}/answer", data={}, follow_redirects=False)
            assert (sent.status_code, sent.headers["location"]) == (303, f"/join/{any_code}")
        assert guesser.post("/join", data={"code": code, "nickname": "Eve"}).status_code == 429
        # Another address is not held up by this one's guesses.
        elsewhere = other_browser(host, "192.0.2.9")
        assert elsewhere.get(f"/class/{code}", follow_redirects=False).status_code == 303
        joined = elsewhere.post("/join", data={"code": code, "nickname": "Bo"})
        assert joined.status_code == 200  # on the class's page
        assert host.get(f"/class/{code}/host").status_code == 200
        assert pupil.get(f"/class/{code}").status_code == 200
        # A student's cookie goes with every path: with the code in lower case too.
        moved = pupil.get(f"/class/{code.lower()}", follow_redirects=False)
        assert moved.status_code == 308
        assert moved.headers["location"] == f"/class/{code}"  # no query: none added
        assert other.get(f"/class/{other_code}/host").status_code == 200


# ---- codes and nicknames (app/live/codes.py, app/live/join.py) -------------------------------


def test_a_typed_code_is_read_in_any_case_without_spaces_dashes_or_tabs() -> None:
    assert read_code("abc-def") == "ABCDEF"
    assert read_code(" a b\tc-d e f ") == "ABCDEF"
    assert read_code("ABCDEF") == "ABCDEF"
    for typed in (
        "ABCDE",
        "ABCDEFG",
        "",
        "ABCDE0",
        "ABCDEO",
        "ABCDE1",
        "ABCDEI",
        "ABCDEL",
        "ABC_EF",
    ):
        assert read_code(typed) is None, typed
    with pytest.raises(JoinError) as refused:
        read_join_code("ABC")
    assert refused.value.field == "code"
    assert refused.value.status == 422
    assert refused.value.message == (
        "A class code has 6 letters and digits, as shown on the instructor's screen."
    )


def test_new_codes_are_six_characters_of_the_alphabet_and_differ() -> None:
    made = {new_code() for _ in range(50)}
    assert len(made) > 40  # 887 million codes: fifty draws hardly repeat
    for code in made:
        assert len(code) == 6
        assert set(code) <= set("23456789ABCDEFGHJKMNPQRSTUVWXYZ")


def refused_nickname(typed: str) -> str:
    with pytest.raises(JoinError) as refused:
        read_nickname(typed)
    assert refused.value.field == "nickname"
    assert refused.value.status == 422
    return refused.value.message


def test_a_nickname_is_nfkc_trimmed_and_one_to_twenty_four_characters() -> None:
    assert read_nickname("  \uff21\uff44\uff41 ") == "Ada"  # full-width letters, spaces around
    assert read_nickname("Ada  Lovelace") == "Ada  Lovelace"  # spaces inside kept as typed
    # A space of another width typed inside is the plain one NFKC makes of it, not refused.
    assert read_nickname("Ada\u00a0Lovelace\u3000I") == "Ada Lovelace I"
    assert read_nickname("x" * 24) == "x" * 24
    assert refused_nickname("x" * 25) == "That nickname has 25 characters; use at most 24."
    for blank in ("", "   ", "\u3000"):  # an ideographic space is a plain one in NFKC
        assert refused_nickname(blank) == "Choose a nickname (1 to 24 characters)."


@pytest.mark.parametrize(
    ("typed", "named"),
    [
        ("Al\u200bice", "U+200B"),  # zero-width space (a format character)
        ("Ali\u0007ce", "U+0007"),  # a control character
        ("Alice\u2028", "U+2028"),  # a line separator, kept by strip() inside
        ("Ali\u2029ce", "U+2029"),
        ("Al\ue000ice", "U+E000"),  # private use
        ("Al\u0378ice", "U+0378"),  # unassigned
        ("Alice\u034f", "U+034F"),
        ("Al\u1680ice", "U+1680"),  # a space NFKC leaves as it is: not a plain one
        ("\u3164Bob", "U+3164"),  # the character typed, not the one NFKC makes of it
        ("Bob\U000e01ef", "U+E01EF"),  # the last supplementary variation selector
    ],
)
def test_a_nickname_with_a_character_one_cannot_see_is_refused_naming_it(
    typed: str, named: str
) -> None:
    assert refused_nickname(typed) == (
        f"A nickname cannot hold control or invisible characters; this one holds {named}."
    )


def test_a_nickname_needs_a_letter_or_digit_and_at_most_two_marks_on_one() -> None:
    needs = "A nickname needs at least one letter or digit."
    for typed in ("!!!", "· ·", "\u0301\u0301"):
        assert refused_nickname(typed) == needs
    assert read_nickname("7") == "7"
    assert read_nickname("x\u0301\u0302q") == "x\u0301\u0302q"  # NFKC composes none of these
    marks = "A nickname can put at most 2 accents or other combining marks on a letter."
    assert refused_nickname("x\u0301\u0302\u0303q") == marks
    # Two marks on each of two letters, or two before the first: two in a row at most.
    assert read_nickname("\u0301\u0302Ada") == "\u0301\u0302Ada"
    assert read_nickname("x\u0301\u0302q\u0301\u0302") == "x\u0301\u0302q\u0301\u0302"


def test_nicknames_that_differ_in_case_spacing_or_look_are_one() -> None:
    assert nickname_key("  Ada   LOVELACE ") == nickname_key("ada lovelace")
    assert nickname_key("STRASSE") == nickname_key("straße")  # casefold, not lower
    assert nickname_key("Ada") != nickname_key("Ida")
    same = {nickname_skeleton(n) for n in ("Alice", "\u0410lice", "AIice", "A1ice", "alice")}
    assert len(same) == 1
    assert nickname_skeleton("Alice") != nickname_skeleton("Alina")


# ---- who may open what (app/live/deps.py) ----------------------------------------------------

NOT_HOST = (
    "This page and its actions are for the class's instructor. Open the dashboard from the"
    " device that started the class, or with the co-host link it shows."
)
NOT_SCREEN = (
    "The projector's view is opened from the class's dashboard, or on another device with the"
    " projector link the dashboard shows."
)


def test_a_refused_dashboard_or_projector_says_where_it_is_opened(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        for path, told in [
            (f"/class/{code}/host", NOT_HOST),
            (f"/class/{code}/screen", NOT_SCREEN),
        ]:
            refused = pupil.get(path)
            assert refused.status_code == 403
            assert refused.json() == {"detail": told}
            page = pupil.get(path, headers={"Accept": "text/html"})
            assert page.status_code == 403
            assert told in " ".join(BeautifulSoup(page.text, "html.parser").get_text(" ").split())


def test_a_clients_stream_openings_take_turns_apart_from_another_clients(tmp_path: Path) -> None:
    """``OPENING_PER_CLIENT`` streams of one address open at once; its next waits for one of
    them to have opened, while another address's opens at once (app/live/streams.py)."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:

        def turn(address: str) -> AsyncIterator[Turn]:
            scope = {"type": "http", "client": (address, 5000), "app": host.app, "headers": []}
            return stream_turn(Request(scope))

        async def run() -> None:
            mine = [turn("192.0.2.1") for _ in range(OPENING_PER_CLIENT + 1)]
            for opening in mine[:-1]:
                await anext(opening)
            waiting = asyncio.ensure_future(anext(mine[-1]))
            other = asyncio.ensure_future(anext(turn("192.0.2.2")))
            await asyncio.sleep(0)  # one step of the loop: a free turn is taken at once
            assert other.done()
            assert not waiting.done()
            await mine[0].aclose()  # its stream opened (or its request ended): the turn is free
            await asyncio.wait_for(waiting, 5)

        host.portal.call(run)


def two_views_stay_open(
    one: TestClient, other: TestClient, path: str, name: str, change: Callable[[], object]
) -> None:
    """Streams of ``path`` on two devices: the second opening does not end the first (a newer
    stream of the *same* view would, with ``gone``: its page stops updating); after ``change``
    both show it."""
    with one.stream("GET", path) as first:
        mine = events(first)
        next_event(mine, lambda e: e.name == name, f"the first device's {name} view")
        with other.stream("GET", path) as second:
            theirs = events(second)
            next_event(theirs, lambda e: e.name == name, f"the second device's {name} view")
            change()
            assert next(mine).name == name  # shown, not ended ("gone")
            assert next(theirs).name == name


def asking(host: TestClient, code: str, number: int) -> Callable[[], object]:
    """The instructor asks the lesson's question ``number`` (from 0)."""
    question = questions()[number]
    return lambda: host.post(
        f"/class/{code}/ask", data={"question": question.id}
    ).raise_for_status()


def test_the_projector_on_the_instructors_device_and_on_the_projectors_are_two_views(
    tmp_path: Path,
) -> None:
    """The projector's view opened from the dashboard (the host's cookie) and on the room's
    projector (the projector link's cookie) are streams of two devices (app/live/streams.py)."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        path, key = _keyed_link(host.get(f"/class/{code}/host").text, "#screen-url")
        projector = other_browser(host)
        assert projector.post(path, data={"key": key}, follow_redirects=False).status_code == 303
        screen = f"/class/{code}/events?view=screen"
        two_views_stay_open(host, projector, screen, "screen", asking(host, code, 0))


def test_the_instructor_and_a_cohost_have_a_dashboard_each(tmp_path: Path) -> None:
    """The co-host link lets another device in with the class's key: the two devices hold
    cookies of their own, so their dashboards are two views, and opening one does not end the
    other's (one cookie for both made them one view: the first page stopped updating). Two
    projectors let in with the projector link likewise."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        page = host.get(f"/class/{code}/host").text
        path, key = _keyed_link(page, "#cohost-url")
        cohost = other_browser(host)
        assert cohost.post(path, data={"key": key}, follow_redirects=False).status_code == 303
        name = host_cookie(code)
        assert host.cookies.get(name) != cohost.cookies.get(name)
        screen_path, screen_key = _keyed_link(page, "#screen-url")
        walls = [other_browser(host) for _ in range(2)]
        for wall in walls:
            entered = wall.post(screen_path, data={"key": screen_key}, follow_redirects=False)
            assert entered.status_code == 303
        assert walls[0].cookies.get(screen_cookie(code)) != walls[1].cookies.get(
            screen_cookie(code)
        )
        dashboard = f"/class/{code}/events?view=host"
        two_views_stay_open(host, cohost, dashboard, "host", asking(host, code, 0))
        screen = f"/class/{code}/events?view=screen"
        two_views_stay_open(*walls, screen, "screen", asking(host, code, 1))


def test_a_drag_without_the_students_cookie_goes_to_the_join_form_of_the_code_typed(
    tmp_path: Path,
) -> None:
    """A lab state sent without the class's student cookie: 303 to the join form for that
    code, written as a class's code is (the form fills it in); a code no class can have is no
    class (404 naming it)."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        for typed, joins in [("abc-def", "/join/ABCDEF"), ("ABCDEF", "/join/ABCDEF")]:
            sent = client.post(f"/class/{typed}/state", data={}, follow_redirects=False)
            assert sent.status_code == 303, typed
            assert sent.headers["location"] == joins
        refused = client.post("/class/zz/state", data={}, follow_redirects=False)
        assert refused.status_code == 404
        assert "no class with the code “zz”" in refused.text


# ---- the server's life (app/live/lifecycle.py, app/live/migrate.py) -------------------------


class Heard(logging.Handler):
    """The app's log lines (logger ``atlas``) as they come, to wait for one."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.lines.append(record.getMessage())
            self._changed.notify_all()

    def wait_for(self, line: str, times: int = 1) -> None:
        with self._changed:
            heard = self._changed.wait_for(lambda: self.lines.count(line) >= times, timeout=10)
        assert heard, f"{line!r} not logged {times} times: {self.lines}"


@pytest.fixture
def heard() -> Iterator[Heard]:
    logger = logging.getLogger("atlas")
    handler, level = Heard(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_the_commands_beside_the_server_make_the_database_migrate_and_purge(
    tmp_path: Path,
) -> None:
    """``python -m app migrate`` and ``purge``, in this process: the data folder made (and its
    parents), only its owner may enter it; the database at the newest revision of migrations/,
    again at once the second time; the classes past their retention deleted, counted."""
    data_dir = tmp_path / "new" / "data"
    settings = settings_for(data_dir, class_retention_days=2)
    head = ScriptDirectory(str(ROOT / "migrations")).get_current_head()
    for _ in range(2):
        assert migrate_now(settings) == f"sqlite database at revision {head}"
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    # A database configured elsewhere (ATLAS_DATABASE_URL) is the one migrated.
    elsewhere, other_dir = tmp_path / "elsewhere.sqlite3", tmp_path / "other"
    configured = settings_for(other_dir, database_url=f"sqlite+aiosqlite:///{elsewhere}")
    assert migrate_now(configured) == f"sqlite database at revision {head}"
    assert elsewhere.is_file()
    assert not (other_dir / SQLITE_FILE).exists()
    with TestClient(create_app(settings)) as host:
        old, young = start_class(host), start_class(host)
        student(host, old, "Ada")
        student(host, young, "Bea")
    _age(data_dir, old, 3)
    assert purge_now(settings) == 1
    assert purge_now(settings) == 0
    with sqlite3.connect(data_dir / SQLITE_FILE) as db:
        assert db.execute("SELECT code FROM live_classes").fetchall() == [(young,)]


def test_a_running_server_purges_daily_and_tries_again_after_a_failure(
    tmp_path: Path, heard: Heard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the purge at start, every day (here a hundredth of a second) the classes past
    their retention are deleted and the count logged; a purge that fails is logged, and the
    next day's is tried all the same."""
    monkeypatch.setattr(lifecycle, "DAY_S", 0.01)
    data_dir = tmp_path / "data"
    with TestClient(create_app(settings_for(data_dir, class_retention_days=2))) as host:
        old, older, oldest, young = (start_class(host) for _ in range(4))
        for code, name in [(old, "Ada"), (older, "Bea"), (oldest, "Cy"), (young, "Di")]:
            student(host, code, name)
        past = f"older than 2 days or unjoined after {UNJOINED_HOURS} hours"
        _age(data_dir, old, 3)
        heard.wait_for(f"deleted 1 class {past}")
        _age(data_dir, older, 3, oldest)
        heard.wait_for(f"deleted 2 classes {past}")
        for code in (old, older, oldest):
            assert host.get(f"/class/{code}/host").status_code == 404
        assert host.get(f"/class/{young}/host").status_code == 200
        with sqlite3.connect(data_dir / SQLITE_FILE) as db:
            db.execute("DROP TABLE live_classes")  # every purge fails now
        heard.wait_for("the daily purge of old classes failed", times=2)


def test_a_stopped_server_leaves_no_task_of_the_class_running(tmp_path: Path) -> None:
    """While the server runs, the class's background work runs as named tasks (the drags'
    writer, the version poll, the daily purge: names asyncio's debugging shows); once it has
    stopped, none is left (a task left pending is destroyed with the loop, mid-work)."""
    app = create_app(settings_for(tmp_path / "data"))

    async def life() -> tuple[set[str], set[str]]:
        async with app.router.lifespan_context(app):
            running = {task.get_name() for task in asyncio.all_tasks()}
        left = {
            task.get_name() for task in asyncio.all_tasks() if task is not asyncio.current_task()
        }
        return running, left

    running, left = asyncio.run(life())
    assert {"live-drags", "live-version-poll", "live-daily-purge"} <= running
    assert left == set()


def test_dragged_states_that_cannot_be_written_are_logged_and_dropped(
    tmp_path: Path, heard: Heard
) -> None:
    """A batch of dragged states whose transaction fails is logged with its count (the
    students' next drags send theirs again); the drags go on being taken."""
    data_dir = tmp_path / "data"
    with TestClient(create_app(settings_for(data_dir))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        with sqlite3.connect(data_dir / SQLITE_FILE) as db:
            db.execute("DROP TABLE live_participants")  # every write of a state fails now
        state = lab_form(["2", "6"], ["1", "3"])
        assert pupil.post(f"/class/{code}/state", content=state, headers=DRAGGED).status_code == 204
        heard.wait_for("writing 1 dragged lab state failed")
        assert pupil.post(f"/class/{code}/state", content=state, headers=DRAGGED).status_code == 204
        heard.wait_for("writing 1 dragged lab state failed", times=2)
        drags = host.app.state.live_drags  # type: ignore[attr-defined]

        async def two_at_once() -> None:  # one batch of two
            drags.put(code, "one", "P=2")
            drags.put(code, "two", "P=2")
            await drags.flush()

        host.portal.call(two_at_once)
        heard.wait_for("writing 2 dragged lab states failed")


# ---- the request's transaction (app/live/deps.py's db_session) ---------------------------


def test_reads_never_wait_for_writers_and_the_instructors_action_goes_first(
    tmp_path: Path,
) -> None:
    """On SQLite this worker's writing requests take turns (app/live/store.py): while one holds
    the turn, a student's answer waits for it, and the instructor's reveal, sent after it,
    waits too but goes first (so the answer comes after the reveal: refused, too late); a page
    (a GET) is read meanwhile, waiting for no one."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        question = questions()[0]
        assert host.post(f"/class/{code}/ask", data={"question": question.id}).is_success
        turns = host.app.state.live_store._writing  # type: ignore[attr-defined]
        taken, release = threading.Event(), threading.Event()

        async def hold_the_turn() -> None:
            async with turns.turn():
                taken.set()
                await asyncio.to_thread(release.wait)

        answer = {"question": question.id, "choice": str(question.answer_number)}
        with ThreadPoolExecutor(3) as pool:
            held = host.portal.start_task_soon(hold_the_turn)
            try:
                assert taken.wait(10)
                answered = pool.submit(pupil.post, f"/class/{code}/answer", data=answer)
                wait_for(lambda: len(turns._others) == 1, 10)
                revealed = pool.submit(host.post, f"/class/{code}/reveal")
                wait_for(lambda: len(turns._first) == 1, 10)
                read = pool.submit(pupil.get, f"/class/{code}")
                assert read.result(10).status_code == 200  # while both wait
                assert not answered.done()
                release.set()
                assert revealed.result(10).is_success
                assert answered.result(10).status_code == 409
            finally:
                release.set()  # the turn given back even if the test failed
                held.result(10)


# ---- a worker's streams (app/live/streams.py) -----------------------------------------------
# tests/test_live_streams.py holds these rules in a real ``python -m app``, out of mutmut's
# reach (a child process): here the same rules on the worker's ``Streams`` itself.


class Carrier:
    """What ``python -m app``'s connection is told (app/web/server.py's ``carries_stream``)."""

    def __init__(self) -> None:
        self.told: list[bool] = []

    def carries_stream(self, streams: bool) -> None:
        self.told.append(streams)


async def opened(streams: Streams, view: str, client: str, scope: dict[str, object]) -> Held:
    """A stream of ``view`` from ``client`` open in a task of its own, as events.py runs one:
    it waits for events until it is ended, and is closed however it ends."""
    ready: asyncio.Future[Held] = asyncio.get_running_loop().create_future()

    async def stream() -> None:
        held = streams.open(view, client, scope)
        ready.set_result(held)
        try:
            await asyncio.Event().wait()
        finally:
            streams.close(held)

    task = asyncio.get_running_loop().create_task(stream())
    await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        task.result()  # it failed before it opened: its error
    return ready.result()


async def ended(held: Held) -> str:
    """Why the stream was ended, once its task has ended."""
    assert held.task is not None
    done, _ = await asyncio.wait([held.task], timeout=5)  # a bound for a task never ended
    assert done, f"the stream of {held.view!r} goes on"
    return held.ended


async def all_left(streams: Streams, *held: Held) -> None:
    """The clients of these streams leave (their tasks cancelled): the worker holds none."""
    for one in held:
        assert one.task is not None
        one.task.cancel()
        await ended(one)
    assert (len(streams), streams.by_view, streams.by_client) == (0, {}, {})


def test_a_newer_stream_of_a_view_ends_the_older_and_the_closed_one_forgets_nothing_else() -> None:
    async def run() -> None:
        streams = Streams(cap=10)
        first_carrier, second_carrier = Carrier(), Carrier()
        first = await opened(streams, "dashboard", "a", {CONNECTION_SCOPE_KEY: first_carrier})
        assert first_carrier.told == [True]
        screen = await opened(streams, "screen", "a", {})  # the client's other view
        # The same view again from the same client (a reloaded page), then from another.
        second = await opened(streams, "dashboard", "a", {CONNECTION_SCOPE_KEY: second_carrier})
        assert await ended(first) == "replaced"
        assert first_carrier.told == [True, False]  # its connection no longer carries a stream
        # The older one's close took nothing of the others'.
        assert streams.by_view == {"dashboard": second, "screen": screen}
        assert streams.by_client == {"a": {screen: None, second: None}}
        third = await opened(streams, "dashboard", "b", {})
        assert await ended(second) == "replaced"
        assert len(streams) == 2
        assert streams.by_view == {"dashboard": third, "screen": screen}
        assert streams.by_client == {"a": {screen: None}, "b": {third: None}}
        await all_left(streams, screen, third)
        assert third.ended == ""  # its client left: not ended here
        assert second_carrier.told == [True, False]

    asyncio.run(run())


def test_at_the_cap_the_client_holding_most_streams_loses_its_oldest() -> None:
    async def run() -> None:
        streams = Streams(cap=3)
        one = await opened(streams, "one", "a", {})
        two = await opened(streams, "two", "a", {})
        three = await opened(streams, "three", "b", {})
        four = await opened(streams, "four", "b", {})  # at the cap: a's oldest goes
        assert await ended(one) == "room"
        assert {held.ended for held in (two, three, four)} == {""}
        assert [len(streams), *streams.by_client] == [3, "a", "b"]
        five = await opened(streams, "five", "c", {})  # b holds most now: its oldest goes
        assert await ended(three) == "room"
        assert streams.by_view == {"two": two, "four": four, "five": five}
        await all_left(streams, two, four, five)

    asyncio.run(run())


def test_a_stream_is_ended_once_for_its_first_reason() -> None:
    async def run() -> None:
        streams = Streams(cap=10)
        held = await opened(streams, "view", "a", {})
        held.end("replaced")
        held.end("room")
        assert await ended(held) == "replaced"
        unstarted = Held("view", "a", None)
        unstarted.end("room")  # no task to end: nothing to say why
        assert unstarted.ended == ""

    asyncio.run(run())


def test_a_clients_turn_is_given_back_once_and_a_worker_forgets_clients_done_opening() -> None:
    async def run() -> None:
        streams = Streams(cap=10)
        turns = [await streams.turn("a") for _ in range(OPENING_PER_CLIENT)]
        waiting = asyncio.ensure_future(streams.turn("a"))
        await asyncio.sleep(0)  # one step of the loop: it waits for a turn
        assert not waiting.done()
        waiting.cancel()  # the client left while it waited
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        turns[0].release()
        turns[0].release()  # again: no second turn given back
        again = [asyncio.ensure_future(streams.turn("a")) for _ in range(2)]
        await asyncio.sleep(0)
        assert [turn.done() for turn in again] == [True, False]
        for turn in turns[1:]:
            turn.release()
        taken = [await asyncio.wait_for(turn, 5) for turn in again]
        for turn in taken:
            turn.release()
        assert streams.opening == {}

    asyncio.run(run())


def test_a_student_behind_more_states_than_one_lookup_takes_is_written_too(
    tmp_path: Path,
) -> None:
    """A batch of dragged states is looked up ``LOOKUP_BATCH`` students at a time (one
    statement each: not one per student): a student's state behind twice as many others
    (cookies of no one: removed students') is written."""
    data_dir = tmp_path / "data"
    with TestClient(create_app(settings_for(data_dir))) as host:
        code = start_class(host)
        pupil = student(host, code, "Ada")
        drags = host.app.state.live_drags  # type: ignore[attr-defined]

        def shared() -> str:
            with sqlite3.connect(data_dir / SQLITE_FILE) as db:
                return str(db.execute("SELECT shared_query FROM live_participants").fetchone()[0])

        queries = []
        for counts in (["5", "6"], ["7", "6"]):
            state = lab_form(counts, ["1", "3"])
            assert pupil.post(f"/class/{code}/state", content=state, headers=DRAGGED).is_success
            host.portal.call(drags.flush)
            queries.append(shared())
        with sqlite3.connect(data_dir / SQLITE_FILE) as db:
            (token,) = db.execute("SELECT token FROM live_participants").fetchone()

        async def behind_others() -> None:  # one batch: no flush of the writer's comes between
            for n in range(2 * LOOKUP_BATCH):
                drags.put(code, f"nobody-{n}", queries[0])
            drags.put(code, token, queries[0])
            await drags.flush()

        selects: list[str] = []

        def executed(_conn: object, _cursor: object, statement: str, *_: object) -> None:
            if statement.lstrip().upper().startswith("SELECT"):
                selects.append(statement)

        engine = drags.db.engine.sync_engine
        event.listen(engine, "before_cursor_execute", executed)
        try:
            host.portal.call(behind_others)
        finally:
            event.remove(engine, "before_cursor_execute", executed)
        assert shared() == queries[0] != queries[1]
        # One lookup per LOOKUP_BATCH students, not one per student: 500, 500 and 1.
        assert len(selects) == 3

        async def as_the_instructor_sends(after_us: int) -> None:
            """A state that reached the server ``after_us`` µs after the instructor sent one."""
            drags.put(code, token, queries[1])
            sent = drags.pending[token][2] - timedelta(microseconds=after_us)
            with sqlite3.connect(data_dir / SQLITE_FILE) as db:
                at = sent.strftime("%Y-%m-%d %H:%M:%S.%f")
                db.execute("UPDATE live_classes SET lab_sent_at = ?", (at,))
            await drags.flush()

        host.portal.call(as_the_instructor_sends, 0)
        assert shared() == queries[0]  # at the same moment: not after it, not written
        host.portal.call(as_the_instructor_sends, 1)
        assert shared() == queries[1]


# ---- the database setting (app/live/database.py) ------------------------------------------


def test_a_configured_database_is_read_by_its_driver_and_none_is_sqlite_in_the_data_folder(
    tmp_path: Path,
) -> None:
    """PostgreSQL's URL as PostgreSQL and hosts write it (any of its three spellings) is read
    by asyncpg, whatever the rest holds; no setting is SQLite in the file given; any other
    URL is kept as given."""
    file = tmp_path / "data" / SQLITE_FILE
    assert engine_url("", file) == f"sqlite+aiosqlite:///{file}"
    rest = "ada:p%3A%2F%2Fw@db.example:5432/atlas?sslmode=require&note=a://b"
    for scheme in ("postgresql", "postgres", "postgresql+asyncpg"):
        assert engine_url(f"{scheme}://{rest}", file) == f"postgresql+asyncpg://{rest}"
    elsewhere = f"sqlite+aiosqlite:///{tmp_path / 'elsewhere.sqlite3'}"
    assert engine_url(elsewhere, file) == elsewhere


@pytest.mark.parametrize(
    ("key", "password", "named"),
    [
        ("", "", "set ATLAS_SECRET_KEY and ATLAS_INSTRUCTOR_PASSWORD, the same on every replica"),
        (KEY, "", "set ATLAS_INSTRUCTOR_PASSWORD, the same on every replica"),
        ("", INSTRUCTOR_PASSWORD, "set ATLAS_SECRET_KEY, the same on every replica"),
    ],
    ids=["neither", "no-password", "no-key"],
)
def test_a_shared_database_refuses_to_start_without_each_shared_setting_naming_those_missing(
    tmp_path: Path, key: str, password: str, named: str
) -> None:
    """Replicas share PostgreSQL: without the key or the password configured the server does
    not start, and says which (the refusal in full); with both it starts (no database is
    reached before serving), and SQLite needs neither."""
    for scheme in ("postgresql", "postgres", "postgresql+asyncpg"):
        settings = Settings(
            data_dir=tmp_path / "data",
            database_url=f"{scheme}://ada@127.0.0.1:1/atlas",
            secret_key=key,
            instructor_password=password,
            confirm_enabled=False,
        )
        with pytest.raises(SharedKeyError) as refused:
            create_app(settings)
        assert str(refused.value) == (
            "ATLAS_DATABASE_URL names PostgreSQL, which several replicas share: "
            + named
            + ", so that a cookie signed by one replica is accepted by the others and one"
            " password starts a class on any (e.g. ATLAS_SECRET_KEY=$(python3 -c"
            " 'import secrets; print(secrets.token_urlsafe(32))'))"
        )
        both = settings.model_copy(
            update={"secret_key": KEY, "instructor_password": INSTRUCTOR_PASSWORD}
        )
        assert create_app(both).state.settings.database_url == settings.database_url
    create_app(
        Settings(
            data_dir=tmp_path / "data", secret_key="", instructor_password="", confirm_enabled=False
        )
    )


@pytest.mark.slow  # waits real time (a gap, a timeout): left out of make test-quick
def test_a_database_server_that_never_answers_is_given_up_on_at_start(tmp_path: Path) -> None:
    """A PostgreSQL address whose server takes the connection and never answers: the server's
    start fails within the connection's timeout (seconds), not asyncpg's minute."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel takes the connections
        port = silent.getsockname()[1]
        settings = settings_for(
            tmp_path / "data",
            database_url=f"postgresql://ada@127.0.0.1:{port}/atlas",
            instructor_password=INSTRUCTOR_PASSWORD,
        )
        with pytest.raises(TimeoutError), TestClient(create_app(settings)):
            pass


def test_a_page_read_while_the_database_fails_is_503_saying_when_to_try_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A page (GET) that meets a database that cannot be reached (an operational error: here
    its table of classes is gone) answers 503 with when to try again, in its header and its
    words, which say nothing of anything unsaved, and logs the request that met it."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as client:
        code = start_class(client)
        pupil = student(client, code, "Ada")
        with sqlite3.connect(tmp_path / "data" / SQLITE_FILE) as db:
            db.execute("PRAGMA foreign_keys=off")
            db.execute("DROP TABLE live_classes")
        with caplog.at_level(logging.WARNING, logger="atlas"):
            page = pupil.get(f"/class/{code}")
        assert page.status_code == 503
        assert page.text == (
            "The class's database cannot be reached just now."
            f" Try again in {RETRY_AFTER_S} seconds."
        )
        assert page.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert page.headers["Cache-Control"] == "no-store"
        logged = [record.getMessage() for record in caplog.records if record.name == "atlas"]
        assert len(logged) == 1
        assert logged[0].startswith(f"database unreachable for GET /class/{code}: ")
        assert "no such table: live_classes" in logged[0]  # the error met
        sent = pupil.post(f"/class/{code}/answer", data={"choice": "1"})
        assert sent.status_code == 503
        assert sent.text == (
            "The class's database cannot be reached just now, so what you sent was not saved."
            f" Try again in {RETRY_AFTER_S} seconds."
        )


def test_retries_at_a_database_that_is_away_come_soon_then_doubling_to_a_ceiling() -> None:
    waits = [backoff(attempt) for attempt in range(12)]
    assert waits[0] == BACKOFF_FIRST_S
    for before, after in itertools.pairwise(waits):
        assert after == min(2 * before, BACKOFF_MAX_S)
    assert waits[-1] == BACKOFF_MAX_S
    assert all(isinstance(wait, float) for wait in waits)


@pytest.mark.slow  # waits real time (a gap, a timeout): left out of make test-quick
def test_the_health_check_says_whether_the_database_answers(tmp_path: Path) -> None:
    """A database that answers is reachable; a server that refuses the connection, or takes it
    and never answers (given up on within seconds), is not."""

    async def check(url: str) -> bool:
        engine = create_async_engine(url)
        try:
            return await reachable(engine)
        finally:
            await engine.dispose()

    assert asyncio.run(check(f"sqlite+aiosqlite:///{tmp_path / 'here.sqlite3'}"))
    with socket.create_server(("127.0.0.1", 0)) as closed:
        refusing = closed.getsockname()[1]
    with socket.create_server(("127.0.0.1", 0)) as silent:
        for port in (refusing, silent.getsockname()[1]):
            assert not asyncio.run(check(f"postgresql+asyncpg://ada@127.0.0.1:{port}/atlas"))


def test_a_postgresql_refusing_more_connections_is_away_for_now_not_an_error(
    private_postgres: Postgres, tmp_path: Path
) -> None:
    """PostgreSQL refusing a connection because too many are open (here its role may open
    none: ``too many connections for role``, asyncpg's ``TooManyConnectionsError``) is the
    database away for now: the health check says it does not answer, and the error is judged
    unreachable (which the app answers 503 with when to try again, not 500)."""
    private_postgres.psql("CREATE ROLE crowded LOGIN CONNECTION LIMIT 0")
    database = private_postgres.create_database()
    url = engine_url(database.replace("://postgres@", "://crowded@"), tmp_path / SQLITE_FILE)

    async def check() -> tuple[bool, Exception]:
        engine = create_async_engine(url, connect_args=connect_args(url))
        try:
            health = await reachable(engine)
            try:
                async with engine.connect():
                    pass
            except Exception as error:
                return health, error
            raise AssertionError("the role connected")
        finally:
            await engine.dispose()

    health, error = asyncio.run(check())
    assert health is False
    assert "too many connections for role" in str(error)
    assert unreachable(error)


# ---- the class's pages (app/live/pages.py) ---------------------------------------------------


def test_the_projector_says_the_classs_state_and_where_to_join_it(tmp_path: Path) -> None:
    """The projector's page, while joining is open: the class's state in words, how many
    joined, and the join address (absolute, at the address the page was asked at) with the code
    and its QR; none of these ways to join once joining is locked or the class has ended."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        student(host, code, "Ada")
        screen = BeautifulSoup(host.get(f"/class/{code}/screen").text, "html.parser")
        state = screen.select_one(".live-screen-status > span")
        assert state is not None
        assert state.get_text() == "No question asked yet."
        joined = screen.select_one(".live-screen-joined")
        assert joined is not None
        assert joined.get_text(" ", strip=True) == "1 joined"
        address = screen.select_one(".live-screen-url")
        assert address is not None
        assert address.get_text() == f"http://testserver/join/{code}"
        shown = screen.select_one("#join-code")
        assert shown is not None
        assert shown.get_text() == code
        assert screen.select_one("#join-qr svg") is not None  # the same address to scan
        # Joining locked, or the class ended (unlocked): no way to join is shown.
        for action in ("lock", "unlock", "end"):
            assert host.post(f"/class/{code}/{action}").is_success
            screen = BeautifulSoup(host.get(f"/class/{code}/screen").text, "html.parser")
            assert (screen.select_one(".live-screen-join") is None) == (action != "unlock")
        state = screen.select_one(".live-screen-status > span")
        assert state is not None
        assert state.get_text() == "This class has ended: no one can join or answer."


def test_the_dashboards_stream_swaps_the_lab_picture_in_out_of_band(tmp_path: Path) -> None:
    """The dashboard's stream sends the picture of the class's lab states as an out-of-band
    swap of ``#class-labs`` (htmx replaces the section where it is), like its other parts."""
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        code = start_class(host)
        with host.stream("GET", f"/class/{code}/events?view=host") as response:
            first = next_event(events(response), lambda e: e.name == "host", "the dashboard")
        labs = BeautifulSoup(first.data, "html.parser").select_one("#class-labs")
        assert labs is not None
        assert labs["hx-swap-oob"] == "outerHTML"
