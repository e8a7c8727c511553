"""The class's pages and their live parts, rendered from a snapshot: the same partials for the
plain GET (the whole page, without JavaScript) and for the stream's events (htmx swaps them)."""

import hashlib
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.live.access import screen_token
from app.live.service import ClassState, LiveService, Snapshot, Student, shared_lab_view
from app.live.view import (
    current_shift,
    distribution,
    qr_svg,
    roster,
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


def now_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The dashboard's counts, bars and shared labs (live/_host_now.html)."""
    path = lesson_path(request, snapshot)
    return {
        "request": request,
        "snapshot": snapshot,
        "status": status(snapshot),
        "distribution": distribution(snapshot),
        "shift": current_shift(snapshot),
        "timer": timer(snapshot),
        "lab": shared_lab(snapshot.lab, snapshot.lab_query, path),
        "projected": shared_lab(snapshot.projected, snapshot.screen_query, path),
    }


def host_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The dashboard's live part: the above and every student's row."""
    return {**now_context(request, snapshot), "roster": roster(snapshot)}


def screen_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The projector: the bars once revealed (or live if the instructor chose so, but never
    during vote 1 of a question asked for two: the room would see the share right before
    discussing it), the shift of both votes once revealed."""
    shown = distribution(snapshot)
    revealed = snapshot.phase == "revealed"
    first_of_two = snapshot.rounds == 2 and snapshot.round == 1
    live = snapshot.show_live and not first_of_two
    return {
        "request": request,
        "code": snapshot.code,
        "status": status(snapshot),
        "ended": snapshot.ended,
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
    path = lesson_path(request, state)
    return {
        "request": request,
        "code": state.code,
        "ended": state.ended,
        "view": student_view(state, student),
        "lab": shared_lab(state.lab, state.lab_query, path),
        "own_lab": shared_lab(shared_lab_view(student.shared_query), student.shared_query, path),
        "has_lab": state.lesson.parts.gradient_lab,
    }


def render(name: str, context: dict[str, Any]) -> str:
    return templates_of(context["request"]).get_template(name).render(context)


def page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> Response:
    context.setdefault("request", request)
    response = HTMLResponse(render(name, context), status_code=status_code)
    response.headers["Cache-Control"] = NO_STORE
    return response


def digest(html: str) -> str:
    """Which live part a page shows: its stream sends it whole only when it differs."""
    return hashlib.sha256(html.encode()).hexdigest()[:16]


def host_page(request: Request, snapshot: Snapshot, **extra: Any) -> dict[str, Any]:
    """The dashboard's whole context: the live part (rendered, and its digest for the stream),
    the controls and the links."""
    context = host_context(request, snapshot)
    live_html = render("live/_host_live.html", context)
    key_url = f"{origin(request)}{route_path(request, 'class_key', code=snapshot.code)}"
    return {
        **context,
        "live_html": Markup(live_html),
        "shown": digest(live_html),
        "join_url": join_url(request, snapshot.code),
        "qr": qr_svg(join_url(request, snapshot.code)),
        # The keys after "#": a browser never sends them (app/live/routes.py, class_key).
        "cohost_url": f"{key_url}#{snapshot.host_token}",
        "screen_url": f"{key_url}#{screen_token(snapshot.host_token)}",
        "questions": snapshot.lesson.rendered.questions,
        **extra,
    }


# ---- the dashboard's stream: the whole live part once, then what changed ------------------


def host_whole(request: Request, snapshot: Snapshot, shown: str = "") -> str:
    """The dashboard's whole live part, to replace what a (re)connecting page shows; "" when
    that page shows it already (``shown``, its digest: a page just loaded is not sent its
    2,000 rows a second time)."""
    html = render("live/_host_live.html", host_context(request, snapshot))
    if shown and digest(html) == shown:
        return ""
    return render("live/_host_whole.html", {"request": request, "live_html": Markup(html)})


def _asked(snapshot: Snapshot) -> tuple[str | None, int]:
    """The question asked and its vote open: each row shows its answer in that vote."""
    return (snapshot.question.question.id if snapshot.question else None, snapshot.round)


def host_changes(request: Request, snapshot: Snapshot, last: Snapshot) -> str:
    """What changed on the dashboard since ``last`` ("": nothing): the counts, bars and shared
    labs when they changed, and the rows of the students who joined, answered, shared or left.
    A row shows the current question's answer, so a new question (or its vote 2) sends the whole
    part, as does the first student (the roster's table replaces "No one has joined yet")."""
    if _asked(snapshot) != _asked(last) or bool(snapshot.students) != bool(last.students):
        return host_whole(request, snapshot)
    now_html = render("live/_host_now.html", now_context(request, snapshot))
    if now_html == render("live/_host_now.html", now_context(request, last)):
        now_html = ""
    now, before = snapshot.students, last.students
    rows = roster(snapshot, [who for who, student in now.items() if before.get(who) != student])
    if not (now_html or rows or len(before) > len(now) or before.keys() - now.keys()):
        return ""
    context = {
        "request": request,
        "code": snapshot.code,
        "now_html": Markup(now_html),
        "changed": [row for row in rows if row.id in before],
        "joined": [row for row in rows if row.id not in before],
        "left": [who for who in before if who not in now],
    }
    return render("live/_host_changes.html", context)
