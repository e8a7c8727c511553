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
from app.live.events import Feeds
from app.live.pages import service_of
from app.live.service import LiveService, NotAllowedError
from app.live.store import LiveClass, Participant, Store
from app.web.templating import route_path


@dataclass
class Redirect(Exception):  # noqa: N818  (not an error: where to go instead)
    """Not a refusal: the page to go to instead (303 after a post, 308 for a moved GET)."""

    location: str
    status: int = 303


# Posts whose transaction only reads: a dragged lab state is written later, in a batch
# (app/live/drags.py), so it does not queue behind this worker's writers nor they behind it.
READING_POSTS = frozenset({"class_state"})


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one transaction: committed when the route returns (before its answer is
    sent), rolled back if it raises. After commit, this worker's streams of each class changed
    look again (the other workers learn of it from the database: app/live/notify.py)."""
    db: Store = request.app.state.live_store
    route = getattr(request.scope.get("route"), "name", "")
    write = request.method not in ("GET", "HEAD") and route not in READING_POSTS
    async with db.session(write=write) as session:
        yield session
    feeds: Feeds = request.app.state.live_feeds
    feeds.wake(session.info.pop(store.CHANGED, ()))


# scope="function": the transaction ends when the route returns, before the answer goes out,
# so an acknowledged answer is a committed one.
Session = Annotated[AsyncSession, Depends(db_session, scope="function")]
Service = Annotated[LiveService, Depends(service_of)]


async def url_class(request: Request, code: str, session: Session, service: Service) -> LiveClass:
    """The class of the URL's code (typed in any case). A GET with the code in lower case goes
    on to the address as the class writes it (its cookies' path)."""
    live = await service.find(session, code)
    if code != live.code and request.method == "GET":
        path = request.url.path.replace(f"/class/{code}", f"/class/{live.code}", 1)
        query = f"?{request.url.query}" if request.url.query else ""
        raise Redirect(f"{path}{query}", 308)
    return live


Class = Annotated[LiveClass, Depends(url_class)]


def hosted(request: Request, live: Class) -> LiveClass:
    """The class, if the request carries its host cookie (students are refused too)."""
    if not access.is_host(request, live.code, live.host_token):
        raise NotAllowedError(
            "This page and its actions are for the class's instructor. Open the dashboard from"
            " the device that started the class, or with the co-host link it shows."
        )
    return live


Hosted = Annotated[LiveClass, Depends(hosted)]
# The projector's view is the host's own, opened from the dashboard.
Screen = Hosted


async def student_of(request: Request, live: Class, session: Session) -> Participant | None:
    """The class's student whose cookie the request carries, if any."""
    token = access.student_token(request, live.code)
    found = await store.participant_by_token(session, live.id, token) if token else None
    if found is not None:
        # The confirmation's fair queue counts each student as their own client.
        request.state.participant = access.stable_key(found.token)
    return found


MaybeStudent = Annotated[Participant | None, Depends(student_of)]


def joined(request: Request, live: Class, student: MaybeStudent) -> Participant:
    """The student of this class; without their cookie, the join form for the class."""
    if student is None:
        raise Redirect(route_path(request, "join_code", code=live.code))
    return student


Joined = Annotated[Participant, Depends(joined)]
