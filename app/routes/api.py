"""JSON API: the gradient lab's arithmetic for any of the three request forms."""

from typing import Annotated

from fastapi import APIRouter, Body
from fastapi.exceptions import RequestValidationError

from app.engine import EngineError, GradientResult
from app.lab.compute import compute, engine_error_detail
from app.lab.state import LESSON_EXAMPLES, GradientRequest
from app.web.jsonbody import JsonBodyRoute
from app.web.limits import BODY_RESPONSES

router = APIRouter(prefix="/api", tags=["api"], route_class=JsonBodyRoute)


@router.post(
    "/gradient",
    response_model=GradientResult,
    responses=BODY_RESPONSES,
)
def gradient(
    request: Annotated[GradientRequest, Body(openapi_examples=LESSON_EXAMPLES)],
) -> GradientResult:
    """Global item-mean gradient against the plain rank mean, with one SGD step under each."""
    try:
        return compute(request)
    except EngineError as error:
        raise RequestValidationError(engine_error_detail(error)) from error
