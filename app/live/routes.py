"""The live class's routes: ``/class/…`` for the instructor and the students, ``/join``."""

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.live import access
from app.live.codes import read_code
from app.live.events import VIEWS, student_stream, view_stream
from app.live.export import csv_response
from app.live.pages import (
    NO_STORE,
    host_page,
    join_url,
    page,
    screen_context,
    service_of,
    student_context,
)
from app.live.service import LiveError, Snapshot
from app.live.store import LiveClass, Participant
from app.live.view import qr_svg
from app.web.errors import error_response
from app.web.limits import BODY_RESPONSES
from app.web.templating import route_path

# What the class's pages answer besides 200, documented for the OpenAPI schema (/docs).
REFUSALS: dict[int | str, dict[str, Any]] = {
    403: {"description": "Not this class's host (or student), or a cross-site post."},
    404: {"description": "No class has this code (an HTML page for a browser)."},
    308: {"description": "The code typed in lower case: the same address as the class writes it."},
}
POSTED: dict[int | str, dict[str, Any]] = {
    **BODY_RESPONSES,
    **REFUSALS,
    303: {"description": "Done: the page to show next (post/redirect/get)."},
    409: {"description": "Refused in the class's present state; the page says why."},
    422: {"description": "A field is not valid; the page names it beside the field."},
    429: {"description": "The server keeps as many classes as it may without a password."},
}

router = APIRouter(tags=["live class"])
Endpoint = Callable[[Request], Awaitable[Response]]


# ---- helpers ------------------------------------------------------------------------------


def _error(request: Request, status: int, message: str) -> Response:
    """The site's error page for a browser (JSON for a script), in the app's one shape."""
    response = error_response(request.scope, status, message)
    response.headers["Cache-Control"] = NO_STORE
    return response


def _see(request: Request, name: str, **params: str) -> Response:
    return RedirectResponse(route_path(request, name, **params), status_code=303)


async def _class(request: Request, code: str) -> LiveClass | Response:
    """The class of the URL's code, or the HTML 404. A code typed in lower case is the same
    class: a GET is sent on to the address as the class writes it (its cookies' path)."""
    try:
        live = await service_of(request).find(code)
    except LiveError as error:
        return _error(request, 404, error.message)
    if code != live.code and request.method == "GET":
        path = request.url.path.replace(f"/class/{code}", f"/class/{live.code}", 1)
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"{path}{query}", status_code=308)
    return live


async def _hosted(request: Request, code: str) -> LiveClass | Response:
    """The class, if the request carries its host cookie; else 403 (students included)."""
    live = await _class(request, code)
    if isinstance(live, Response) or access.is_host(request, live.code, live.host_token):
        return live
    return _error(
        request,
        403,
        "This page and its actions are for the class's instructor. Open the dashboard from"
        " the device that started the class, or with the co-host link it shows.",
    )


async def _snapshot(request: Request, live: LiveClass) -> Snapshot | Response:
    snapshot = await service_of(request).snapshot(live.id)
    if snapshot is None:
        return _error(request, 404, "This class has just been deleted.")
    return snapshot


def _fields(form: FormData) -> dict[str, str]:
    """A lab form's text fields (the last value of a repeated one, as ``/lab`` reads a query)."""
    return {name: value for name, value in form.multi_items() if isinstance(value, str)}


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def _participant_id(form: FormData) -> int | None:
    raw = _text(form, "participant").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 12 else None


# ---- the instructor -----------------------------------------------------------------------


def _new_form(request: Request, error: LiveError | None = None, status_code: int = 200) -> Response:
    service = service_of(request)
    settings = request.app.state.settings
    return page(
        request,
        "live/new.html",
        {
            "lessons": service.course.lessons,
            "choose_lesson": service.course.folder,
            "needs_password": bool(settings.instructor_password),
            "error": error,
        },
        status_code=status_code,
    )


class FormRoute(APIRoute):
    """A form's address: GET shows the form, POST sends it (two routes, one OpenAPI operation
    each). A request with another method gets the app's 405 naming both (a route alone would
    name only its own method)."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "POST"):
            raise HTTPException(status_code=405, headers={"Allow": "GET, POST"})
        await super().handle(scope, receive, send)


def form_route(path: str, method: str, name: str, doc: str) -> Callable[[Endpoint], Endpoint]:
    def register(endpoint: Endpoint) -> Endpoint:
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            name=name,
            response_class=HTMLResponse,
            responses=POSTED if method == "POST" else REFUSALS,
            description=doc,
            route_class_override=FormRoute,
        )
        return endpoint

    return register


@form_route("/class/new", "GET", "class_new", "The form that starts a class.")
async def class_new(request: Request) -> Response:
    """The form that starts a class (asks which lesson in a course, and the password if set)."""
    return _new_form(request)


@form_route("/class/new", "POST", "class_create", "Start a class.")
async def class_create(request: Request) -> Response:
    """Start a class: 303 to its dashboard with the host cookie set."""
    service = service_of(request)
    settings = request.app.state.settings
    form = await request.form()
    password = settings.instructor_password
    if password and not hmac.compare_digest(_text(form, "password").encode(), password.encode()):
        error = LiveError(403, "That is not the instructor password.", "password")
        return _new_form(request, error, 403)
    slug = _text(form, "lesson") or service.course.lessons[0].slug
    try:
        live = await service.create(slug, open_start=not password)
    except LiveError as error:
        return _new_form(request, error, error.status)
    response = _see(request, "class_host", code=live.code)
    access.let_host_in(request, response, live.code, live.host_token)
    return response


@router.get("/class/{code}/host", response_class=HTMLResponse, name="class_host", responses=POSTED)
async def class_host(request: Request, code: str) -> Response:
    """The instructor's dashboard; ``?key=`` (the co-host link) lets another device in."""
    key = request.query_params.get("key")
    if key is not None:
        live = await _class(request, code)
        if isinstance(live, Response):
            return live
        if not hmac.compare_digest(key.encode(), live.host_token.encode()):
            return _error(request, 403, "This co-host link is not valid for this class.")
        response = _see(request, "class_host", code=live.code)
        access.let_host_in(request, response, live.code, live.host_token)
        return response
    hosted = await _hosted(request, code)
    if isinstance(hosted, Response):
        return hosted
    snapshot = await _snapshot(request, hosted)
    if isinstance(snapshot, Response):
        return snapshot
    return page(request, "live/host.html", host_page(request, snapshot))


async def _act(request: Request, code: str, action: str) -> Response:
    live = await _hosted(request, code)
    if isinstance(live, Response):
        return live
    service = service_of(request)
    form = await request.form()
    try:
        if action == "ask":
            await service.ask(live, _text(form, "question").strip())
        elif action in ("pause", "resume", "reveal"):
            phase = {"pause": "paused", "resume": "open", "reveal": "revealed"}[action]
            await service.set_phase(live, phase)
        elif action == "show":
            await service.show_results_live(live, _text(form, "shown") == "1")
        elif action == "lab":
            await service.share_lab(live, _fields(form))
        elif action == "project":
            await service.project(live, _participant_id(form))
        elif action == "remove":
            who = _participant_id(form)
            if who is None:
                raise LiveError(422, "Name the student to remove.", "participant")
            await service.remove(live, who)
        elif action == "end":
            await service.end(live)
        elif action == "delete":
            await service.delete(live)
            return _see(request, "class_new")
    except LiveError as error:
        snapshot = await _snapshot(request, live)
        if isinstance(snapshot, Response):
            return snapshot
        context = host_page(request, snapshot, error=error, lab_form=_fields(form))
        return page(request, "live/host.html", context, status_code=error.status)
    return _see(request, "class_host", code=live.code)


def _action(action: str, doc: str) -> None:
    async def endpoint(request: Request, code: str) -> Response:
        return await _act(request, code, action)

    endpoint.__doc__ = doc
    endpoint.__name__ = f"class_{action}"
    router.add_api_route(
        f"/class/{{code}}/{action}",
        endpoint,
        methods=["POST"],
        name=f"class_{action}",
        response_class=HTMLResponse,
        summary=doc,
        responses=POSTED,
    )


for _name, _doc in (
    ("ask", "Ask one of the lesson's questions (field question: its id); answering opens."),
    ("pause", "Pause answering the current question."),
    ("resume", "Open answering the current question again."),
    ("reveal", "Reveal the answer and the distribution; answers are refused after it (409)."),
    ("show", "Show the distribution on the projector while answers come in (shown=1) or not."),
    ("lab", "Share a lab state (the lab's own fields: counts, means, eta, w, …) with everyone."),
    ("project", "Put a student's shared lab state on the projector (participant), or none."),
    ("remove", "Remove a student (participant) and their answers."),
    ("end", "End the class: no one joins or answers any more; everything stays for export."),
    ("delete", "Delete the class with all its data."),
):
    _action(_name, _doc)


@router.get(
    "/class/{code}/screen", response_class=HTMLResponse, name="class_screen", responses=REFUSALS
)
async def class_screen(request: Request, code: str) -> Response:
    """The projector's view: large type, never a nickname."""
    live = await _hosted(request, code)
    if isinstance(live, Response):
        return live
    snapshot = await _snapshot(request, live)
    if isinstance(snapshot, Response):
        return snapshot
    url = join_url(request, snapshot.code)
    context = {**screen_context(request, snapshot), "join_url": url, "qr": qr_svg(url)}
    return page(request, "live/screen.html", context)


@router.get(
    "/class/{code}/export.csv",
    name="class_export",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}, "description": "The answers."}, **REFUSALS},
)
async def class_export(request: Request, code: str) -> Response:
    """Every answer: nickname,question,choice,correct,answered_at (ISO 8601 UTC)."""
    live = await _hosted(request, code)
    if isinstance(live, Response):
        return live
    return csv_response(live.code, await service_of(request).export(live))


# ---- the students -------------------------------------------------------------------------


def _join_form(
    request: Request,
    code: str = "",
    nickname: str = "",
    error: LiveError | None = None,
    status_code: int = 200,
) -> Response:
    context: dict[str, Any] = {"code": code, "nickname": nickname, "error": error}
    return page(request, "live/join.html", context, status_code=status_code)


@form_route("/join", "GET", "join", "The join form.")
async def join(request: Request) -> Response:
    """The join form: the class code and a nickname."""
    return _join_form(request, code=request.query_params.get("code", "")[:40])


@router.get("/join/{code}", response_class=HTMLResponse, name="join_code")
async def join_code(request: Request, code: str) -> Response:
    """The join form with the code filled in (the QR code's address)."""
    return _join_form(request, code=(read_code(code) or code)[:40])


@form_route("/join", "POST", "join_post", "Join a class.")
async def join_post(request: Request) -> Response:
    """Join: 303 to the class's page with the student's cookie set; else the form again with the
    reason beside the field (422 bad nickname, 409 taken or ended, 404 unknown code)."""
    form = await request.form()
    typed_code, typed_nickname = _text(form, "code"), _text(form, "nickname")
    service = service_of(request)
    # Back in the same class on this device: the cookie brings them back as themselves.
    try:
        found = await service.find(typed_code)
        student = await service.participant(found, access.student_token(request, found.code))
        if student is not None and found.ended_at is None:
            return _see(request, "class_page", code=found.code)
        live, student = await service.join(typed_code, typed_nickname)
    except LiveError as error:
        return _join_form(request, typed_code[:40], typed_nickname[:200], error, error.status)
    response = _see(request, "class_page", code=live.code)
    access.let_student_in(request, response, live.code, student.token)
    return response


async def _student(request: Request, code: str) -> tuple[LiveClass, Participant] | Response:
    live = await _class(request, code)
    if isinstance(live, Response):
        return live
    student = await service_of(request).participant(live, access.student_token(request, live.code))
    if student is None:
        return _see(request, "join_code", code=live.code)
    request.state.participant = access.stable_key(student.token)
    return live, student


async def _student_page(
    request: Request, live: LiveClass, student: Participant, **extra: Any
) -> Response:
    """The student's page, or its live part for htmx, from the class's row and their own answers
    (it shows nothing of the other students, so it reads none of them)."""
    found = await service_of(request).student_state(live.id, student.id)
    if found is None:
        return _error(request, 404, "This class has just been deleted.")
    state, me = found
    if me is None:
        return _see(request, "join_code", code=live.code)
    context = {**student_context(request, state, me), **extra}
    status_code = extra["error"].status if extra.get("error") else 200
    htmx = request.headers.get("HX-Request") == "true"
    name = "live/_student_live.html" if htmx else "live/student.html"
    response = page(request, name, context, status_code=status_code)
    response.headers["Vary"] = "HX-Request"
    return response


@router.get("/class/{code}", response_class=HTMLResponse, name="class_page", responses=POSTED)
async def class_page(request: Request, code: str) -> Response:
    """A student's page: the current question, their verdict once revealed, the shared lab."""
    found = await _student(request, code)
    if isinstance(found, Response):
        return found
    return await _student_page(request, *found)


async def _student_act(request: Request, code: str, action: str) -> Response:
    """A student's post: the live part back for htmx, else 303 to their page; a refusal shows
    the page (or the part) with the reason and its status."""
    found = await _student(request, code)
    if isinstance(found, Response):
        return found
    live, student = found
    form = await request.form()
    service = service_of(request)
    try:
        if action == "answer":
            answer = {name: form.getlist(name) for name in ("question", "choice")}
            await service.answer(live, student, answer)
        else:
            await service.share_own_lab(live, student, _fields(form))
    except LiveError as error:
        return await _student_page(request, live, student, error=error, share_form=_fields(form))
    if request.headers.get("HX-Request") == "true":
        return await _student_page(request, live, student)
    return _see(request, "class_page", code=live.code)


@router.post(
    "/class/{code}/answer", response_class=HTMLResponse, name="class_answer", responses=POSTED
)
async def class_answer(request: Request, code: str) -> Response:
    """Answer the current question (question, choice); 409 once paused, revealed or ended."""
    return await _student_act(request, code, "answer")


@router.post(
    "/class/{code}/share", response_class=HTMLResponse, name="class_share", responses=POSTED
)
async def class_share(request: Request, code: str) -> Response:
    """Send my lab state (the lab's own fields) to the instructor."""
    return await _student_act(request, code, "share")


@router.get(
    "/class/{code}/events",
    name="class_events",
    response_class=Response,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The stream."},
        **REFUSALS,
    },
)
async def class_events(request: Request, code: str) -> Response:
    """The page's live parts as Server-Sent Events: the current state first, then changes.
    The host's dashboard (host cookie), the projector (``?view=screen``) or a student's page."""
    view = request.query_params.get("view")
    if view in VIEWS:
        hosted = await _hosted(request, code)
        return hosted if isinstance(hosted, Response) else view_stream(request, hosted.id, view)
    live = await _class(request, code)
    if isinstance(live, Response):
        return live
    student = await service_of(request).participant(live, access.student_token(request, live.code))
    if student is None:
        return _error(request, 403, "Join the class first: this stream is for its students.")
    request.state.participant = access.stable_key(student.token)
    return student_stream(request, live.id, student.id)
