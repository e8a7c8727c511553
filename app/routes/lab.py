"""The gradient lab's routes: one URL per state, rendered as a fragment for htmx and as the page."""

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.routing import request_response

from app.lab.panel import PAGE_ROUTE, LabPanel, RingPanel, page_context
from app.routes import lesson_page
from app.web.templating import route_path, templates


class RequestRoute(APIRoute):
    """A route whose endpoint takes the request alone and returns its response, and is called
    as it is: FastAPI's parameter solving and response checks have nothing to do for it, and
    cost a drag's answer about 40 µs. Documented in OpenAPI like any route.

    Served through Starlette's ``request_response`` (the request in, the response out, an
    HTTPException answered by the app's handlers), not FastAPI's copy of it, which opens two
    AsyncExitStacks a request for dependencies with ``yield``: these endpoints have no
    dependencies, and the stacks cost a drag's answer 5-14 µs in process (of about 300)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = request_response(self.get_route_handler())

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        parameters = list(inspect.signature(self.endpoint).parameters.values())
        if len(parameters) != 1 or parameters[0].annotation is not Request:
            raise TypeError(f"{self.endpoint.__name__} must take the Request alone")
        if not inspect.iscoroutinefunction(self.endpoint):
            raise TypeError(f"{self.endpoint.__name__} must be async")
        endpoint: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
        return endpoint


router = APIRouter(tags=["lab"], route_class=RequestRoute)

# The lab answers one URL five ways: the whole page, the whole lab, the results pane (what a
# drag asks for on every input event), its pictures (asked for a few times a second while the
# inputs change) or the details below it (asked for when the inputs pause).
VARY = "HX-Request, HX-Target"
STATE_URL_HEADER = "X-Lab-Url"


def page_url(request: Request, *queries: str) -> str:
    """The lesson page's address for a state: what the browser's address bar should show."""
    # Under the app's own address: a lesson of a course is mounted under /learn/<slug>.
    path = route_path(request, PAGE_ROUTE)
    query = "&".join(q for q in queries if q)
    return f"{path}?{query}" if query else path


def fragment(request: Request, template: str, context: dict[str, Any], valid: bool) -> Response:
    """A fragment for htmx: 200 with the state's page address for a valid state, else 422."""
    headers = {"Vary": VARY}
    # The page address for this state; lab.js writes it into the history once per gesture
    # (htmx's HX-Push-Url would write it on every answer, and each write costs milliseconds).
    # Only a valid state gets one: a typo never reaches the address bar.
    if valid:
        lab: LabPanel = context["lab"]
        ring: RingPanel = context["ring"]
        headers[STATE_URL_HEADER] = page_url(request, lab.query, ring.query)
    status = 200 if valid else 422
    # Rendered here, not by TemplateResponse: a fragment needs no context processors, and the
    # helper's argument handling and per-response objects cost a drag's answer about 15 µs.
    context["request"] = request
    body = templates.get_template(template).render(context)
    return HTMLResponse(body, status_code=status, headers=headers)


def full_page(request: Request, context: dict[str, Any]) -> Response:
    """The whole lesson page with the lab in this state (the answer without htmx)."""
    response = lesson_page.render(request, context)
    response.headers["Vary"] = VARY
    return response


# async: the work is a fraction of a millisecond of CPU, less than a hop to the thread pool.
@router.get("/lab", name="lab", response_class=HTMLResponse)
async def lab(request: Request) -> Response:
    """The lab for the state in the query: for htmx its results pane, its pictures, its details
    or the whole lab (by HX-Target); else the whole page."""
    context = page_context(request.query_params)
    if request.headers.get("HX-Request") != "true":
        return full_page(request, context)
    panel: LabPanel = context["lab"]
    valid = panel.view is not None
    target = request.headers.get("HX-Target")
    if target == "lab":
        return fragment(request, "_lab.html", context, valid)
    if target == "lab-details":
        return fragment(request, "_lab_details.html", context, valid)
    if target == "lab-charts":
        return fragment(request, "_lab_charts.html", context, valid)
    context.update(oob_status=True, oob_ranks=panel.parsed.resized, oob_carry=valid, oob_rest=True)
    return fragment(request, "_lab_results.html", context, valid)


@router.get("/lab/ring", name="lab_ring", response_class=HTMLResponse)
async def lab_ring(request: Request) -> Response:
    """The ring all-reduce panel for the query: results fragment (htmx) or the whole page."""
    context = page_context(request.query_params)
    if request.headers.get("HX-Request") != "true":
        return full_page(request, context)
    ring: RingPanel = context["ring"]
    valid = ring.view is not None
    context["oob_carry"] = valid
    return fragment(request, "_lab_ring_results.html", context, valid)


def serve(app: FastAPI) -> None:
    """Serve the lab's routes on ``app``, first among its routes: they answer every input event
    of a drag, and FastAPI's matching through an included router cost each such answer about
    40 µs of CPU (bench/README.md). The same routes, documented in OpenAPI as before."""
    app.router.routes[:0] = router.routes
