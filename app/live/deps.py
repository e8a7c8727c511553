"""Who and what a class's request is about, as FastAPI dependencies: the request's one database
session (one transaction), the class of the URL, its host, its student, the projector's viewer.

A dependency that refuses raises: a :class:`~app.live.service.RefusalError` (the routes' layer
answers it with its status, app/live/routes.py) or :class:`Redirect` (a student without their
cookie goes to the join form; a code typed in lower case to the address as the class writes it).
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from app.live import access, store
from app.live.codes import read_code
from app.live.events import Feeds
from app.live.guesses import Guesses
from app.live.pages import service_of
from app.live.service import LiveService, NotAllowedError, NotFoundError
from app.live.store import LiveClass, Participant, Store
from app.live.streams import Streams, Turn
from app.web.templating import route_path


@dataclass
class Redirect(Exception):  # noqa: N818  (not an error: where to go instead)
    """Not a refusal: the page to go to instead (303 after a post, 308 for a moved GET)."""

    location: str
    status: int = 303


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one transaction: committed when the route returns (before its answer is
    sent), rolled back if it raises; a post with the class's host cookie writes before the
    students' posts waiting. After commit, this worker's streams of each class changed
    look again (the other workers learn of it from the database: app/live/notify.py)."""
    db: Store = request.app.state.live_store
    write = request.method not in ("GET", "HEAD")
    # The instructor's actions take this worker's next turn to write (app/live/store.py).
    code = read_code(request.path_params.get("code", ""))
    first = write and code is not None and access.signed_host(request, code)
    async with db.session(write=write, first=first) as session:
        yield session
    feeds: Feeds = request.app.state.live_feeds
    feeds.wake(session.info.pop(store.CHANGED, ()))


# scope="function": the transaction ends when the route returns, before the answer goes out,
# so an acknowledged answer is a committed one.
Session = Annotated[AsyncSession, Depends(db_session, scope="function")]


async def live_service(request: Request) -> LiveService:
    """The app's live service (``async``: a plain ``def`` dependency would cost every request of
    the class a trip to the thread pool)."""
    return service_of(request)


Service = Annotated[LiveService, Depends(live_service)]


@dataclass
class Guess:
    """A lookup of a class code by one client, admitted by its worker's :class:`Guesses`."""

    guesses: Guesses
    client: str

    def missed(self) -> None:
        self.guesses.missed(self.client)


async def code_guess(request: Request, code: str = "") -> Guess:
    """Admit this request's lookup of a class code (app/live/guesses.py): at once, or after its
    client's turn when it has guessed codes, or refused (429). A request carrying a cookie
    the server signed for the URL's class knows the code: it is never held up. Resolved before
    the request's session opens, so a wait holds no connection or write lock."""
    guess = Guess(request.app.state.live_guesses, request.client.host if request.client else "")
    known = read_code(code)
    if known is None or not access.holds_cookie_for(request, known):
        await guess.guesses.admit(guess.client)
    return guess


CodeGuess = Annotated[Guess, Depends(code_guess)]


async def url_class(
    request: Request, code: str, guess: CodeGuess, session: Session, service: Service
) -> LiveClass:
    """The class of the URL's code (typed in any case). A GET with the code in lower case goes
    on to the address as the class writes it (its cookies' path). A code of no class counts as
    a miss of the client's."""
    try:
        live = await service.find(session, code)
    except NotFoundError:
        guess.missed()
        raise
    if code != live.code and request.method == "GET":
        path = request.url.path.replace(f"/class/{code}", f"/class/{live.code}", 1)
        query = f"?{request.url.query}" if request.url.query else ""
        raise Redirect(f"{path}{query}", 308)
    return live


Class = Annotated[LiveClass, Depends(url_class)]


async def hosted(request: Request, live: Class) -> LiveClass:
    """The class, if the request carries its host cookie (students are refused too)."""
    if not access.is_host(request, live.code, live.host_token):
        raise NotAllowedError(
            "This page and its actions are for the class's instructor. Open the dashboard from"
            " the device that started the class, or with the co-host link it shows."
        )
    return live


Hosted = Annotated[LiveClass, Depends(hosted)]


async def screened(request: Request, live: Class) -> LiveClass:
    """The class, if the request carries its host cookie or its projector's (the view-only
    link's): the projector's view and its stream, nothing else."""
    if not (
        access.is_host(request, live.code, live.host_token)
        or access.is_viewer(request, live.code, live.host_token)
    ):
        raise NotAllowedError(
            "The projector's view is opened from the class's dashboard, or on another device"
            " with the projector link the dashboard shows."
        )
    return live


Screen = Annotated[LiveClass, Depends(screened)]


async def student_of(request: Request, live: Class, session: Session) -> Participant | None:
    """The class's student whose cookie the request carries, if any."""
    token = access.student_token(request, live.code)
    found = await store.participant_by_token(session, live.id, token) if token else None
    if found is not None:
        # The confirmation's fair queue counts each student as their own client.
        request.state.participant = access.stable_key(found.token)
    return found


MaybeStudent = Annotated[Participant | None, Depends(student_of)]


async def joined(request: Request, live: Class, student: MaybeStudent) -> Participant:
    """The student of this class; without their cookie, the join form for the class."""
    if student is None:
        raise Redirect(route_path(request, "join_code", code=live.code))
    return student


Joined = Annotated[Participant, Depends(joined)]


@dataclass(frozen=True)
class Signed:
    """The student's cookie for the class of the URL, checked by its signature alone: whom the
    class let in. Whether they are in it still, the database says when it is read."""

    code: str
    token: str


async def signed_student(request: Request, code: str) -> Signed:
    """The student by their signed cookie, without the database; without it, the join form.
    An address whose code is not one a class can have names no class (404)."""
    known = read_code(code)
    if known is None:
        raise NotFoundError(f"There is no class with the code “{code[:12]}”.", "code")
    token = access.student_token(request, known)
    if token is None:
        raise Redirect(route_path(request, "join_code", code=known))
    return Signed(known, token)


SignedStudent = Annotated[Signed, Depends(signed_student)]


async def stream_turn(request: Request) -> AsyncIterator[Turn]:
    """The client's turn to open a stream (app/live/streams.py), before anything else of the
    request is done; given back once its first event is sent, or when the request ends."""
    streams: Streams = request.app.state.live_streams
    turn = await streams.turn(request.client.host if request.client else "")
    try:
        yield turn
    finally:
        turn.release()


StreamTurn = Annotated[Turn, Depends(stream_turn)]
