"""The real torch.distributed confirmation: JSON API, pool status, and the lab's panel."""

from typing import Annotated, Any, cast

from fastapi import APIRouter, Body, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from pydantic import BaseModel
from starlette.datastructures import QueryParams
from starlette.responses import Response

from app.confirm.check import ConfirmResponse, confirm_response
from app.confirm.convert import job_from_request
from app.confirm.pool import QueueFullError, RefusalError
from app.confirm.service import ConfirmService, ServiceStatus
from app.confirm.view import ConfirmView, confirm_view
from app.engine import EngineError
from app.lab.compute import compute, engine_error_detail
from app.lab.panel import page_context
from app.lab.state import LESSON_EXAMPLES, GradientRequest
from app.routes import lesson_page
from app.routes.lesson_page import LessonDep
from app.web.jsonbody import JsonBodyRoute
from app.web.limits import BODY_RESPONSES
from app.web.templating import templates_of

router = APIRouter(tags=["confirm"], route_class=JsonBodyRoute)


class ConfirmProblem(BaseModel):
    """Why no confirmation ran: the queue is full (429) or torch cannot run (503)."""

    detail: str


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
    """Engine first (it validates), then the same update on the pool. Raises
    RequestValidationError, or a RefusalError when the pool cannot run it now."""
    confirm = service(request)
    try:
        compute(body)
        job, notes = job_from_request(body, confirm.settings.confirm_world_size)
    except EngineError as error:
        raise RequestValidationError(engine_error_detail(error)) from error
    return confirm_response(job, await confirm.submit(job, client_key(request)), notes)


def status_of(refusal: RefusalError) -> int:
    """A full queue is the client's to wait for (429); anything else is the server's (503)."""
    return 429 if isinstance(refusal, QueueFullError) else 503


def refusal(description: str) -> dict[str, Any]:
    """An OpenAPI response of a confirmation that did not run, with its Retry-After."""
    retry_after = {"description": "Seconds to wait", "schema": {"type": "integer"}}
    return {
        "model": ConfirmProblem,
        "description": description,
        "headers": {"Retry-After": retry_after},
    }


@router.post(
    "/api/confirm",
    response_model=ConfirmResponse,
    responses={
        **BODY_RESPONSES,
        429: refusal(
            "This client already has ATLAS_CONFIRM_CLIENT_LIMIT confirmations waiting or running,"
            " or the whole queue is full; retry after the given seconds."
        ),
        503: refusal(
            "torch is not installed, the confirmation is off, the pool failed, or its owner is"
            " starting or busy (then with Retry-After)."
        ),
    },
)
async def confirm_api(
    request: Request,
    body: Annotated[GradientRequest, Body(openapi_examples=LESSON_EXAMPLES)],
) -> ConfirmResponse:
    """Run the update on real DistributedDataParallel (gloo, CPU) and compare with the engine."""
    try:
        return await run_confirmation(request, body)
    except RefusalError as refused:
        headers = {"Retry-After": str(refused.retry_after)} if refused.retry_after else None
        raise HTTPException(status_of(refused), refused.detail, headers) from None


@router.get("/api/confirm/status", response_model=ServiceStatus)
async def confirm_status(request: Request) -> ServiceStatus:
    """Whether the warm pool is starting, ready or unavailable (and why)."""
    return await service(request).status()


@router.post("/lab/confirm", name="confirm_lab", response_class=HTMLResponse)
async def confirm_lab(request: Request, lesson: LessonDep) -> Response:
    """The lab's state on real torch.distributed: the panel (htmx) or the whole page."""
    posted = await request.form()
    # The lab's parser reads text fields, one or several values per name, like a query string.
    form = QueryParams(
        [(name, value) for name, value in posted.multi_items() if isinstance(value, str)]
    )
    lab_context = page_context(form)
    state = lab_context["lab"].state
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
        except RefusalError as refused:
            view = ConfirmView(error=refused.detail, retry_after=refused.retry_after)
            status = status_of(refused)
    if request.headers.get("HX-Request") == "true":
        template, context = "_confirm.html", lab_context
    else:
        template = lesson_page.PAGE_TEMPLATE
        results = lesson_page.results(request, lesson)
        context = lesson_page.context(request, lesson, lab_context, results)
    response = templates_of(request).TemplateResponse(
        request, template, {**context, "confirm": view}, status_code=status
    )
    if view.retry_after:
        response.headers["Retry-After"] = str(view.retry_after)
    response.headers["Vary"] = "HX-Request"
    return response
