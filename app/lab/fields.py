"""Errors at the lab's fields: one way to name a field, whatever refused it.

A ``FieldError`` carries the state model's field (``counts``, ``eta``, ``ring_mb``: the same name
as the query parameter, the form control's ``name`` and the JSON key), the id of the input it
belongs to (where the page shows it), and a message that starts with the field's label (``rank 1
count``). The pydantic model's errors and the engine's come through the same two functions.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from app.engine import EngineError
from app.lab.numbers import minus_signs

# Tags of the discriminated ``weights`` union: part of pydantic's error location, not a field.
UNION_TAGS = frozenset({"per-item", "per-microbatch"})
# Inputs and labels of the fields that have one control each.
SCALAR_INPUTS = {
    "eta": ("lab-eta", "η (learning rate)"),
    "w": ("lab-w", "w (parameter)"),
    "steps": ("lab-steps", "steps"),
    "P": ("lab-P", "P (number of ranks)"),
    "ring_mb": ("ring-mb", "payload S (MB)"),
    "ring_p": ("ring-p", "ranks P"),
    "ring_us": ("ring-us", "start-up \N{GREEK SMALL LETTER ALPHA} (µs)"),
    "ring_gbps": ("ring-gbps", "bandwidth B (GB/s)"),
}
# Fields with one control per rank: the input's id prefix and what one rank's control holds.
RANK_INPUTS = {
    "counts": ("lab-count", "count"),
    "means": ("lab-mean", "mean"),
    "targets": ("lab-targets", "targets"),
    "weights": ("lab-weights", "weights"),
}
# The engine names its request field; these are the inputs they belong to.
ENGINE_INPUTS = {
    "payload_bytes": "ring_mb",
    "ranks": "ring_p",
    "alpha_s": "ring_us",
    "bandwidth_bytes_per_s": "ring_gbps",
}
FORM_INPUT = "lab-form"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one input: the field (query parameter), its control's id, a message."""

    param: str
    input_id: str
    message: str


def input_id(param: str, rank: int | None = None) -> str:
    """The id of the control a field (and, for per-rank fields, a rank) is typed into."""
    if param in SCALAR_INPUTS:
        return SCALAR_INPUTS[param][0]
    if param in RANK_INPUTS:
        if rank is None:
            # The whole list: its length is the number of ranks, except for the companions.
            return "lab-P" if param in ("counts", "targets") else f"{RANK_INPUTS[param][0]}-0"
        return f"{RANK_INPUTS[param][0]}-{rank}"
    return FORM_INPUT


def label(param: str, place: Sequence[int | str] = ()) -> str:
    """How a message names a field: ``rank 1 count``, ``rank 0 targets, item 3``, ``eta``."""
    if param in SCALAR_INPUTS:
        return SCALAR_INPUTS[param][1]
    if param in RANK_INPUTS and place:
        text = f"rank {place[0]} {RANK_INPUTS[param][1]}"
        if len(place) > 1 and param in ("targets", "weights"):
            text += f", item {int(place[1]) + 1}"
        return text
    if param in ("counts", "targets"):
        # The whole list: its length is P, the number of ranks.
        return f"{param} (one entry per rank)"
    return param


def _from_pydantic(error: ErrorDetails) -> FieldError:
    if error["type"] == "gradient_request":
        # The model's own cross-field checks already start with the field's name.
        ctx = error.get("ctx") or {}
        param = str(ctx.get("field", ""))
        return FieldError(param, input_id(param.split("/")[0]), minus_signs(error["msg"]))
    loc = [part for part in error["loc"] if part not in UNION_TAGS]
    param = str(loc[0]) if loc else ""
    place = loc[1:]
    rank = place[0] if place and isinstance(place[0], int) else None
    message = minus_signs(f"{label(param, place)}: {error['msg']}")
    return FieldError(param, input_id(param, rank), message)


def validation_errors(exc: ValidationError) -> tuple[FieldError, ...]:
    """The model's errors, one per control (the first), in the order the model checks them."""
    errors: dict[str, FieldError] = {}
    for error in exc.errors(include_url=False):
        field_error = _from_pydantic(error)
        errors.setdefault(field_error.input_id, field_error)
    return tuple(errors.values())


def engine_error(exc: EngineError) -> FieldError:
    """An engine error (its message already names the field) at the input it belongs to."""
    param = ENGINE_INPUTS.get(exc.field, exc.field)
    rank = 0 if param in RANK_INPUTS else None
    return FieldError(param, input_id(param, rank), minus_signs(exc.message))
