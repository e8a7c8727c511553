"""Input checks shared by the engine's entry points; each failure names its request field."""

import functools
import math
import sys
from collections.abc import Callable, Sequence, Sized
from typing import ParamSpec, TypeVar

import numpy as np
from numpy.typing import NDArray

from app.engine.errors import EngineError

FloatArray = NDArray[np.float64]
# A positive count or weight below the smallest normal float (a subnormal, e.g. 5e-324) would
# make 1/N or 1/(P·nᵣ) overflow: such values are refused, the same in every form and endpoint.
SMALLEST_COUNT = sys.float_info.min
FLOATS_ONLY = frozenset({float})
Params = ParamSpec("Params")
Result = TypeVar("Result")


def quiet_overflow(function: Callable[Params, Result]) -> Callable[Params, Result]:
    """Let NumPy overflow to inf without a RuntimeWarning: ``finite_results`` then refuses it."""

    @functools.wraps(function)
    def wrapper(*args: Params.args, **kwargs: Params.kwargs) -> Result:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return function(*args, **kwargs)

    return wrapper


def is_number(value: object) -> bool:
    """An int or float, but not a bool (JSON ``true`` is not a count)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def finite_scalar(field: str, value: float, *, positive: bool = False) -> float:
    """A finite float; ``positive`` also demands ``value > 0``."""
    if type(value) is float and (0.0 if positive else -math.inf) < value < math.inf:
        return value  # the common case: no conversion, nothing to refuse
    if not is_number(value):
        raise EngineError(field, f"{field} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise EngineError(field, f"{field} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise EngineError(field, f"{field} must be greater than 0, got {value!r}")
    return value


def finite_floats(
    field: str, values: Sequence[float], *, non_negative: bool = False, where: str = ""
) -> list[float]:
    """A list of finite Python floats; ``non_negative`` also demands every entry ``>= 0``.

    ``where`` locates the list inside the field for the message, e.g. ``"[1]"``.
    """
    if type(values) is list and FLOATS_ONLY.issuperset(map(type, values)):
        # The common case (a parsed query, a JSON list of decimals): plain floats already.
        floats = values.copy()
    else:
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise EngineError(field, f"{field}{where} must be a list of numbers")
        for value in values:
            if not is_number(value):
                raise EngineError(field, f"{field}{where} must hold numbers only, got {value!r}")
        floats = [float(value) for value in values]
    # A sum of finite floats is finite unless it overflows; any inf or NaN makes it inf or NaN.
    if not math.isfinite(sum(floats)) and not all(map(math.isfinite, floats)):
        raise EngineError(field, f"{field}{where} must hold finite numbers only")
    if not non_negative or not floats:
        return floats
    least = min(floats)
    if least < 0:
        raise EngineError(field, f"{field}{where} must not be negative, got {least!r}")
    if least >= SMALLEST_COUNT:
        return floats
    tiny = [i for i, x in enumerate(floats) if 0 < x < SMALLEST_COUNT]
    if tiny:
        index = tiny[0]
        raise EngineError(
            field,
            f"{field}{where}[{index}] = {floats[index]!r} is positive but below"
            f" {SMALLEST_COUNT!r}, the smallest normal float: 1/N would overflow. Use 0 for"
            f" no items, or a value of at least {SMALLEST_COUNT!r}",
        )
    return floats


def finite_results(field: str, **values: float | Sequence[float] | FloatArray) -> None:
    """Refuse results that left the float range, so no NaN or Infinity ever reaches JSON.

    ``field`` is the request field blamed: the input whose size drove the overflow.
    """
    for name, value in values.items():
        if isinstance(value, float):
            finite = math.isfinite(value)
        elif isinstance(value, list | tuple):
            finite = all(map(math.isfinite, value))
        else:
            finite = bool(np.all(np.isfinite(value)))
        if not finite:
            raise EngineError(
                field,
                f"out of range: {name} would leave the floating-point range",
            )


def ranked_lists(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None,
    *,
    targets_field: str = "targets",
    where: str = "",
) -> list[tuple[list[float], list[float]]]:
    """Per list (a rank, or a rank's microbatch) its targets and their weights (the request's
    ``weights``) as float lists, shape-checked.

    Without ``weights`` every item weighs 1. A weight of 0 marks a padded or masked item.
    """
    if isinstance(targets, str | bytes) or not isinstance(targets, Sequence):
        raise EngineError(targets_field, f"{targets_field}{where} must be a list of lists")
    if weights is not None and len(weights) != len(targets):
        raise EngineError(
            "weights",
            f"weights{where} has {len(weights)} lists"
            f" but {targets_field}{where} has {len(targets)}",
        )
    pairs = []
    for index, rank_targets in enumerate(targets):
        at = f"{where}[{index}]"
        y = finite_floats(targets_field, rank_targets, where=at)
        if weights is None:
            weight = [1.0] * len(y)
        else:
            weight = finite_floats("weights", weights[index], non_negative=True, where=at)
            if len(weight) != len(y):
                raise EngineError(
                    "weights",
                    f"weights{at} has {len(weight)} entries but {targets_field}{at} has {len(y)}",
                )
        pairs.append((y, weight))
    return pairs


def ranked_items(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None,
    *,
    targets_field: str = "targets",
    where: str = "",
) -> list[tuple[FloatArray, FloatArray]]:
    """``ranked_lists`` as pairs of 1-D float64 arrays."""
    pairs = ranked_lists(targets, weights, targets_field=targets_field, where=where)
    return [
        (np.array(y, dtype=np.float64), np.array(weight, dtype=np.float64)) for y, weight in pairs
    ]


def require_items(
    pairs: Sequence[tuple[Sized, Sized]], total: float, items_field: str = "targets"
) -> None:
    """``N = 0`` is refused, naming ``weights`` when items exist but every one is masked."""
    if total == 0:
        field = "weights" if any(len(y) for y, _ in pairs) else items_field
        raise EngineError(field, "no valid items in this update")
