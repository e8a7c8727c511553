"""The gradient lab's routes: one URL per state, rendered as a fragment for htmx and as the page."""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from app.lab.panel import PAGE_ROUTE, LabPanel, RingPanel, page_context
from app.lesson.course import CourseLesson
from app.routes import lesson_page
from app.routes.lesson_page import LessonDep
from app.web.templating import render_block, route_path

router = APIRouter(tags=["lab"])

# The lab answers one URL five ways: the whole page, the whole lab, the results pane (what a
# drag asks for on every input event), its pictures (asked for a few times a second while the
# inputs change) or the details below it (asked for when the inputs pause).
VARY = "HX-Request, HX-Target"
LAB_TEMPLATE = "_lab.html"
RING_TEMPLATE = "_lab_ring.html"
# The block of LAB_TEMPLATE that answers each HX-Target (any other: the results pane).
BLOCKS = {"lab": "lab", "lab-details": "lab_details", "lab-charts": "lab_charts"}
STATE_URL_HEADER = "X-Lab-Url"


def fragment(
    request: Request,
    lesson: CourseLesson,
    template: str,
    block: str,
    context: dict[str, Any],
    valid: bool,
) -> Response:
    """One block of a lab template for htmx: 200 with the state's page address for a valid
    state, else 422."""
    headers = {"Vary": VARY}
    # The ring panel says whether it sits beside the gradient lab.
    context["lesson_parts"] = lesson.parts
    # The page address for this state; lab.js writes it into the history once per gesture
    # (htmx's HX-Push-Url would write it on every answer, and each write costs milliseconds).
    # Only a valid state gets one: a typo never reaches the address bar.
    if valid:
        lab: LabPanel = context["lab"]
        ring: RingPanel = context["ring"]
        # Under the lesson's own address (a course's lessons are under /learn/<slug>).
        path = route_path(request, PAGE_ROUTE)
        query = "&".join(q for q in (lab.query, ring.query) if q)
        headers[STATE_URL_HEADER] = f"{path}?{query}" if query else path
    status = 200 if valid else 422
    body = render_block(request, template, block, context)
    return HTMLResponse(body, status_code=status, headers=headers)


def full_page(request: Request, lesson: CourseLesson, context: dict[str, Any]) -> Response:
    """The whole lesson page with the lab in this state (the answer without htmx)."""
    response = lesson_page.render(request, lesson, context)
    response.headers["Vary"] = VARY
    return response


# async: the work is a fraction of a millisecond of CPU, less than a hop to the thread pool.
@router.get("/lab", name="lab", response_class=HTMLResponse)
async def lab(request: Request, lesson: LessonDep) -> Response:
    """The lab for the state in the query: for htmx its results pane, its pictures, its details
    or the whole lab (by HX-Target); else the whole page."""
    context = page_context(request.query_params)
    if request.headers.get("HX-Request") != "true":
        return full_page(request, lesson, context)
    panel: LabPanel = context["lab"]
    valid = panel.view is not None
    block = BLOCKS.get(request.headers.get("HX-Target", ""), "lab_results")
    if block == "lab_results":
        # The pane's out-of-band companions keep the rest of the lab in step with one answer.
        context.update(oob=True, oob_ranks=panel.parsed.resized, oob_carry=valid)
    return fragment(request, lesson, LAB_TEMPLATE, block, context, valid)


@router.get("/lab/ring", name="lab_ring", response_class=HTMLResponse)
async def lab_ring(request: Request, lesson: LessonDep) -> Response:
    """The ring all-reduce panel for the query: results fragment (htmx) or the whole page."""
    context = page_context(request.query_params)
    if request.headers.get("HX-Request") != "true":
        return full_page(request, lesson, context)
    ring: RingPanel = context["ring"]
    valid = ring.view is not None
    context["oob_carry"] = valid
    return fragment(request, lesson, RING_TEMPLATE, "ring_results", context, valid)
