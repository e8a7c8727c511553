"""GradientRequest validation (forms, limits, JSON-safe errors) and compute() for each form."""

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app.engine import EngineError, GradientResult
from app.lab.compute import compute, engine_error_detail
from app.lab.state import (
    LESSON_EXAMPLES,
    MAX_ECHO_DEPTH,
    MAX_ITEMS,
    MAX_RANKS,
    NON_FINITE_MARKERS,
    GradientRequest,
    _json_safe,
)


def errors_of(body: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        GradientRequest.model_validate(body)
    return [dict(error) for error in caught.value.errors()]


@pytest.mark.parametrize(
    ("name", "form"), [("means", "means"), ("items", "items"), ("accumulation", "accumulation")]
)
def test_request_form_of_each_lesson_example(name: str, form: str) -> None:
    request = GradientRequest.model_validate(LESSON_EXAMPLES[name]["value"])
    assert request.form == form


def test_request_accepts_json_ints_for_floats() -> None:
    request = GradientRequest.model_validate_json(
        '{"counts": [2, 6], "means": [1, 3], "eta": 1, "w": 10}'
    )
    assert request.counts == [2.0, 6.0]
    assert isinstance(request.eta, float)


def test_request_weights_nesting_follows_the_form() -> None:
    items = GradientRequest.model_validate(
        {"targets": [[9, 9], []], "weights": [[1, 0], []], "eta": 0.1, "w": 10}
    )
    window = GradientRequest.model_validate(
        {"microbatches": [[[9, 9], []]], "weights": [[[1, 0], []]], "eta": 0.1, "w": 10}
    )
    assert items.weights == [[1.0, 0.0], []]
    assert window.weights == [[[1.0, 0.0], []]]


def test_request_limits_accept_the_maximum() -> None:
    per_rank = MAX_ITEMS // MAX_RANKS
    targets = [[1.0] * per_rank for _ in range(MAX_RANKS)]
    targets[0] += [1.0] * (MAX_ITEMS - per_rank * MAX_RANKS)
    request = GradientRequest.model_validate(
        {"targets": targets, "eta": 0.1, "w": 0, "steps": 1000}
    )
    assert sum(map(len, request.targets or [])) == MAX_ITEMS


def test_request_one_more_item_is_refused() -> None:
    errors = errors_of({"targets": [[1.0] * 5000, [1.0] * 5001], "eta": 0.1, "w": 0})
    # Refused by the size check that runs before any item is looked at (a check across the
    # body: the field is named in ctx, and the API's 422 puts it at the end of loc).
    assert errors[0]["ctx"]["field"] == "targets"
    assert "at most 10000 items" in errors[0]["msg"]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_request_non_finite_errors_are_json_safe(value: float) -> None:
    body = {
        "counts": [value],
        "means": [value],
        "targets": [[value]],
        "weights": [[value]],
        "eta": value,
        "w": value,
        "extra": [value],
    }
    errors = errors_of(body)
    json.dumps([{**error, "ctx": None} for error in errors], allow_nan=False)
    assert "counts/targets/microbatches" in errors[0]["msg"]
    field_errors = errors_of({"counts": [value], "means": [value], "eta": value, "w": value})
    assert {error["loc"] for error in field_errors} == {
        ("counts", 0),
        ("means", 0),
        ("eta",),
        ("w",),
    }
    assert all(error["type"] == "finite_number" for error in field_errors)
    json.dumps([{**error, "ctx": None} for error in field_errors], allow_nan=False)


def test_request_model_level_errors_name_the_field() -> None:
    (error,) = errors_of({"counts": [2, 6], "eta": 0.1, "w": 10})
    assert error["msg"].startswith("means:")
    (error,) = errors_of({"counts": [2, 6], "means": [1, 3], "steps": 4, "eta": 0.1, "w": 10})
    assert error["msg"].startswith("steps:")


def test_compute_means_form_lesson_example() -> None:
    answer = compute(GradientRequest.model_validate(LESSON_EXAMPLES["means"]["value"]))
    assert isinstance(answer, GradientResult)
    assert answer.form == "means"
    assert answer.global_gradient == pytest.approx(2.5)
    assert answer.rank_mean_gradient == pytest.approx(2.0)
    assert answer.trajectory is None
    assert answer.accumulation is None


def test_compute_items_form_carries_trajectory_and_its_warnings() -> None:
    request = GradientRequest.model_validate(
        {"targets": [[9, 9], [7, 7, 7, 7, 7, 7]], "eta": 2.5, "w": 10, "steps": 10}
    )
    answer = compute(request)
    assert answer.trajectory is not None
    assert answer.trajectory.fixed_point_global == pytest.approx(7.5)
    assert len(answer.trajectory.w_global) == 11
    assert any("diverges" in text for text in answer.warnings)


def test_compute_accumulation_form_uses_window_counts_across_ranks() -> None:
    request = GradientRequest.model_validate(
        {"microbatches": [[[9, 9], [7, 7, 7, 7, 7, 7]], [[7, 7]]], "eta": 0.1, "w": 10}
    )
    answer = compute(request)
    assert answer.counts == (8.0, 2.0)
    assert answer.means == pytest.approx([2.5, 3.0])
    assert answer.global_gradient == pytest.approx((2 * 1 + 6 * 3 + 2 * 3) / 10)
    assert answer.accumulation is not None
    assert answer.accumulation.naive_gradient == pytest.approx((2.0 + 3.0) / 2)
    assert answer.accumulation.window_gradient == pytest.approx(answer.global_gradient)


def test_compute_raises_engine_error_for_no_valid_items() -> None:
    request = GradientRequest.model_validate({"counts": [0, 0], "means": [0, 0], "eta": 1, "w": 0})
    with pytest.raises(EngineError) as caught:
        compute(request)
    (detail,) = engine_error_detail(caught.value)
    assert detail["loc"] == ["body", "counts"]
    assert detail["msg"] == "counts: no valid items in this update"


Path = tuple[tuple[str, Any], ...]


def _flat(value: Any) -> dict[Path, str]:
    """Every leaf of a JSON value by its path (``("[]", index)`` or ``("{}", key)`` steps), as
    its ``repr``; an empty list or object is a leaf too."""
    flat: dict[Path, str] = {}
    todo: list[tuple[Path, Any]] = [((), value)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, list) and item:
            todo += [((*path, ("[]", i)), x) for i, x in enumerate(item)]
        elif isinstance(item, dict) and item:
            todo += [((*path, ("{}", k)), x) for k, x in item.items()]
        else:
            flat[path] = repr(item)
    return flat


def _echo_of(body: Any) -> dict[Path, str]:
    """What an error may echo of a body, by path: each leaf as it was, a non-finite float as
    its marker text; where a leaf sits under more than ``MAX_ECHO_DEPTH`` lists and objects,
    the one at that depth is the text "(nested too deeply)"."""
    echo: dict[Path, str] = {}
    for path, leaf in _flat(body).items():
        cut = path[:MAX_ECHO_DEPTH]
        if len(path) > MAX_ECHO_DEPTH or (len(path) == MAX_ECHO_DEPTH and leaf in ("[]", "{}")):
            echo[cut] = repr("(nested too deeply)")
        elif leaf in NON_FINITE_MARKERS:
            echo[path] = repr(NON_FINITE_MARKERS[leaf])
        else:
            echo[path] = leaf
    return echo


_leaves = st.one_of(
    st.floats(), st.sampled_from([1e308, -0.0, 3, "x", True, None]), st.integers(-5, 5)
)
_bodies = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_bodies)
@example([[[[[[[[[1.0, []]]]]]]], [[[[[[[[{}]]]]]]]]]])  # a leaf and an empty list past the depth
@example({"a": [[[[[[[float("nan"), 2.0]]]]]]]})  # a marker at the last depth echoed
@example([1.0, float("inf")])
def test_json_safe_echoes_each_leaf_or_its_marker(body: Any) -> None:
    for value in (body, [body] * 3, [1.5, body]):
        echo = _json_safe(value)
        json.dumps(echo, allow_nan=False)
        assert _flat(echo) == _echo_of(value)
