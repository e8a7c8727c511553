"""The live class's routes: ``/class/…`` for the instructor and the students, ``/join``.

Each route takes what it is about from dependencies (app/live/deps.py), makes one service call
on the request's one transaction and renders or redirects. A refusal the service raises is
answered here: inline beside its field on a form's page, else by :func:`refused` (the site's
error page for a browser, JSON for a script) with the status its kind maps to.
"""

import hmac
from collections.abc import Awaitable, Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import ImmutableMultiDict
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.live import access
from app.live.answers import Answers
from app.live.codes import read_code
from app.live.deps import (
    Class,
    CodeGuess,
    Hosted,
    Joined,
    MaybeStudent,
    Redirect,
    Screen,
    Service,
    Session,
    SignedStudent,
    StreamTurn,
    hosted,
    screened,
)
from app.live.events import host_stream, screen_stream, student_stream
from app.live.export import csv_response
from app.live.guesses import TooManyGuessesError
from app.live.instructor import check_password
from app.live.pages import (
    NO_STORE,
    host_changes,
    host_page,
    host_parts,
    page,
    screen_context,
    student_context,
    student_lab,
)
from app.live.report import class_report as class_report_view
from app.live.service import (
    BusyError,
    ConflictError,
    GivenAnswer,
    InvalidError,
    LimitReachedError,
    NotAllowedError,
    NotFoundError,
    RefusalError,
    Student,
)
from app.live.store import LiveClass
from app.live.view import FILTERS, roster_page
from app.web.errors import error_response
from app.web.limits import BODY_RESPONSES
from app.web.templating import route_path

STATUS: dict[type[RefusalError], int] = {
    NotFoundError: 404,
    NotAllowedError: 403,
    ConflictError: 409,
    InvalidError: 422,
    LimitReachedError: 429,
    BusyError: 503,
}

# What the class's pages answer besides 200, documented for the OpenAPI schema (/docs).
REFUSALS: dict[int | str, dict[str, Any]] = {
    403: {"description": "Not this class's host (or student), or a cross-site post."},
    404: {"description": "No class has this code (an HTML page for a browser)."},
    308: {"description": "The code typed in lower case: the same address as the class writes it."},
    429: {
        "description": (
            "This client tried too many codes of no class: Retry-After says when to try again."
        )
    },
}
POSTED: dict[int | str, dict[str, Any]] = {
    **BODY_RESPONSES,
    **REFUSALS,
    303: {"description": "Done: the page to show next (post/redirect/get)."},
    409: {"description": "Refused in the class's present state; the page says why."},
    422: {"description": "A field is not valid; the page names it beside the field."},
    429: {
        "description": (
            "The server keeps as many classes as it may; or too many wrong passwords; or this"
            " client tried too many codes of no class (Retry-After says when to try again)."
        )
    },
}


class FormRoute(APIRoute):
    """A form's address: GET shows the form, POST sends it (two routes, one OpenAPI operation
    each). A request with another method gets the app's 405 naming both (a route alone would
    name only its own method)."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "POST"):
            raise HTTPException(status_code=405, headers={"Allow": "GET, POST"})
        await super().handle(scope, receive, send)


# The forms' addresses first: ``/class/new`` is matched before ``/class/{code}``.
forms = APIRouter(tags=["live class"], default_response_class=HTMLResponse, route_class=FormRoute)
router = APIRouter(tags=["live class"], default_response_class=HTMLResponse)


def status_of(refusal: RefusalError) -> int:
    return next(STATUS[kind] for kind in type(refusal).__mro__ if kind in STATUS)


def _when_to_retry(response: Response, error: RefusalError | None) -> Response:
    """``Retry-After`` on the answer to a refusal that says when to try again."""
    if isinstance(error, TooManyGuessesError):
        response.headers["Retry-After"] = str(error.retry_after)
    return response


async def refused(request: Request, error: Exception) -> Response:
    """The app's answer to a refusal no form shows: its status, the site's error page (with
    ``Retry-After`` when the refusal says when to try again)."""
    assert isinstance(error, RefusalError)
    response = error_response(request.scope, status_of(error), error.message)
    response.headers["Cache-Control"] = NO_STORE
    return _when_to_retry(response, error)


async def redirected(_request: Request, error: Exception) -> Response:
    assert isinstance(error, Redirect)
    return RedirectResponse(error.location, status_code=error.status)


def _see(request: Request, name: str, **params: str) -> Response:
    return RedirectResponse(route_path(request, name, **params), status_code=303)


# ---- forms --------------------------------------------------------------------------------


class NewClassForm(BaseModel):
    # Required by the schema, as a client must send it; a device remembered as the
    # instructor's (its cookie) may leave it out.
    model_config = ConfigDict(json_schema_extra={"required": ["password"]})

    lesson: str = ""
    password: str = Field(
        "", description="The instructor password (not asked of a device that gave it before)."
    )


class KeyForm(BaseModel):
    key: str = ""


class AskForm(BaseModel):
    question: str = ""
    rounds: str = "1"


class TimerForm(BaseModel):
    seconds: str = ""


class ShowForm(BaseModel):
    shown: str = ""


# The tables' ids are INTEGER, 32 bits on PostgreSQL: a larger number names no row (and
# PostgreSQL would refuse it as a query's argument: a 500).
MAX_ID = 2**31 - 1


def _row_id(typed: str) -> int | None:
    """The id of a row as a form sends it, or None for anything that is no id."""
    raw = typed.strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_ID))):
        return None
    return int(raw) if int(raw) <= MAX_ID else None


class StudentForm(BaseModel):
    participant: str = ""

    def id(self) -> int | None:
        return _row_id(self.participant)


class RemovedForm(BaseModel):
    removed: str = ""

    def id(self) -> int | None:
        return _row_id(self.removed)


class LabForm(BaseModel):
    """A lab state in the lab's own fields (counts, means, eta, w, targets, …)."""

    model_config = ConfigDict(extra="allow")

    def fields(self) -> ImmutableMultiDict[str, str]:
        """Each field's text, every value of a repeated one (the lab's own form sends one
        ``counts`` and one ``means`` per rank, as ``/lab`` reads them); ``get`` gives the last."""
        return ImmutableMultiDict(
            [
                (name, str(item))
                for name, value in (self.model_extra or {}).items()
                for item in (value if isinstance(value, list) else [value])
            ]
        )


class JoinForm(BaseModel):
    code: str = ""
    nickname: str = ""


class AnswerForm(BaseModel):
    question: list[str] = []
    choice: list[str] = []
    round: str = ""
    confidence: str = ""


# ---- the instructor -----------------------------------------------------------------------


def _new_form(
    request: Request, service: Service, error: RefusalError | None = None, status_code: int = 200
) -> Response:
    context = {
        "lessons": service.course.lessons,
        "choose_lesson": service.course.folder,
        "needs_password": not access.is_instructor(request),
        "error": error,
    }
    return _when_to_retry(page(request, "live/new.html", context, status_code=status_code), error)


@forms.get("/class/new", name="class_new", responses=REFUSALS)
async def class_new(request: Request, service: Service) -> Response:
    """The form that starts a class (asks which lesson in a course, and the password if set)."""
    return _new_form(request, service)


@forms.post("/class/new", name="class_create", responses=POSTED)
async def class_create(
    request: Request,
    session: Session,
    service: Service,
    form: Annotated[NewClassForm, Form(default_factory=NewClassForm)],
) -> Response:
    """Start a class (field password, unless this device gave it before): 303 to its
    dashboard with the host cookie set, and the device remembered as the instructor's."""
    remembered = access.is_instructor(request)
    try:
        if not remembered:
            await check_password(request, form.password)
        slug = form.lesson or service.course.lessons[0].slug
        live = await service.create(session, slug)
    except RefusalError as error:
        return _new_form(request, service, error, status_of(error))
    response = _see(request, "class_host", code=live.code)
    access.let_host_in(request, response, live.code, live.host_token)
    if not remembered:
        access.remember_instructor(request, response)
    return response


async def _host_page(
    request: Request,
    session: Session,
    service: Service,
    live: LiveClass,
    error: RefusalError | None = None,
    lab_form: Mapping[str, str] | None = None,
) -> Response:
    snapshot = await service.snapshot(session, live.id)
    if snapshot is None:
        raise NotFoundError("This class has just been deleted.")
    context = host_page(
        request,
        snapshot,
        error=error,
        lab_form=lab_form,
        removed=await service.removed(session, live),
        class_size=service.class_size,
    )
    return page(request, "live/host.html", context, status_code=status_of(error) if error else 200)


@router.get("/class/{code}/host", name="class_host", responses=POSTED)
async def class_host(
    request: Request, live: Hosted, session: Session, service: Service
) -> Response:
    """The instructor's dashboard."""
    return await _host_page(request, session, service, live)


def _key_form(
    request: Request, code: str, error: RefusalError | None = None, status_code: int = 200
) -> Response:
    context = {"code": code, "error": error}
    return _when_to_retry(page(request, "live/key.html", context, status_code=status_code), error)


@forms.get("/class/{code}/key", name="class_key", responses=REFUSALS)
async def class_key(request: Request, live: Class) -> Response:
    """The co-host and projector links' page: it posts the key the link carries after "#"."""
    return _key_form(request, live.code)


@forms.post("/class/{code}/key", name="class_key_post", responses=POSTED)
async def class_key_post(
    request: Request, live: Class, form: Annotated[KeyForm, Form(default_factory=KeyForm)]
) -> Response:
    """Open the class on this device with a key (field key): the host's (co-host link: 303 to
    the dashboard) or the projector's (303 to the projector's view, nothing else)."""
    typed = form.key.strip().encode()
    if hmac.compare_digest(typed, live.host_token.encode()):
        response = _see(request, "class_host", code=live.code)
        access.let_host_in(request, response, live.code, live.host_token)
        return response
    if hmac.compare_digest(typed, access.screen_token(live.host_token).encode()):
        response = _see(request, "class_screen", code=live.code)
        access.let_viewer_in(request, response, live.code, live.host_token)
        return response
    error = NotAllowedError("This key opens nothing in this class: copy its link again.", "key")
    return _key_form(request, live.code, error, status_of(error))


async def _acted(
    request: Request,
    session: Session,
    service: Service,
    live: LiveClass,
    action: Awaitable[None],
    lab_form: Mapping[str, str] | None = None,
) -> Response:
    """A host action done: 303 back to the dashboard; refused: the dashboard with the reason.
    Sent by htmx (the pacing controls), the reason comes back, or the dashboard's live parts as
    this transaction leaves them (out-of-band swaps: the dashboard shows a *Pause* when its
    post returns, not when its stream next reads the class); a 2,000-row page is not loaded
    again."""
    htmx = request.headers.get("HX-Request") == "true"
    try:
        await action
    except RefusalError as error:
        if htmx:
            context = {"error": error}
            return page(request, "live/_host_error.html", context, status_code=status_of(error))
        return await _host_page(request, session, service, live, error, lab_form)
    if htmx:
        snapshot = await service.snapshot(session, live.id)
        parts = host_parts(request, snapshot) if snapshot is not None else {}
        changes = Markup(host_changes(request, parts))
        return page(request, "live/_host_error.html", {"error": None, "changes": changes})
    return _see(request, "class_host", code=live.code)


@router.post("/class/{code}/ask", name="class_ask", responses=POSTED)
async def class_ask(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[AskForm, Form(default_factory=AskForm)],
) -> Response:
    """Ask one of the lesson's questions (question: its id) for one vote or two (rounds: 1 or
    2, peer instruction); vote 1 opens."""
    ask = service.ask(session, live, form.question.strip(), form.rounds)
    return await _acted(request, session, service, live, ask)


@router.post("/class/{code}/revote", name="class_revote", responses=POSTED)
async def class_revote(
    request: Request, live: Hosted, session: Session, service: Service
) -> Response:
    """Open vote 2 of a question asked for two votes (409 otherwise, saying why)."""
    return await _acted(request, session, service, live, service.revote(session, live))


@router.post("/class/{code}/timer", name="class_timer", responses=POSTED)
async def class_timer(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[TimerForm, Form(default_factory=TimerForm)],
) -> Response:
    """Start a discussion timer of ``seconds`` (10 to 3600) on the projector and the students'
    pages; it only informs, the instructor opens the re-vote."""
    timer = service.start_timer(session, live, form.seconds)
    return await _acted(request, session, service, live, timer)


def _phase_route(action: str, phase: Literal["open", "paused", "revealed"], doc: str) -> None:
    async def endpoint(
        request: Request, live: Hosted, session: Session, service: Service
    ) -> Response:
        return await _acted(
            request, session, service, live, service.set_phase(session, live, phase)
        )

    endpoint.__doc__ = doc
    endpoint.__name__ = f"class_{action}"
    router.post(f"/class/{{code}}/{action}", name=f"class_{action}", responses=POSTED)(endpoint)


_phase_route("pause", "paused", "Pause answering the current question.")
_phase_route("resume", "open", "Open answering the current question again.")
_phase_route(
    "reveal",
    "revealed",
    "Reveal the answer and the distribution; answers are refused after it (409).",
)


@router.post("/class/{code}/show", name="class_show", responses=POSTED)
async def class_show(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[ShowForm, Form(default_factory=ShowForm)],
) -> Response:
    """Show the distribution on the projector while answers come in (shown=1) or not."""
    show = service.show_results_live(session, live, form.shown == "1")
    return await _acted(request, session, service, live, show)


@router.post("/class/{code}/lab", name="class_lab", responses=POSTED)
async def class_lab(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[LabForm, Form(default_factory=LabForm)],
) -> Response:
    """Share a lab state (the lab's own fields: counts, means, eta, w, …) with everyone."""
    fields = form.fields()
    share = service.share_lab(session, live, fields)
    return await _acted(request, session, service, live, share, fields)


@router.post("/class/{code}/project", name="class_project", responses=POSTED)
async def class_project(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[StudentForm, Form(default_factory=StudentForm)],
) -> Response:
    """Put a student's shared lab state on the projector (participant), or none."""
    project = service.project(session, live, form.id())
    return await _acted(request, session, service, live, project)


@router.post("/class/{code}/remove", name="class_remove", responses=POSTED)
async def class_remove(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[StudentForm, Form(default_factory=StudentForm)],
) -> Response:
    """Remove a student (participant) and their answers; their device and nickname stay out
    until readmitted."""

    async def remove() -> None:
        who = form.id()
        if who is None:
            raise InvalidError("Name the student to remove.", "participant")
        await service.remove(session, live, who)

    return await _acted(request, session, service, live, remove())


@router.post("/class/{code}/readmit", name="class_readmit", responses=POSTED)
async def class_readmit(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    form: Annotated[RemovedForm, Form(default_factory=RemovedForm)],
) -> Response:
    """Let a removed student (removed: the dashboard's id of the removal) join again."""

    async def readmit() -> None:
        which = form.id()
        if which is None:
            raise InvalidError("Name the removed student to let back in.", "removed")
        await service.readmit(session, live, which)

    return await _acted(request, session, service, live, readmit())


@router.post("/class/{code}/lock", name="class_lock", responses=POSTED)
async def class_lock(
    request: Request, live: Hosted, session: Session, service: Service
) -> Response:
    """Close joining: a new student is refused (409 with the reason); those in stay."""
    return await _acted(request, session, service, live, service.lock(session, live, True))


@router.post("/class/{code}/unlock", name="class_unlock", responses=POSTED)
async def class_unlock(
    request: Request, live: Hosted, session: Session, service: Service
) -> Response:
    """Open joining again."""
    return await _acted(request, session, service, live, service.lock(session, live, False))


@router.post("/class/{code}/end", name="class_end", responses=POSTED)
async def class_end(request: Request, live: Hosted, session: Session, service: Service) -> Response:
    """End the class: no one joins or answers any more; everything stays for export."""
    return await _acted(request, session, service, live, service.end(session, live))


@router.post("/class/{code}/delete", name="class_delete", responses=POSTED)
async def class_delete(
    live: Hosted, request: Request, session: Session, service: Service
) -> Response:
    """Delete the class with all its data."""
    await service.delete(session, live)
    return _see(request, "class_new")


@router.get("/class/{code}/screen", name="class_screen", responses=REFUSALS)
async def class_screen(
    request: Request, live: Screen, session: Session, service: Service
) -> Response:
    """The projector's view: large type, never a nickname."""
    snapshot = await service.snapshot(session, live.id)
    if snapshot is None:
        raise NotFoundError("This class has just been deleted.")
    return page(request, "live/screen.html", screen_context(request, snapshot))


@router.get("/class/{code}/students", name="class_students", responses=REFUSALS)
async def class_students(
    request: Request,
    live: Hosted,
    session: Session,
    service: Service,
    show: str = "all",
    number: Annotated[str, Query(alias="page")] = "1",
) -> Response:
    """Every student, a hundred a page (page, from 1), or only those a filter keeps (show: all,
    waiting, answered, shared); 422 naming the field for a filter or page the class has not."""
    snapshot = await service.snapshot(session, live.id)
    if snapshot is None:
        raise NotFoundError("This class has just been deleted.")
    digits = number.strip()
    wanted = int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 9 else 0
    roster = roster_page(snapshot, show, wanted)
    context = {"code": snapshot.code, "roster": roster, "filters": FILTERS}
    return page(request, "live/students.html", context)


@router.get(
    "/class/{code}/export.csv",
    name="class_export",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}, "description": "The answers."}, **REFUSALS},
)
async def class_export(live: Hosted, session: Session, service: Service) -> Response:
    """Every answer: nickname,question,choice,correct,answered_at (ISO 8601 UTC),round (1, or
    2 for a re-vote),confidence (sure, unsure or empty)."""
    return csv_response(live.code, await service.export(session, live))


@router.get("/class/{code}/report", name="class_report", responses=REFUSALS)
async def class_report(
    live: Hosted, request: Request, session: Session, service: Service
) -> Response:
    """After the class (or during it): each question's votes, share right and shift, and each
    student's answers; printable on one page."""
    snapshot = await service.snapshot(session, live.id)
    if snapshot is None:
        raise NotFoundError("This class has just been deleted.")
    return page(request, "live/report.html", {"report": class_report_view(snapshot)})


# ---- the students -------------------------------------------------------------------------


def _join_form(
    request: Request,
    code: str = "",
    nickname: str = "",
    error: RefusalError | None = None,
) -> Response:
    context: dict[str, Any] = {"code": code, "nickname": nickname, "error": error}
    status_code = status_of(error) if error else 200
    return _when_to_retry(page(request, "live/join.html", context, status_code=status_code), error)


@forms.get("/join", name="join", responses=REFUSALS)
async def join(request: Request, code: str = "") -> Response:
    """The join form: the class code and a nickname."""
    return _join_form(request, code=code[:40])


@router.get("/join/{code}", name="join_code")
async def join_code(request: Request, code: str) -> Response:
    """The join form with the code filled in (the QR code's address)."""
    return _join_form(request, code=(read_code(code) or code)[:40])


@forms.post("/join", name="join_post", responses=POSTED)
async def join_post(
    request: Request,
    guess: CodeGuess,
    session: Session,
    service: Service,
    form: Annotated[JoinForm, Form(default_factory=JoinForm)],
) -> Response:
    """Join: 303 to the class's page with the student's cookie set; else the form again with the
    reason beside the field (422 bad nickname, 409 taken or ended, 404 unknown code)."""
    try:
        try:
            live = await service.find(session, form.code)
        except NotFoundError:
            guess.missed()
            raise
        token = access.student_token(request, live.code)
        student, new = await service.join(session, live, form.nickname, token)
    except RefusalError as error:
        return _join_form(request, form.code[:40], form.nickname[:200], error)
    response = _see(request, "class_page", code=live.code)
    if new:
        access.let_student_in(request, response, live.code, student.token)
    return response


def _student_page(
    request: Request,
    live: LiveClass,
    student: Student,
    service: Service,
    error: RefusalError | None = None,
    share_form: Mapping[str, str] | None = None,
) -> Response:
    """The student's page, or its live part for htmx: the class's row and their own answers
    (it shows nothing of the other students, so it reads none of them)."""
    state = service.state(live)
    htmx = request.headers.get("HX-Request") == "true"
    context = {**student_context(request, state, student), "error": error}
    if not htmx:
        context["class_lab"] = student_lab(request, state, student, share_form)
    name = "live/_student_live.html" if htmx else "live/student.html"
    response = page(request, name, context, status_code=status_of(error) if error else 200)
    response.headers["Vary"] = "HX-Request"
    return response


@router.get("/class/{code}", name="class_page", responses=POSTED)
async def class_page(
    request: Request, live: Class, student: Joined, session: Session, service: Service
) -> Response:
    """A student's page: the current question, their verdict once revealed, the shared lab."""
    return _student_page(request, live, await service.student(session, student), service)


@router.post("/class/{code}/answer", name="class_answer", responses=POSTED)
async def class_answer(
    request: Request,
    student: SignedStudent,
    service: Service,
    form: Annotated[AnswerForm, Form(default_factory=AnswerForm)],
) -> Response:
    """Answer the current question (question, choice); 409 once paused, revealed or ended.
    The live part back for htmx, else 303 to the student's page. Stored in one transaction
    with the answers sent meanwhile (app/live/answers.py)."""
    htmx = request.headers.get("HX-Request") == "true"
    answers: Answers = request.app.state.live_answers
    given = GivenAnswer(
        student.code, student.token, form.question, form.choice, form.round, form.confidence, htmx
    )
    answered = await answers.give(given)
    if answered.student_id is None:  # removed from the class
        raise Redirect(route_path(request, "join_code", code=answered.live.code))
    if answered.student is not None:  # refused, or the page asked for by htmx
        return _student_page(request, answered.live, answered.student, service, answered.error)
    return _see(request, "class_page", code=answered.live.code)


@router.post("/class/{code}/share", name="class_share", responses=POSTED)
async def class_share(
    request: Request,
    live: Class,
    participant: Joined,
    session: Session,
    service: Service,
    form: Annotated[LabForm, Form(default_factory=LabForm)],
) -> Response:
    """Send my lab state (the lab's own fields: counts, means, eta, w, …) to the instructor:
    sent by the page as the student drags (HX-Request: 204), or by the lab's form without
    JavaScript (303 back to the page at that state); a refused state: 422 naming the field."""
    fields = form.fields()
    try:
        await service.share_own_lab(session, live, participant, fields)
    except RefusalError as error:
        student = await service.student(session, participant)
        return _student_page(request, live, student, service, error, fields)
    if request.headers.get("HX-Request") == "true":
        return Response(status_code=204)
    return _see(request, "class_page", code=live.code)


@router.post(
    "/class/{code}/state",
    name="class_state",
    status_code=204,
    response_class=Response,
    responses={
        **POSTED,
        204: {
            "description": "Taken: written with the others within 0.25 s, if the student is"
            " still in the class, the class goes on and its lesson has the lab."
        },
    },
)
async def class_state(
    request: Request,
    student: SignedStudent,
    service: Service,
    form: Annotated[LabForm, Form(default_factory=LabForm)],
) -> Response:
    """My lab state as I drag (the lab's own fields), sent by the page at most once a second:
    204, or 422 naming the field. The request reads no database (app/live/drags.py)."""
    service.drag_lab(student.code, student.token, form.fields(), request.app.state.live_drags)
    return Response(status_code=204)


EVENTS = {
    200: {"content": {"text/event-stream": {}}, "description": "The stream."},
    **REFUSALS,
}


@router.get("/class/{code}/events", name="class_events", response_class=Response, responses=EVENTS)
async def class_events(
    request: Request,
    turn: StreamTurn,
    live: Class,
    student: MaybeStudent,
    view: str = "",
) -> Response:
    """The page's live parts as Server-Sent Events: the current state first, then changes.
    The host's dashboard (``?view=host``) with the host cookie, the projector (``?view=screen``)
    with the host's or the projector's, or a student's page."""
    if view == "host":
        await hosted(request, live)
        return host_stream(request, turn, live.id, access.device_of(request, live.code))
    if view == "screen":
        await screened(request, live)
        return screen_stream(request, turn, live.id, access.device_of(request, live.code))
    if student is None:
        raise NotAllowedError("Join the class first: this stream is for its students.")
    return student_stream(request, turn, live.id, student.id)
