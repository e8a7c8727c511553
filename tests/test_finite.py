"""No 5xx and no inf/nan on any input: the engine, the lab's pages and the JSON API, fuzzed with
zeros, subnormals, ±1e308 and huge η (hypothesis).

Every derived number is finite, or the input is refused with a message naming the field.
"""

import contextlib
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine import (
    EngineError,
    accumulate,
    from_items,
    from_means,
    ring_allreduce,
    trajectory,
)
from app.main import create_app
from app.settings import Settings

SUBNORMALS = [5e-324, 1e-320, 2.2250738585072e-309, 1e-310]
EDGES = [0.0, *SUBNORMALS, 2.2250738585072014e-308, 1e-300, 1e-10, 1.0, 64.0, 1e6, 1e12, 1e308]
# The engine takes any float; the web forms refuse what is out of their bounds (with a message).
nasty = st.one_of(
    st.sampled_from(EDGES + [-x for x in EDGES]),
    st.floats(allow_nan=False, allow_infinity=False),
)
counts_st = st.one_of(st.sampled_from(EDGES), st.floats(min_value=0, allow_infinity=False))
eta_st = st.one_of(st.sampled_from([*SUBNORMALS, 1e-300, 0.1, 10.0, 1e6, 1e300, 1e308]), nasty)
ranks_st = st.integers(min_value=1, max_value=8)
# Text a student could type: numbers as repr, in e-notation, and words that are not numbers.
typed = st.one_of(
    nasty.map(repr),
    st.sampled_from(["1e308", "-1e308", "1e309", "inf", "-inf", "nan", "NaN", "", " ", "1e-400"]),
    st.sampled_from(["5e-324", "4.9e-324", "1e-320", "0x10", "\u0661", "1_000", "--1", "1e", "e5"]),
)
INF_OR_NAN = re.compile(r"(?<![\w-])-?(inf|nan|infinity)(?![\w-])", re.IGNORECASE)
# A control shows what the student typed (even "inf"), and its error quotes it: not results.
TYPED_VALUE = re.compile(
    r'\svalue="[^"]*"|&#39;[^&]*&#39;|finite number, not -?(Infinity|NaN)', re.IGNORECASE
)
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
WEB_FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


def finite_or_refused(run: Callable[[], Any], fields: set[str]) -> None:
    """``run()`` returns only finite numbers, or raises EngineError naming one of ``fields``."""
    try:
        result = run()
    except EngineError as error:
        refused: EngineError | None = error
    else:
        refused = None
    if refused is None:
        assert all_finite(result), result
    else:
        assert refused.field in fields
        assert str(refused).startswith(refused.field)


def all_finite(value: Any) -> bool:
    """Every float inside a result (dataclasses, tuples, nested) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(all_finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple | list):
        return all(all_finite(item) for item in value)
    return True


# ---- the engine ----------------------------------------------------------------------------


@FUZZ
@given(st.data(), ranks_st, eta_st, nasty)
def test_from_means_is_finite_or_names_the_field(
    data: st.DataObject, ranks: int, eta: float, w: float
) -> None:
    counts = data.draw(st.lists(counts_st, min_size=ranks, max_size=ranks))
    means = data.draw(st.lists(nasty, min_size=ranks, max_size=ranks))
    finite_or_refused(
        lambda: from_means(counts, means, eta=eta, w=w), {"counts", "means", "eta", "w"}
    )


items_st = st.lists(st.lists(nasty, max_size=4), min_size=1, max_size=6)


@FUZZ
@given(st.data(), items_st, eta_st, nasty, st.booleans())
def test_from_items_and_trajectory_are_finite_or_name_the_field(
    data: st.DataObject, targets: list[list[float]], eta: float, w: float, weighted: bool
) -> None:
    weights = (
        [data.draw(st.lists(counts_st, min_size=len(t), max_size=len(t))) for t in targets]
        if weighted
        else None
    )
    for run in (
        lambda: from_items(targets, weights, eta=eta, w=w),
        lambda: trajectory(targets, weights, eta=eta, w=w, steps=50),
        lambda: accumulate([[t, t] for t in targets], None, eta=eta, w=w),
    ):
        finite_or_refused(run, {"targets", "weights", "eta", "w", "steps", "microbatches"})


@FUZZ
@given(
    st.one_of(st.sampled_from([*SUBNORMALS, 8.0, 1e308]), st.floats(min_value=0)),
    st.integers(min_value=1, max_value=4096),
    st.one_of(st.sampled_from([0.0, *SUBNORMALS, 1e308]), st.floats(min_value=0)),
    st.one_of(st.sampled_from([*SUBNORMALS, 1e308]), st.floats(min_value=0)),
)
def test_ring_is_finite_or_names_the_field(
    payload: float, ranks: int, alpha: float, bandwidth: float
) -> None:
    fields = {"payload_bytes", "alpha_s", "bandwidth_bytes_per_s", "ranks"}
    finite_or_refused(lambda: ring_allreduce(payload, ranks, alpha, bandwidth), fields)
    with contextlib.suppress(EngineError):
        assert math.isfinite(ring_allreduce(payload, ranks, alpha, bandwidth).overhead_ratio * 100)


def test_ring_that_rounds_to_zero_time_is_refused() -> None:
    """The page itself answered 500 on ``/?ring_mb=1e-320&ring_us=0`` (a division by zero)."""
    with pytest.raises(EngineError, match="payload_bytes") as caught:
        ring_allreduce(1e-320 * 1e6, 8, 0.0, 10e9)
    assert "0 s" in str(caught.value)


def test_subnormal_counts_are_refused_not_infinite() -> None:
    """1/N for a subnormal N is infinite while 1/(P·nᵣ) is not: refused, naming counts (it was a
    500 on /api/gradient, /api/confirm and /lab/confirm)."""
    counts = [5e-309, 0, 0, 0, 0, 0]
    assert math.isfinite(1 / (6 * counts[0]))
    assert not math.isfinite(1 / counts[0])
    with pytest.raises(EngineError) as caught:
        from_means(counts, [1.0] * 6, eta=0.1, w=10)
    assert caught.value.field == "counts"


# ---- the web: lab pages and JSON ------------------------------------------------------------


@pytest.fixture(scope="module")
def web() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        yield client


def check_page(response: Any) -> None:
    assert response.status_code in {200, 422}, response.status_code
    text = TYPED_VALUE.sub("", response.text)
    found = [text[max(m.start() - 120, 0) : m.end() + 40] for m in INF_OR_NAN.finditer(text)]
    assert not found, f"{response.url}: {found}"


means_query = st.tuples(
    st.lists(typed, min_size=1, max_size=8), st.lists(typed, min_size=1, max_size=8)
).map(lambda cm: {"counts": ",".join(cm[0]), "means": ",".join(cm[1])})
items_query = st.lists(st.lists(typed, max_size=4), min_size=1, max_size=8).map(
    lambda ranks: {"targets": ";".join(",".join(r) for r in ranks)}
)
ring_query = st.fixed_dictionaries(
    {},
    optional={"ring_mb": typed, "ring_p": typed, "ring_us": typed, "ring_gbps": typed},
)


@WEB_FUZZ
@given(st.one_of(means_query, items_query), typed, typed, typed, ring_query)
def test_lab_states_render_without_5xx_or_inf(
    web: TestClient,
    lab: dict[str, str],
    eta: str,
    w: str,
    steps: str,
    ring: dict[str, str],
) -> None:
    query = {**lab, "eta": eta, "w": w, "steps": steps, **ring}
    check_page(web.get("/lab", params=query, headers={"HX-Request": "true"}))
    check_page(web.get("/", params=query))


def test_the_reported_states_answer_without_5xx_or_inf(web: TestClient) -> None:
    for query in (
        "ring_mb=1e-320&ring_us=0",
        "counts=5e-324,5e-324,5e-324,5e-324,5e-324,5e-324&means=1,2,3,4,5,6&eta=0.1&w=10",
        "targets=1e5,5e-324;1,999999&weights=5e-324,1e-300;0,64&steps=1000&eta=9.99&w=1e-320"
        "&ring_mb=5e-324&ring_us=5e-324&ring_gbps=1e-300&ring_p=2",
    ):
        for path in ("/", "/lab"):
            check_page(web.get(f"{path}?{query}"))


def finite_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON answer")

    return json.loads(text, parse_constant=refuse)


api_number = st.one_of(nasty, st.sampled_from([1e308, -1e308, 1e300, 5e-324]))
api_body = st.one_of(
    st.fixed_dictionaries(
        {"counts": st.lists(counts_st, min_size=1, max_size=8), "means": st.lists(api_number)}
    ),
    st.fixed_dictionaries({"targets": st.lists(st.lists(api_number, max_size=4), max_size=8)}),
    st.fixed_dictionaries(
        {"microbatches": st.lists(st.lists(st.lists(api_number, max_size=3), max_size=3))}
    ),
).flatmap(
    lambda body: st.fixed_dictionaries(
        {"eta": st.one_of(eta_st, st.just(1e6)), "w": api_number}
    ).map(lambda rest: {**body, **rest})
)


@WEB_FUZZ
@given(api_body)
def test_api_bodies_answer_finite_json_or_a_422_naming_the_field(
    web: TestClient, body: dict[str, Any]
) -> None:
    response = web.post("/api/gradient", json=body)
    assert response.status_code in {200, 422}, response.text[:300]
    payload = finite_json(response.text)
    if response.status_code == 422:
        assert payload["detail"][0]["loc"], payload
    # The confirmation validates the same way (its pool is off here: a valid body gets 503).
    confirm = web.post("/api/confirm", json=body)
    assert confirm.status_code in {422, 503}, confirm.text[:300]
    assert (confirm.status_code == 422) == (response.status_code == 422)
    finite_json(confirm.text)


def test_subnormal_counts_get_422_everywhere(web: TestClient) -> None:
    body = {"counts": [5e-309, 0, 0, 0, 0, 0], "means": [1, 2, 3, 4, 5, 6], "eta": 0.1, "w": 10}
    for path in ("/api/gradient", "/api/confirm"):
        response = web.post(path, json=body)
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"][-1] == "counts"


def test_lab_confirm_refuses_subnormal_counts_with_a_message(web: TestClient) -> None:
    form = {"counts": "5e-309,0,0,0,0,0", "means": "1,2,3,4,5,6", "eta": "0.1", "w": "10"}
    response = web.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    assert response.status_code == 422
    check_page(response)
