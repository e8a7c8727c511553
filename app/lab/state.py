"""The lab's state: ONE pydantic model validates it, from a JSON body, a query string or a form.

``GradientRequest`` is the gradient lab's state (shapes, limits, finite numbers, one form per
state); ``RingRequest`` is the ring panel's. The JSON API validates bodies with them directly;
``app.lab.query`` turns a query string or a form into the same input first. The limits here are
the only ones: the page's sliders reach less far (see ``app.lab.panel``), which is presentation.
The arithmetic lives in ``app.engine``.
"""

import math
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict, JsonValue
from pydantic_core import PydanticCustomError

from app import engine

MAX_RANKS = 64
MAX_ITEMS = 10_000
MAX_MICROBATCHES = 64
MAX_COUNT = 1e12
MAX_ABS_VALUE = 1e12
MAX_ETA = 1e6
MAX_STEPS = engine.MAX_STEPS

Form = engine.Form
FORM_FIELDS: dict[str, Form] = {
    "counts": "means",
    "targets": "items",
    "microbatches": "accumulation",
}

FLOATS_ONLY = frozenset({float})
# What a non-finite float becomes before validation, so no error ever echoes NaN back: an error
# echoing its input as a float NaN would make the 422 answer itself unserialisable (a 500).
NON_FINITE_MARKERS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
# The deepest a valid body nests (body, microbatches, rank, microbatch, target) plus slack;
# anything deeper is replaced too, so error echoes stay shallow.
MAX_ECHO_DEPTH = 8


def _json_safe(value: Any, depth: int = 0) -> Any:
    """The raw body with non-finite floats as marker strings and over-deep nesting cut off."""
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE_MARKERS[repr(value)]
    if not isinstance(value, (list, dict)):
        return value
    if depth >= MAX_ECHO_DEPTH:
        return "(nested too deeply)"
    if isinstance(value, dict):
        return {key: _json_safe(item, depth + 1) for key, item in value.items()}
    # A list of finite floats (what a query or form gives) has nothing to replace: any inf or
    # NaN would make its sum inf or NaN.
    if FLOATS_ONLY.issuperset(map(type, value)) and math.isfinite(sum(value)):
        return value.copy()
    return [_json_safe(item, depth + 1) for item in value]


def _refuse_markers(value: Any) -> Any:
    if isinstance(value, str) and value in NON_FINITE_MARKERS.values():
        raise PydanticCustomError(
            "finite_number", "Input should be a finite number, not {value}", {"value": value}
        )
    return value


# strict: JSON true is not a number; ints are still accepted where a float is expected. The
# marker check comes last so that it runs first (and the JSON schema keeps minimum/maximum).
Finite = Annotated[float, Field(strict=True, allow_inf_nan=False), BeforeValidator(_refuse_markers)]
Value = Annotated[
    float,
    Field(strict=True, allow_inf_nan=False, ge=-MAX_ABS_VALUE, le=MAX_ABS_VALUE),
    BeforeValidator(_refuse_markers),
]
Count = Annotated[
    float,
    Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_COUNT),
    BeforeValidator(_refuse_markers),
]
RankTargets = Annotated[list[Value], Field(max_length=MAX_ITEMS)]
RankWeights = Annotated[list[Count], Field(max_length=MAX_ITEMS)]
RankMicrobatches = Annotated[list[RankTargets], Field(min_length=1, max_length=MAX_MICROBATCHES)]
RankMicrobatchWeights = Annotated[list[RankWeights], Field(max_length=MAX_MICROBATCHES)]


def _weights_nesting(value: Any) -> str:
    """``per-microbatch`` when the lists hold lists of lists, else ``per-item``."""
    if isinstance(value, list):
        for rank in value:
            if isinstance(rank, list) and any(isinstance(entry, list) for entry in rank):
                return "per-microbatch"
    return "per-item"


ItemWeights = Annotated[list[RankWeights], Field(max_length=MAX_RANKS)]
MicrobatchWeights = Annotated[list[RankMicrobatchWeights], Field(max_length=MAX_RANKS)]
Weights = Annotated[
    Annotated[ItemWeights, Tag("per-item")] | Annotated[MicrobatchWeights, Tag("per-microbatch")],
    Discriminator(_weights_nesting),
    # anyOf, not the generated oneOf: an empty rank ([[]]) fits both nestings.
    WithJsonSchema(
        {
            "anyOf": [
                TypeAdapter(ItemWeights).json_schema(),
                TypeAdapter(MicrobatchWeights).json_schema(),
            ]
        }
    ),
]

LESSON_EXAMPLES: dict[str, dict[str, Any]] = {
    "means": {
        "summary": "Counts and means: the lesson's two ranks",
        "description": "Counts 2 and 6, means 1 and 3: g = 2.5 against the rank mean 2.0.",
        "value": {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10},
    },
    "items": {
        "summary": "Targets per rank, with a 50-step trajectory",
        "description": "Loss ½(w - y)² at w = 10: fixed points 7.5 (global) and 8 (rank mean).",
        "value": {"targets": [[9, 9], [7, 7, 7, 7, 7, 7]], "eta": 0.1, "w": 10, "steps": 50},
    },
    "accumulation": {
        "summary": "Two microbatches per rank, accumulated over one window",
        "description": (
            "Each rank holds the lesson's microbatches [9, 9] and six 7s: averaging microbatch"
            " means gives 2.0, the window count gives 2.5."
        ),
        "value": {
            "microbatches": [[[9, 9], [7, 7, 7, 7, 7, 7]], [[9, 9], [7, 7, 7, 7, 7, 7]]],
            "eta": 0.1,
            "w": 10,
        },
    },
}


def _form_schema(title: str, present: list[str], absent: list[str]) -> JsonValue:
    properties: JsonDict = {name: {"type": "array"} for name in present}
    properties.update({name: {"type": "null"} for name in absent})
    required: list[JsonValue] = [*present]
    return {"title": title, "required": required, "properties": properties}


# The one-form rule in the JSON schema too (a missing field or null both mean "not given"), so
# documentation and generated clients know which fields go together.
FORM_SCHEMAS: list[JsonValue] = [
    _form_schema(
        "means form", ["counts", "means"], ["targets", "microbatches", "weights", "steps"]
    ),
    _form_schema("items form", ["targets"], ["counts", "means", "microbatches"]),
    _form_schema("accumulation form", ["microbatches"], ["counts", "means", "targets", "steps"]),
]


def oversized(value: Any, depth: int) -> str | None:
    """Why a raw per-rank list is too large to look at, or None: more than MAX_RANKS ranks, or
    (``depth`` 1: ranks of items; 2: ranks of microbatches of items) more than MAX_ITEMS items
    or MAX_MICROBATCHES microbatches on a rank. Only lengths are read, never the items."""
    if not isinstance(value, list):
        return None
    if len(value) > MAX_RANKS:
        return f"at most {MAX_RANKS} ranks (one entry per rank), got {len(value)}"
    items = 0
    for rank in value if depth else ():
        if not isinstance(rank, list):
            continue
        if depth == 2 and len(rank) > MAX_MICROBATCHES:
            items = MAX_ITEMS + 1
            break
        items += len(rank) if depth == 1 else sum(len(b) for b in rank if isinstance(b, list))
    if items > MAX_ITEMS:
        batches = f" and {MAX_MICROBATCHES} microbatches per rank" if depth == 2 else ""
        return f"at most {MAX_ITEMS} items in all{batches}"
    return None


# How deep each per-rank field's lists nest (0: numbers, 1: ranks of items, 2: ranks of
# microbatches of items); ``weights`` nests like the form it weighs (2 beside microbatches).
BOUNDED_DEPTHS = (("counts", 0), ("means", 0), ("targets", 1), ("microbatches", 2), ("weights", 1))


def _error(field: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(
        "gradient_request", "{field}: {message}", {"field": field, "message": message}
    )


class GradientRequest(BaseModel):
    """One update to reduce, in exactly one form: ``counts``, ``targets`` or ``microbatches``.

    Fields are validated in declaration order, so the shape checks of ``means`` and ``weights``
    can see the validated ``counts``, ``targets`` and ``microbatches`` before them.
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [example["value"] for example in LESSON_EXAMPLES.values()],
            "oneOf": FORM_SCHEMAS,
        },
    )

    counts: list[Count] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RANKS,
        description=(
            f"Means form: valid-item count nᵣ per rank (items, tokens or a sum of sample weights),"
            f" 0 ≤ nᵣ ≤ {MAX_COUNT:g}; 1 to {MAX_RANKS} ranks."
        ),
    )
    means: list[Value] | None = Field(
        default=None,
        max_length=MAX_RANKS,
        description="Means form: mean local gradient ḡᵣ per rank, same length as counts.",
    )
    targets: list[RankTargets] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RANKS,
        description=(
            f"Items form: targets y per rank for loss(w; y) = ½(w - y)²; 1 to {MAX_RANKS} ranks,"
            f" at most {MAX_ITEMS} items in all; a rank may be empty."
        ),
    )
    microbatches: list[RankMicrobatches] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RANKS,
        description=(
            f"Accumulation form: per rank 1 to {MAX_MICROBATCHES} microbatches, each a list of"
            f" targets; at most {MAX_ITEMS} items in all; a microbatch may be empty."
        ),
    )
    weights: Weights | None = Field(
        default=None,
        description=(
            "Optional per-item weights ≥ 0 (0 = padded or masked), nested exactly like targets"
            " or microbatches; without them every item weighs 1."
        ),
    )
    steps: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_STEPS,
        description=f"Items form only: SGD steps for the trajectories, 0 to {MAX_STEPS}.",
    )
    eta: Finite = Field(
        gt=0,
        le=MAX_ETA,
        description=f"Learning rate η, 0 < η ≤ {MAX_ETA:g}.",
    )
    w: Finite = Field(
        ge=-MAX_ABS_VALUE,
        le=MAX_ABS_VALUE,
        description="The shared parameter w before the update.",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        """Exactly one form, and only that form's companions (checked on the cleaned body)."""
        if not isinstance(data, dict):
            return data
        get = data.get
        given = [name for name in FORM_FIELDS if get(name) is not None]
        if len(given) != 1:
            got = ", ".join(given) if given else "none of them"
            raise _error("counts/targets/microbatches", f"give exactly one of them (got {got})")
        if given[0] == "counts":
            if get("means") is None:
                raise _error("means", "required with counts (one mean gradient per rank)")
            if get("weights") is not None:
                raise _error("weights", "belongs to the targets and microbatches forms only")
        elif get("means") is not None:
            raise _error("means", "belongs to the counts form only")
        if given[0] != "targets" and get("steps") is not None:
            raise _error("steps", "belongs to the targets form only")
        return data

    # Defined after _one_form so that it runs first (pydantic runs "before" model validators in
    # reverse order of definition). First the sizes of the raw lists, before anything walks,
    # copies or validates their entries, so an oversized body is refused cheaply, naming its
    # field; then the body cleaned for echoes, so every later error echoes the cleaned body.
    @model_validator(mode="before")
    @classmethod
    def _bounded_and_clean(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, depth in BOUNDED_DEPTHS:
                if name == "weights" and data.get("microbatches") is not None:
                    depth = 2
                refused = oversized(data.get(name), depth)
                if refused is not None:
                    raise _error(name, refused)
        return _json_safe(data)

    @field_validator("means")
    @classmethod
    def _means_match_counts(cls, means: list[float] | None, info: ValidationInfo) -> Any:
        counts = info.data.get("counts")
        if means is not None and counts is not None and len(means) != len(counts):
            raise _error("means", f"has {len(means)} entries but counts has {len(counts)}")
        return means

    @field_validator("weights")
    @classmethod
    def _weights_match(cls, weights: Any, info: ValidationInfo) -> Any:
        if weights is None:
            return weights
        for name in ("targets", "microbatches"):
            shape_of = info.data.get(name)
            if shape_of is not None:
                mismatch = _first_mismatch(weights, shape_of)
                if mismatch:
                    raise _error("weights", f"must be nested exactly like {name}: {mismatch}")
        return weights

    @property
    def form(self) -> Form:
        """Which of the three forms this request uses."""
        return next(form for name, form in FORM_FIELDS.items() if getattr(self, name) is not None)


def _first_mismatch(weights: Any, shape_of: Any, where: str = "") -> str | None:
    """Where two nested lists first differ in shape, as ``weights[1] has 3 … targets has 2``."""
    weights_is_list = isinstance(weights, list)
    if weights_is_list != isinstance(shape_of, list):
        kind = "a list" if isinstance(shape_of, list) else "a number"
        return f"weights{where} must be {kind}"
    if not weights_is_list:
        return None
    if len(weights) != len(shape_of):
        return f"weights{where} has {len(weights)} entries but should have {len(shape_of)}"
    for index, (inner, reference) in enumerate(zip(weights, shape_of, strict=True)):
        mismatch = _first_mismatch(inner, reference, f"{where}[{index}]")
        if mismatch:
            return mismatch
    return None


# The ring all-reduce panel: payload in MB (10⁶ bytes), latency in µs, bandwidth in GB/s.
MAX_PAYLOAD_MB = 1e6
MAX_RING_RANKS = 4096
MAX_ALPHA_US = 1e6
MAX_BANDWIDTH_GBPS = 1e4


class RingRequest(BaseModel):
    """The ring all-reduce panel's state; fields go by their query parameters (``ring_mb`` …)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    payload_mb: Finite = Field(
        alias="ring_mb", gt=0, le=MAX_PAYLOAD_MB, description="Payload S in MB (10⁶ bytes)."
    )
    ranks: int = Field(
        alias="ring_p", strict=True, ge=2, le=MAX_RING_RANKS, description="Ranks P in the ring."
    )
    alpha_us: Finite = Field(
        alias="ring_us",
        ge=0,
        le=MAX_ALPHA_US,
        description="Start-up latency \N{GREEK SMALL LETTER ALPHA} in µs.",
    )
    bandwidth_gbps: Finite = Field(
        alias="ring_gbps", gt=0, le=MAX_BANDWIDTH_GBPS, description="Bandwidth B in GB/s."
    )
