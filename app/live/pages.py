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
from app.live.labs import class_labs
from app.live.service import ClassState, LiveService, Snapshot, Student
from app.live.view import (
    distribution,
    qr_svg,
    roster,
    shared_lab,
    status,
    student_view,
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


def join_url(request: Request, code: str) -> str:
    """The join address as a phone must type or scan it: absolute, from the address this page
    was reached at (the instructor's own view; a class's other pages never carry it)."""
    return (
        f"{request.url.scheme}://{request.url.netloc}{route_path(request, 'join_code', code=code)}"
    )


def now_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The dashboard's counts, bars and shared labs (live/_host_now.html)."""
    path = lesson_path(request, snapshot)
    return {
        "request": request,
        "snapshot": snapshot,
        "status": status(snapshot),
        "distribution": distribution(snapshot),
        "lab": shared_lab(snapshot.lab, snapshot.lab_query, path),
        "projected": shared_lab(snapshot.projected, snapshot.screen_query, path),
    }


def host_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    """The dashboard's live part: the above and every student's row."""
    return {**now_context(request, snapshot), "roster": roster(snapshot)}


def screen_context(request: Request, snapshot: Snapshot) -> dict[str, Any]:
    shown = distribution(snapshot)
    revealed = snapshot.phase == "revealed"
    return {
        "request": request,
        "code": snapshot.code,
        "status": status(snapshot),
        "ended": snapshot.ended,
        "question": snapshot.question,
        "distribution": shown if (revealed or snapshot.show_live) else None,
        "answered": shown.summary if shown else "",
        "revealed": revealed,
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
        "has_lab": state.lesson.parts.gradient_lab,
    }


def student_lab(
    request: Request, state: ClassState, student: Student, typed: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The student's own lab (live/_class_lab.html): the lesson page's lab context at ``typed``
    (a refused form, as sent), else their last state, else the state sent to everyone, else the
    lesson's example; None once the class has ended or when the lesson has no lab."""
    if state.ended or not state.lesson.parts.gradient_lab:
        return None
    query: Mapping[str, str] = (
        typed
        if typed is not None
        else ImmutableMultiDict(parse_qsl(student.shared_query or state.lab_query))
    )
    return {
        **page_context(query),
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


def digest(html: str) -> str:
    """Which live part a page shows: its stream sends it whole only when it differs."""
    return hashlib.sha256(html.encode()).hexdigest()[:16]


def host_page(request: Request, snapshot: Snapshot, **extra: Any) -> dict[str, Any]:
    """The dashboard's whole context: the live part (rendered, and its digest for the stream),
    the controls and the links."""
    context = host_context(request, snapshot)
    live_html = render("live/_host_live.html", context)
    return {
        **class_labs_context(request, snapshot),
        **context,
        "live_html": Markup(live_html),
        "shown": digest(live_html),
        "join_url": join_url(request, snapshot.code),
        "qr": qr_svg(join_url(request, snapshot.code)),
        "cohost_url": (
            f"{request.url.scheme}://{request.url.netloc}"
            f"{route_path(request, 'class_host', code=snapshot.code)}?key={snapshot.host_token}"
        ),
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


def _question_id(snapshot: Snapshot) -> str | None:
    return snapshot.question.question.id if snapshot.question else None


def _row_changed(before: Mapping[int, Student], student: Student) -> bool:
    """Whether a student's row shows something new: a lab state is not on the row (a drag
    changes the class's picture, #class-labs, not 500 rows)."""
    was = before.get(student.id)
    return was is None or (was.nickname, was.answers) != (student.nickname, student.answers)


def host_changes(request: Request, snapshot: Snapshot, last: Snapshot) -> str:
    """What changed on the dashboard since ``last`` ("": nothing): the counts, bars and shared
    labs when they changed, and the rows of the students who joined, answered, shared or left.
    A row shows the current question's answer, so a new question sends the whole part, as does
    the first student (the roster's table replaces "No one has joined yet")."""
    if _question_id(snapshot) != _question_id(last) or bool(snapshot.students) != bool(
        last.students
    ):
        return host_whole(request, snapshot)
    now_html = render("live/_host_now.html", now_context(request, snapshot))
    if now_html == render("live/_host_now.html", now_context(request, last)):
        now_html = ""
    now, before = snapshot.students, last.students
    rows = roster(snapshot, [who for who, student in now.items() if _row_changed(before, student)])
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
