"""The gradient lab: one URL per state, rendered as a fragment for htmx and as the whole page."""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.engine import EngineError, from_items, from_means, ring_allreduce, trajectory
from app.labpictures import implied_path
from app.labquery import (
    FieldError,
    LabState,
    MeansState,
    ParsedLab,
    ParsedRing,
    encode,
    lab_query_pairs,
    parse_lab,
    parse_ring,
    ring_query_pairs,
)
from app.labview import LabView, RingView, lab_view, ring_view
from app.templating import RenderCache, origin, templates

# Rendered fragments kept per app: a few thousand at about 10 KB each.
FRAGMENT_CACHE_BYTES = 32 * 2**20


@asynccontextmanager
async def _fragment_cache(app: FastAPI) -> AsyncIterator[None]:
    app.state.lab_fragments = RenderCache(FRAGMENT_CACHE_BYTES)
    yield


router = APIRouter(tags=["lab"], lifespan=_fragment_cache)
ParsedT = TypeVar("ParsedT")
ViewT = TypeVar("ViewT")

# The input an engine error about a request field points to (its message names the field).
ENGINE_FIELD_INPUT = {
    "counts": "lab-count-0",
    "means": "lab-mean-0",
    "targets": "lab-targets-0",
    "weights": "lab-weights-0",
    "eta": "lab-eta",
    "w": "lab-w",
    "steps": "lab-steps",
    "payload_bytes": "ring-mb",
    "ranks": "ring-p",
    "alpha_s": "ring-us",
    "bandwidth_bytes_per_s": "ring-gbps",
}


@dataclass(frozen=True, slots=True)
class Preset:
    label: str
    description: str
    query: str


PRESETS = (
    Preset(
        "Lesson example",
        "counts 2 and 6, means 1 and 3, η 0.1, w 10",
        "counts=2,6&means=1,3&eta=0.1&w=10",
    ),
    Preset(
        "Equal counts",
        "4 items on each rank: both schemes agree",
        "counts=4,4&means=1,3&eta=0.1&w=10",
    ),
    Preset(
        "An empty rank",
        "rank 2 has no valid items",
        "counts=2,6,0&means=1,3,0&eta=0.1&w=10",
    ),
    Preset(
        "Lesson example as items",
        "targets 9,9 and six 7s at w 10: 30 SGD steps",
        "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30",
    ),
    Preset(
        "Heavy padding",
        "token weights: rank 1 holds 8 positions, 6 of them padding",
        "targets=9,9,9,9,9,9,9,9;7,7,0,0,0,0,0,0"
        "&weights=1,1,1,1,1,1,1,1;1,1,0,0,0,0,0,0&eta=0.1&w=10&steps=30",
    ),
)
MODES = (
    ("means", "Counts and means", PRESETS[0].query),
    ("items", "Items and weights", PRESETS[3].query),
)
PAGE_ROUTE = "lesson_page"
# The lab answers one URL three ways: whole page, whole lab, or results only.
VARY = "HX-Request, HX-Target"
STATE_URL_HEADER = "X-Lab-Url"
PRESENT_PARAM = "present"


@dataclass(frozen=True)
class Panel(Generic[ParsedT, ViewT]):
    """One form as the templates see it: inputs as typed, errors, and the view of the result."""

    parsed: ParsedT
    view: ViewT | None
    errors: tuple[FieldError, ...]
    pairs: tuple[tuple[str, str], ...]

    @property
    def query(self) -> str:
        """The canonical query string of a valid state ("" while the input is invalid)."""
        return encode(self.pairs)

    def error_for(self, input_id: str) -> FieldError | None:
        return next((e for e in self.errors if e.input_id == input_id), None)


class LabPanel(Panel[ParsedLab, LabView]):
    """The gradient lab."""

    @property
    def state(self) -> LabState | None:
        """The validated state the engine accepted (None while the input is invalid)."""
        return self.parsed.state if self.view is not None else None


class RingPanel(Panel[ParsedRing, RingView]):
    """The ring all-reduce cost panel.

    A subclass rather than the alias ``Panel[ParsedRing, RingView]``: calling a generic alias
    sets ``__orig_class__`` on the new instance, which a frozen dataclass refuses.
    """


def engine_error(exc: EngineError) -> FieldError:
    return FieldError(exc.field, ENGINE_FIELD_INPUT.get(exc.field, "lab-form"), exc.message)


def ring_panel(query: Mapping[str, str]) -> RingPanel:
    """Validate and compute the ring all-reduce panel."""
    parsed = parse_ring(query)
    state = parsed.state
    if state is None:
        return RingPanel(parsed, None, parsed.errors, ())
    try:
        cost = ring_allreduce(
            state.payload_mb * 1e6, state.ranks, state.alpha_us * 1e-6, state.bandwidth_gbps * 1e9
        )
    except EngineError as exc:
        return RingPanel(parsed, None, (engine_error(exc),), ())
    return RingPanel(parsed, ring_view(cost, state), (), tuple(ring_query_pairs(state)))


def lab_panel(query: Mapping[str, str]) -> LabPanel:
    """Validate the lab state and run the engine on it."""
    parsed = parse_lab(query)
    state = parsed.state
    if state is None:
        return LabPanel(parsed, None, parsed.errors, ())
    try:
        if isinstance(state, MeansState):
            result = from_means(state.counts, state.means, eta=state.eta, w=state.w)
            view = lab_view(result, state, implied_path(state))
        else:
            result = from_items(state.targets, state.weights, eta=state.eta, w=state.w)
            path = trajectory(
                state.targets, state.weights, eta=state.eta, w=state.w, steps=state.steps
            )
            view = lab_view(result, state, path)
    except EngineError as exc:
        return LabPanel(parsed, None, (engine_error(exc),), ())
    return LabPanel(parsed, view, (), tuple(lab_query_pairs(state)))


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """Template context for the lab inside the lesson page, from the page's query string."""
    lab = lab_panel(query)
    ring = ring_panel(query)
    return {
        "lab": lab,
        "ring": ring,
        "lab_presets": PRESETS,
        "lab_modes": MODES,
        "lab_page_route": PAGE_ROUTE,
        # For the confirmation panel: the canonical lab query ("" while the input is invalid)
        # and the validated state (None while invalid).
        "lab_query": lab.query,
        "lab_state": lab.state,
        "lab_status_code": 422 if lab.errors or ring.errors else 200,
        # Presenter mode (?present=1): large type, the lab full width, the lesson folded away.
        "presenting": query.get(PRESENT_PARAM) == "1",
    }


def page_url(request: Request, *queries: str) -> str:
    """The lesson page's address for a state: what the browser's address bar should show."""
    path = request.app.url_path_for(PAGE_ROUTE)
    query = "&".join(q for q in queries if q)
    return f"{path}?{query}" if query else str(path)


def fragment(
    request: Request, template: str, context: dict[str, Any], status_code: int, url: str | None
) -> Response:
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    response.headers["Vary"] = VARY
    # The page address for this state; lab.js writes it into the history once per gesture
    # (htmx's HX-Push-Url would write it on every answer, and each write costs milliseconds).
    # Only a valid state gets one: a typo never reaches the address bar.
    if url is not None:
        response.headers[STATE_URL_HEADER] = url
    return response


def render_lab(request: Request, whole: bool) -> Response:
    """The whole lab (``whole``) or its results with their out-of-band updates, for htmx."""
    context = page_context(request.query_params)
    panel: LabPanel = context["lab"]
    ring: RingPanel = context["ring"]
    status = 200 if panel.view is not None else 422
    url = page_url(request, panel.query, ring.query) if panel.view is not None else None
    if whole:
        return fragment(request, "_lab.html", context, status, url)
    context["oob_status"] = True
    context["oob_ranks"] = panel.parsed.resized
    context["oob_carry"] = panel.view is not None
    context["oob_rest"] = True
    return fragment(request, "_lab_results.html", context, status, url)


def render_ring(request: Request) -> Response:
    """The ring panel's results with the lab's state carried out of band, for htmx."""
    context = page_context(request.query_params)
    panel: LabPanel = context["lab"]
    ring: RingPanel = context["ring"]
    status = 200 if ring.view is not None else 422
    url = page_url(request, panel.query, ring.query) if ring.view is not None else None
    context["oob_carry"] = ring.view is not None
    return fragment(request, "_lab_ring_results.html", context, status, url)


def fragment_key(request: Request, kind: str) -> tuple[object, ...]:
    """Everything a fragment is rendered from: the raw query, which fragment, the URLs' origin.

    No cookie: the fragments show nothing personal. The whole lab also holds the confirmation
    panel, which says when the pool is off, so that state is part of its key.
    """
    key = (kind, request.scope["query_string"], *origin(request))
    if kind == "lab":
        key += (request.app.state.confirm.off_message,)
    return key


def _fragments(request: Request) -> RenderCache:
    cache: RenderCache = request.app.state.lab_fragments
    return cache


def _lab_kind(request: Request) -> str:
    return "lab" if request.headers.get("HX-Target") == "lab" else "results"


LAB_PATH = "/lab"
RING_PATH = "/lab/ring"
# Which fragment an htmx GET on each path asks for.
FRAGMENT_KINDS: dict[str, Callable[[Request], str]] = {
    LAB_PATH: _lab_kind,
    RING_PATH: lambda request: "ring",
}


class KeptFragments:
    """ASGI middleware: an htmx GET for a fragment already rendered is answered from the cache
    before routing, which costs several times the lookup. Anything else goes on to the routes
    below, which render a fragment and keep it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind_of = FRAGMENT_KINDS.get(scope["path"]) if scope["type"] == "http" else None
        if kind_of is not None and scope["method"] == "GET":
            request = Request(scope)
            if request.headers.get("HX-Request") == "true":
                kept = _fragments(request).get(fragment_key(request, kind_of(request)))
                if kept is not None:
                    await kept.response()(scope, receive, send)
                    return
        await self.app(scope, receive, send)


# async: the work is a fraction of a millisecond of CPU, less than a hop to the thread pool.
@router.get(LAB_PATH, name="lab", response_class=HTMLResponse)
async def lab(request: Request) -> Response:
    """The lab for the state in the query: results fragment (htmx), whole lab, or the whole page."""
    if request.headers.get("HX-Request") != "true":
        return full_page(request)
    kind = _lab_kind(request)
    return _fragments(request).answer(
        fragment_key(request, kind), lambda: render_lab(request, whole=kind == "lab")
    )


@router.get(RING_PATH, name="lab_ring", response_class=HTMLResponse)
async def lab_ring(request: Request) -> Response:
    """The ring all-reduce panel for the query: results fragment (htmx) or the whole page."""
    if request.headers.get("HX-Request") != "true":
        return full_page(request)
    return _fragments(request).answer(fragment_key(request, "ring"), lambda: render_ring(request))


def full_page(request: Request) -> Response:
    """The whole lesson page with the lab in this state (the answer without htmx)."""
    # Imported here: the pages router imports this module for page_context.
    from app.routes.pages import render_page

    response = render_page(request)
    response.headers["Vary"] = VARY
    return response
