"""The course index: the lessons served from a folder (``ATLAS_LESSON_PATH`` names a folder)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from app.lesson.course import ServedLessons
from app.web.templating import templates_of

router = APIRouter(tags=["course"])


@router.head("/", include_in_schema=False)
@router.get("/", response_class=HTMLResponse, name="course_index")
async def course_index(request: Request) -> Response:
    """Every lesson served: title, description, version, revision date, provenance."""
    course: ServedLessons = request.app.state.course
    return templates_of(request).TemplateResponse(request, "course.html", {"course": course})
