"""Input checks shared by the engine's entry points; each failure names its request field."""

import functools
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import ParamSpec, TypeVar

import numpy as np
from numpy.typing import NDArray

from app.engine.errors import EngineError

FloatArray = NDArray[np.float64]
# A positive count or weight below the smallest normal float (a subnormal, e.g. 5e-324) would
# make 1/N or 1/(P·nᵣ) overflow: such values are refused, the same in every form and endpoint.
SMALLEST_COUNT = sys.float_info.min
Params = ParamSpec("Params")
Result = TypeVar("Result")


def quiet_overflow(function: Callable[Params, Result]) -> Callable[Params, Result]:
    """Let NumPy overflow to inf without a RuntimeWarning: ``finite_results`` then refuses it."""

    @functools.wraps(function)
    def wrapper(*args: Params.args, **kwargs: Params.kwargs) -> Result:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return function(*args, **kwargs)

    return wrapper


def as_floats(values: Iterable[float]) -> tuple[float, ...]:
    """Plain Python floats (not NumPy scalars) for the frozen result types."""
    return tuple(float(x) for x in values)


def is_number(value: object) -> bool:
    """An int or float, but not a bool (JSON ``true`` is not a count)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def finite_scalar(field: str, value: float, *, positive: bool = False) -> float:
    """A finite float; ``positive`` also demands ``value > 0``."""
    if not is_number(value):
        raise EngineError(field, f"{field} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise EngineError(field, f"{field} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise EngineError(field, f"{field} must be greater than 0, got {value!r}")
    return value


def finite_vector(
    field: str, values: Sequence[float], *, non_negative: bool = False, where: str = ""
) -> FloatArray:
    """A 1-D float64 array of finite numbers; ``non_negative`` also demands every entry ``>= 0``.

    ``where`` locates the list inside the field for the message, e.g. ``"[1]"``.
    """
    name = f"{field}{where}"
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise EngineError(field, f"{name} must be a list of numbers")
    for value in values:
        if not is_number(value):
            raise EngineError(field, f"{name} must hold numbers only, got {value!r}")
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)):
        raise EngineError(field, f"{name} must hold finite numbers only")
    if non_negative and np.any(array < 0):
        raise EngineError(field, f"{name} must not be negative, got {float(array.min())!r}")
    tiny = (array > 0) & (array < SMALLEST_COUNT) if non_negative else None
    if tiny is not None and tiny.any():
        index = int(np.flatnonzero(tiny)[0])
        raise EngineError(
            field,
            f"{name}[{index}] = {float(array[index])!r} is positive but below"
            f" {SMALLEST_COUNT!r}, the smallest normal float: 1/N would overflow. Use 0 for"
            f" no items, or a value of at least {SMALLEST_COUNT!r}",
        )
    return array


def finite_results(field: str, **values: float | FloatArray) -> None:
    """Refuse results that left the float range, so no NaN or Infinity ever reaches JSON.

    ``field`` is the request field blamed: the input whose size drove the overflow.
    """
    for name, value in values.items():
        if not np.all(np.isfinite(value)):
            raise EngineError(
                field,
                f"out of range: {name} would leave the floating-point range",
            )


def ranked_items(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None,
    *,
    targets_field: str = "targets",
    weights_field: str = "weights",
    where: str = "",
) -> list[tuple[FloatArray, FloatArray]]:
    """Per list (a rank, or a rank's microbatch) its targets and their weights, shape-checked.

    Without ``weights`` every item weighs 1. A weight of 0 marks a padded or masked item.
    """
    if isinstance(targets, str | bytes) or not isinstance(targets, Sequence):
        raise EngineError(targets_field, f"{targets_field}{where} must be a list of lists")
    if weights is not None and len(weights) != len(targets):
        raise EngineError(
            weights_field,
            f"{weights_field}{where} has {len(weights)} lists"
            f" but {targets_field}{where} has {len(targets)}",
        )
    pairs = []
    for index, rank_targets in enumerate(targets):
        at = f"{where}[{index}]"
        y = finite_vector(targets_field, rank_targets, where=at)
        if weights is None:
            weight = np.ones_like(y)
        else:
            weight = finite_vector(weights_field, weights[index], non_negative=True, where=at)
            if weight.shape != y.shape:
                raise EngineError(
                    weights_field,
                    f"{weights_field}{at} has {weight.size} entries"
                    f" but {targets_field}{at} has {y.size}",
                )
        pairs.append((y, weight))
    return pairs
