"""The real torch.distributed confirmation: JSON API, pool status, and the lab's panel."""

from typing import Annotated, cast

from fastapi import APIRouter, Body, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from pydantic import BaseModel
from starlette.datastructures import QueryParams
from starlette.responses import Response

from app.confirm.check import ConfirmResponse, confirm_response
from app.confirm.convert import JobError, job_from_request
from app.confirm.pool import ConfirmBusyError, ConfirmUnavailableError
from app.confirm.service import ConfirmService, ServiceStatus
from app.confirm.view import ConfirmView, confirm_view
from app.engine import EngineError
from app.lab.compute import compute, engine_error_detail
from app.lab.panel import page_context
from app.lab.state import LESSON_EXAMPLES, GradientRequest
from app.routes import lesson_page
from app.web.errors import error_response
from app.web.jsonbody import JsonBodyRoute
from app.web.limits import BODY_RESPONSES
from app.web.templating import templates_of

router = APIRouter(tags=["confirm"], route_class=JsonBodyRoute)


class ConfirmProblem(BaseModel):
    """Why no confirmation ran: the queue is full (429) or torch cannot run (503)."""

    detail: str


class ConfirmFailedError(Exception):
    """A confirmation that ended without a result: its HTTP status and message."""

    def __init__(self, status: int, detail: str, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


def service(request: Request) -> ConfirmService:
    return cast(ConfirmService, request.app.state.confirm)


def client_key(request: Request) -> str:
    """Whose turn a confirmation takes in the pool's fair queue: the live class's participant
    when the request has one, else the client's address. Behind a proxy listed in
    ``--forwarded-allow-ips`` uvicorn has already put the forwarded address there; a header from
    anyone else is ignored, so a client cannot pose as many."""
    participant = getattr(request.state, "participant", None)
    if participant is not None:
        return f"participant:{participant}"
    return f"address:{request.client.host if request.client else ''}"


async def run_confirmation(request: Request, body: GradientRequest) -> ConfirmResponse:
    """Engine first (it validates), then the same update on the pool. Raises on any failure."""
    try:
        engine = compute(body)
    except EngineError as error:
        raise RequestValidationError(engine_error_detail(error)) from error
    confirm = service(request)
    try:
        job, notes = job_from_request(body, confirm.settings.confirm_world_size)
    except JobError as error:
        raise RequestValidationError(
            engine_error_detail(EngineError(error.field, error.message))
        ) from error
    try:
        outcome = await confirm.submit(job, client_key(request))
    except ConfirmBusyError as busy:
        raise ConfirmFailedError(429, str(busy), busy.retry_after) from busy
    except ConfirmUnavailableError as unavailable:
        raise ConfirmFailedError(503, unavailable.message, unavailable.retry_after) from unavailable
    return confirm_response(job, engine, outcome, notes)


def problem(request: Request, failed: ConfirmFailedError) -> Response:
    headers = {"Retry-After": str(failed.retry_after)} if failed.retry_after else None
    return error_response(request.scope, failed.status, failed.detail, headers)


@router.post(
    "/api/confirm",
    response_model=ConfirmResponse,
    responses={
        **BODY_RESPONSES,
        429: {
            "model": ConfirmProblem,
            "description": (
                "This client already has ATLAS_CONFIRM_CLIENT_LIMIT confirmations waiting or"
                " running, or the whole queue is full; retry after the given seconds."
            ),
            "headers": {
                "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
            },
        },
        503: {
            "model": ConfirmProblem,
            "description": (
                "torch is not installed, the confirmation is off, the pool failed, or its owner"
                " is starting or busy (then with Retry-After)."
            ),
            "headers": {
                "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}
            },
        },
    },
)
async def confirm_api(
    request: Request,
    body: Annotated[GradientRequest, Body(openapi_examples=LESSON_EXAMPLES)],
) -> Response | ConfirmResponse:
    """Run the update on real DistributedDataParallel (gloo, CPU) and compare with the engine."""
    try:
        return await run_confirmation(request, body)
    except ConfirmFailedError as failed:
        return problem(request, failed)


@router.get("/api/confirm/status", response_model=ServiceStatus)
async def confirm_status(request: Request) -> ServiceStatus:
    """Whether the warm pool is starting, ready or unavailable (and why)."""
    return await service(request).status()


@router.post("/lab/confirm", name="confirm_lab", response_class=HTMLResponse)
async def confirm_lab(request: Request) -> Response:
    """The lab's state on real torch.distributed: the panel (htmx) or the whole page."""
    posted = await request.form()
    # The lab's parser reads text fields, one or several values per name, like a query string.
    form = QueryParams(
        [(name, value) for name, value in posted.multi_items() if isinstance(value, str)]
    )
    lab_context = page_context(form)
    state = lab_context["lab_state"]
    status = 200
    if state is None:
        view = ConfirmView(error="Fix the lab's inputs first: the real run takes a valid state.")
        status = 422
    else:
        try:
            # One update: the trajectory's steps are the engine's, not the real run's.
            one_update = state.model_copy(update={"steps": None})
            view = confirm_view(await run_confirmation(request, one_update))
        except RequestValidationError as invalid:
            view = ConfirmView(error=str(invalid.errors()[0]["msg"]))
            status = 422
        except ConfirmFailedError as failed:
            view = ConfirmView(error=failed.detail, retry_after=failed.retry_after)
            status = failed.status
    if request.headers.get("HX-Request") == "true":
        context = {**lab_context, "confirm": view}
        response = templates_of(request).TemplateResponse(
            request, "_confirm.html", context, status_code=status
        )
    else:
        page = lesson_page.context(request, lab_context, lesson_page.results(request))
        context = {**page, "confirm": view}
        response = templates_of(request).TemplateResponse(
            request, lesson_page.PAGE_TEMPLATE, context, status_code=status
        )
    if view.retry_after:
        response.headers["Retry-After"] = str(view.retry_after)
    response.headers["Vary"] = "HX-Request"
    return response
