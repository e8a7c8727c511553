"""The class's pages and their live parts, rendered from a snapshot: the same partials for the
plain GET (the whole page, without JavaScript) and for the stream's events (htmx swaps them)."""

import hashlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from markupsafe import Markup
from starlette.datastructures import ImmutableMultiDict
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.lab.panel import page_context
from app.live.access import screen_token
from app.live.labs import class_labs
from app.live.service import ClassState, LiveService, Snapshot, Student
from app.live.view import (
    attention,
    current_shift,
    distribution,
    qr_svg,
    shared_lab,
    status,
    student_view,
    timer,
)
from app.web.templating import route_path, templates_of

NO_STORE = "no-store"  # every class page is personal and changes by the second


def service_of(request: Request) -> LiveService:
    service: LiveService = request.app.state.live
    return service


def lesson_path(request: Request, state: ClassState) -> str:
    """The lesson page the class follows, under the app's address."""
    root: str = request.scope.get("root_path", "")
    return root + service_of(request).course.path(state.lesson.slug)


def origin(request: Request) -> str:
    """Where students reach the server: ATLAS_PUBLIC_URL, else the address this page was
    reached at (its Host header: the instructor's own view; a class's other pages never carry
    an absolute address)."""
    public: str = request.app.state.settings.public_url
    return public or f"{request.url.scheme}://{request.url.netloc}"


def join_url(request: Request, code: str) -> str:
    """The join address as a phone must type or scan it: absolute."""
    return f"{origin(request)}{route_path(request, 'join_code', code=code)}"


def host_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """What the dashboard's live parts show: the counts, the current question and its bars, the
    students who need attention first, the shared labs."""
    path = lesson_path(request, snapshot)
    return {
        "request": request,
        "snapshot": snapshot,
        "code": snapshot.code,
        "status": status(snapshot),
        "distribution": distribution(snapshot),
        "shift": current_shift(snapshot),
        "timer": timer(snapshot),
        "attention": attention(snapshot),
        "lab": shared_lab(snapshot.lab, snapshot.lab_query, path),
        "projected": shared_lab(snapshot.projected, snapshot.screen_query, path),
    }


# The dashboard's live parts, each the content of the element of this id on the page: the stream
# sends them all when a page (re)connects, then each one again only when it changed.
HOST_PARTS = {
    "host-now": "live/_host_now.html",
    "host-counts": "live/_host_counts.html",
    "host-roster": "live/_host_roster.html",
    "host-labs": "live/_host_labs.html",
}


def host_parts(request: Request, snapshot: Snapshot) -> dict[str, str]:
    context = host_context(request, snapshot)
    return {part: render(name, context) for part, name in HOST_PARTS.items()}


def screen_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The projector: the bars once revealed (or live if the instructor chose so, but never
    during vote 1 of a question asked for two: the room would see the share right before
    discussing it), the shift of both votes once revealed."""
    shown = distribution(snapshot)
    revealed = snapshot.phase == "revealed"
    first_of_two = snapshot.rounds == 2 and snapshot.round == 1
    live = snapshot.show_live and not first_of_two
    url = join_url(request, snapshot.code)
    return {
        "request": request,
        "code": snapshot.code,
        "status": status(snapshot),
        "ended": snapshot.ended,
        "joining": not snapshot.ended and not snapshot.joining_locked,
        "join_url": url,
        "qr": qr_svg(url),
        "question": snapshot.question,
        "distribution": shown if (revealed or live) else None,
        "vote": shown.vote if shown else "",
        "answered": shown.summary if shown else "",
        "revealed": revealed,
        "shift": current_shift(snapshot) if revealed else None,
        "timer": timer(snapshot),
        "joined": len(snapshot.students),
        "projected": shared_lab(
            snapshot.projected, snapshot.screen_query, lesson_path(request, snapshot)
        ),
    }


def student_context(request: Request, state: ClassState, student: Student) -> dict[str, Any]:
    view = student_view(state, student)
    # What the live part shows, as a digest on it: the page's script does not swap in the same
    # part again (a stream's first event just after the page loaded would drop a choice ticked
    # meanwhile).
    shows = repr((view.key, state.ended))
    return {
        "request": request,
        "code": state.code,
        "ended": state.ended,
        "view": view,
        "shows": hashlib.sha256(shows.encode()).hexdigest()[:16],
    }


def student_lab(
    request: Request, state: ClassState, student: Student, typed: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The student's own lab (live/_class_lab.html): the lesson page's lab context at ``typed``
    (a refused form, as sent), else their last state, else the state sent to everyone, else the
    lesson's example (``sent``: it is the state sent to everyone); None once the class has
    ended or when the lesson has no lab."""
    if state.ended or not state.lesson.parts.gradient_lab:
        return None
    shown = student.shared_query or state.lab_query
    query: Mapping[str, str] = typed if typed is not None else ImmutableMultiDict(parse_qsl(shown))
    return {
        **page_context(query),
        "sent": typed is None and bool(state.lab_query) and shown == state.lab_query,
        "in_class": route_path(request, "class_share", code=state.code),
        "drag_url": route_path(request, "class_state", code=state.code),
    }


def student_lab_html(request: Request, state: ClassState, student: Student) -> str:
    """The student's own lab as an out-of-band swap: where "send to everyone" moves it."""
    context = {"request": request, "class_lab": student_lab(request, state, student), "oob": True}
    return render("live/_class_lab.html", context)


def class_labs_context(request: Request, snapshot: Snapshot, oob: bool = False) -> dict[str, Any]:
    """The dashboard's picture of the class's lab states (live/_class_labs.html)."""
    return {
        "request": request,
        "code": snapshot.code,
        "labs": class_labs(snapshot) if snapshot.lesson.parts.gradient_lab else None,
        "projected_query": snapshot.screen_query,
        "projected_pairs": parse_qsl(snapshot.screen_query),
        "oob": oob,
    }


def class_labs_html(request: Request, snapshot: Snapshot) -> str:
    """The picture as the dashboard's stream sends it (an out-of-band swap of #class-labs)."""
    return render("live/_class_labs.html", class_labs_context(request, snapshot, oob=True))


def render(name: str, context: dict[str, Any]) -> str:
    return templates_of(context["request"]).get_template(name).render(context)


def page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> Response:
    context.setdefault("request", request)
    response = HTMLResponse(render(name, context), status_code=status_code)
    response.headers["Cache-Control"] = NO_STORE
    return response


def host_page(request: Request, snapshot: Snapshot, **extra: Any) -> dict[str, Any]:
    """The dashboard's whole context: the live parts (rendered), the controls and the links."""
    parts = host_parts(request, snapshot)
    url = join_url(request, snapshot.code)
    key_url = f"{origin(request)}{route_path(request, 'class_key', code=snapshot.code)}"
    return {
        **class_labs_context(request, snapshot),
        **host_context(request, snapshot),
        "parts": {part: Markup(html) for part, html in parts.items()},
        "join_url": url,
        "qr": qr_svg(url),
        # The keys after "#": a browser never sends them (app/live/routes.py, class_key).
        "cohost_url": f"{key_url}#{snapshot.host_token}",
        "screen_url": f"{key_url}#{screen_token(snapshot.host_token)}",
        "questions": snapshot.lesson.rendered.questions,
        **extra,
    }


def host_changes(request: Request, parts: dict[str, str]) -> str:
    """The dashboard's parts that changed as htmx's out-of-band swaps ("" for none)."""
    if not parts:
        return ""
    context = {"request": request, "parts": {part: Markup(html) for part, html in parts.items()}}
    return render("live/_host_changes.html", context)
