"""The lab's panels for a query or a form: validated state, engine result and view, and the
template context the lab's fragments and the lesson page render from."""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Generic, NamedTuple, TypeVar

from app.engine import (
    EngineError,
    GradientResult,
    ring_allreduce,
    trajectory,
)
from app.lab import accumulation
from app.lab.compute import gradient, item_lists
from app.lab.fields import FieldError, engine_error
from app.lab.numbers import fmt
from app.lab.pictures import implied_path
from app.lab.query import (
    RING_DEFAULT,
    RING_PARAMS,
    ParsedLab,
    ParsedRing,
    encode,
    lab_query_pairs,
    parse_lab,
    parse_ring,
    ring_query_pairs,
)
from app.lab.state import MAX_COUNT, MAX_RANKS, GradientRequest
from app.lab.view import (
    LabCharts,
    LabDetails,
    LabView,
    lab_charts,
    lab_details,
    lab_view,
    ring_view,
)
from app.lab.worked import RingWords

ParsedT = TypeVar("ParsedT")
ViewT = TypeVar("ViewT")

# How far the page's sliders reach: presentation only. The number fields beside them take
# anything the state model accepts, and a state past the sliders says so (``beyond_sliders``).
SLIDER_RANKS = 8
SLIDER_COUNT = 64.0


class Preset(NamedTuple):
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


class LabLink(NamedTuple):
    """A lab state that shows what a part of the lesson says: its query, anchor and a note."""

    query: str
    anchor: str
    note: str


LESSON_EXAMPLE = "counts=2,6&means=1,3&eta=0.1&w=10"
# "See it in the lab" from the worked example and each question, by the lesson's section ids.
LESSON_LINKS = {
    "section-6": LabLink(
        LESSON_EXAMPLE, "lab", "the worked example, counts 2 and 6, means 1 and 3"
    ),
    "section-11": LabLink(
        LESSON_EXAMPLE, "lab", "counts 2 and 6, means 1 and 3: compare g with the plain rank mean"
    ),
    "section-12": LabLink(
        LESSON_EXAMPLE, "lab", "the per-rank table gives each rank's factor P·nᵣ/N"
    ),
    "section-13": LabLink(
        LESSON_EXAMPLE,
        "confirm",
        "run it on real torch.distributed: the replicas agree with each other in every run,"
        " and the default run still misses the reference",
    ),
}
# The lab's two forms, as tabs: each form's kind, its tab's label and the query it opens.
FORMS = (
    ("means", "Counts and means", PRESETS[0].query),
    ("items", "Items and weights", PRESETS[3].query),
)
PAGE_ROUTE = "lesson_page"
PRESENT_PARAM = "present"
LIMITS = {
    "slider_ranks": SLIDER_RANKS,
    "slider_count": format(SLIDER_COUNT, "g"),
    "max_ranks": MAX_RANKS,
    "max_count": format(MAX_COUNT, ".0f"),
}


@dataclass(frozen=True)
class Panel(Generic[ParsedT, ViewT]):
    """One form as the templates see it: inputs as typed, errors, and the view of the result."""

    parsed: ParsedT
    view: ViewT | None
    errors: tuple[FieldError, ...]
    pairs: tuple[tuple[str, str], ...]

    @cached_property
    def query(self) -> str:
        """The canonical query string of a valid state ("" while the input is invalid)."""
        return encode(self.pairs)

    def error_for(self, input_id: str) -> FieldError | None:
        return next((e for e in self.errors if e.input_id == input_id), None)


@dataclass(frozen=True)
class LabPanel(Panel[ParsedLab, LabView]):
    """The gradient lab; in the items form also its gradient accumulation over microbatches."""

    acc_m: str = str(accumulation.DEFAULT)
    window: accumulation.AccumulationView | None = None
    result: GradientResult | None = None

    @cached_property
    def charts(self) -> LabCharts | None:
        """The pictures (number line, SGD paths), built only when a template shows them: a
        drag's answer on each input event is the figures alone, and the pictures follow by
        their own request a few times a second."""
        state = self.state
        if self.result is None or state is None:
            return None
        if state.counts is not None:
            path = implied_path(state)
        else:
            path = trajectory(*item_lists(state), eta=state.eta, w=state.w, steps=state.steps or 0)
        return lab_charts(self.result, path)

    @cached_property
    def details(self) -> LabDetails | None:
        """The details below the pane, built only when a template shows them (a drag's answer
        is the pane alone)."""
        state = self.state
        if self.result is None or state is None:
            return None
        return lab_details(self.result, state)

    @property
    def state(self) -> GradientRequest | None:
        """The validated state the engine accepted (None while the input is invalid)."""
        return self.parsed.state if self.view is not None else None

    @property
    def beyond_sliders(self) -> str:
        """Where this state goes past the sliders' reach, in words ("" when it does not)."""
        state = self.state
        if state is None:
            return ""
        ranks = len(state.counts or state.targets or [])
        top = max(state.counts or [0.0])
        parts = []
        if ranks > SLIDER_RANKS:
            parts.append(f"{ranks} ranks (the slider shows up to {SLIDER_RANKS})")
        if top > SLIDER_COUNT:
            parts.append(f"a count of {fmt(top)} (the sliders reach {fmt(SLIDER_COUNT)})")
        if not parts:
            return ""
        return f"This state has {' and '.join(parts)}: change it in the number fields."


class RingPanel(Panel[ParsedRing, RingWords]):
    """The ring all-reduce cost panel (a subclass: calling the generic alias would set
    ``__orig_class__`` on the new instance, which a frozen dataclass refuses)."""


def ring_panel(query: Mapping[str, str]) -> RingPanel:
    """Validate and compute the ring all-reduce panel."""
    if not any(name in query for name in RING_PARAMS):
        # Every lab request carries the ring panel, mostly at its defaults: one fixed panel.
        return default_ring_panel()
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


@cache
def default_ring_panel() -> RingPanel:
    """The ring panel of a query that gives none of its parameters (a constant)."""
    return ring_panel(dict(zip(RING_PARAMS, RING_DEFAULT, strict=True)))


def lab_panel(query: Mapping[str, str]) -> LabPanel:
    """Validate the lab state and run the engine on it."""
    parsed = parse_lab(query)
    state = parsed.state
    acc_raw, acc_m, acc_error = accumulation.read(query)
    acc_errors = (acc_error,) if acc_error and parsed.form.kind == "items" else ()
    if state is None or acc_errors:
        return LabPanel(parsed, None, (*parsed.errors, *acc_errors), (), acc_raw)
    extra: list[tuple[str, str]] = []
    window = None
    try:
        result = gradient(state)
        if state.targets is not None:
            m = acc_m or accumulation.DEFAULT
            window = accumulation.view(accumulation.run(state, m))
            extra = accumulation.pairs(m)
        view = lab_view(result)
    except EngineError as exc:
        return LabPanel(parsed, None, (engine_error(exc),), (), acc_raw)
    pairs = (*lab_query_pairs(state), *extra)
    return LabPanel(parsed, view, (), pairs, acc_raw, window, result)


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """Template context for the lab (alone or inside the lesson page), from a query or a form."""
    lab = lab_panel(query)
    ring = ring_panel(query)
    return {
        "lab": lab,
        "ring": ring,
        "lab_presets": PRESETS,
        "lab_forms": FORMS,
        "lab_limits": LIMITS,
        "lab_page_route": PAGE_ROUTE,
        "lab_links": LESSON_LINKS,
        "lab_status_code": 422 if lab.errors or ring.errors else 200,
        # Presenter mode (?present=1): large type, the lab full width, the lesson folded away.
        "presenting": query.get(PRESENT_PARAM) == "1",
    }
