"""POST /api/gradient through the real app: lesson numbers, every refusal, random partitions."""

from fractions import Fraction
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance

from app.lab.state import LESSON_EXAMPLES
from app.main import create_app
from app.settings import Settings

MEANS_BODY = LESSON_EXAMPLES["means"]["value"]
ITEMS_BODY = LESSON_EXAMPLES["items"]["value"]
ACCUMULATION_BODY = LESSON_EXAMPLES["accumulation"]["value"]


def post(client: TestClient, body: Any) -> Any:
    return client.post("/api/gradient", json=body)


def post_raw(client: TestClient, text: str) -> Any:
    return client.post("/api/gradient", content=text, headers={"content-type": "application/json"})


def assert_lesson_numbers(answer: dict[str, Any]) -> None:
    assert answer["P"] == 2
    assert answer["N"] == 8
    assert answer["global_gradient"] == pytest.approx(2.5)
    assert answer["rank_mean_gradient"] == pytest.approx(2.0)
    assert answer["w_new"] == pytest.approx(9.75)
    assert answer["w_new_rank_mean"] == pytest.approx(9.8)
    assert answer["scale_factors"] == pytest.approx([0.5, 1.5])
    assert answer["compensated_means"] == pytest.approx([0.5, 4.5])


def test_gradient_means_form_lesson_example(client: TestClient) -> None:
    response = post(client, MEANS_BODY)
    assert response.status_code == 200
    answer = response.json()
    assert answer["form"] == "means"
    assert_lesson_numbers(answer)
    assert answer["trajectory"] is None
    assert answer["accumulation"] is None
    assert answer["warnings"] == []


def test_gradient_results_are_of_the_numbers_as_written(client: TestClient) -> None:
    """docs/api.md: means that sum to 0 as written have a plain mean of exactly 0.0."""
    body = {"counts": [39, 5, 29, 24, 43, 3, 37], "means": [3.7, -2.3, 8.8, -2.7, -6.6, -3.9, 3]}
    answer = post(client, {**body, "eta": 0.09, "w": 18}).json()
    assert answer["rank_mean_gradient"] == 0.0
    assert answer["w_new_rank_mean"] == 18.0
    assert answer["global_gradient"] == float(Fraction("138.7") / 180)
    assert answer["w_new_difference"] == float(Fraction("0.09") * Fraction("138.7") / 180)


def test_gradient_items_form_lesson_example(client: TestClient) -> None:
    response = post(client, ITEMS_BODY)
    assert response.status_code == 200
    answer = response.json()
    assert answer["form"] == "items"
    assert_lesson_numbers(answer)
    path = answer["trajectory"]
    assert path["steps"] == 50
    assert len(path["w_global"]) == len(path["loss_rank_mean"]) == 51
    assert path["w_global"][:2] == pytest.approx([10, 9.75])
    assert path["w_rank_mean"][:2] == pytest.approx([10, 9.8])
    assert path["fixed_point_global"] == pytest.approx(7.5)
    assert path["fixed_point_rank_mean"] == pytest.approx(8.0)


def test_gradient_accumulation_form_lesson_example(client: TestClient) -> None:
    response = post(client, ACCUMULATION_BODY)
    assert response.status_code == 200
    answer = response.json()
    assert answer["form"] == "accumulation"
    window = answer["accumulation"]
    assert window["naive_gradient"] == pytest.approx(2.0)
    assert window["window_gradient"] == pytest.approx(2.5)
    assert window["w_new_naive"] == pytest.approx(9.8)
    assert window["w_new_window"] == pytest.approx(9.75)
    assert answer["global_gradient"] == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"counts": [NaN, 6], "means": [1, 3], "eta": 0.1, "w": 10}', "counts"),
        ('{"counts": [2, 6], "means": [1, 3], "eta": Infinity, "w": 10}', "eta"),
        ('{"counts": [2, 6], "means": [1, -Infinity], "eta": 0.1, "w": 10}', "means"),
    ],
)
def test_gradient_non_finite_literal_refused(client: TestClient, text: str, field: str) -> None:
    response = post_raw(client, text)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:2] == ["body", field]


def test_gradient_invalid_json_is_422(client: TestClient) -> None:
    response = post_raw(client, '{"counts": [2, 6')
    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"


def test_gradient_no_valid_items_is_422(client: TestClient) -> None:
    response = post(client, {"counts": [0, 0], "means": [1, 3], "eta": 0.1, "w": 10})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["loc"] == ["body", "counts"]
    assert "no valid items in this update" in detail["msg"]


def assert_refused(response: Any, field: str) -> None:
    """A 422 whose detail names ``field`` in a ``loc`` (or, for whole-body checks, the message)."""
    assert response.status_code == 422, response.text
    details = response.json()["detail"]
    assert any(
        (len(detail["loc"]) > 1 and detail["loc"][1] == field)
        or (detail["loc"] == ["body"] and field in detail["msg"])
        for detail in details
    ), details


def body_with(**changes: Any) -> dict[str, Any]:
    """The means-form lesson body with ``changes`` applied (a value of None drops the key)."""
    body = {**MEANS_BODY, **changes}
    return {key: value for key, value in body.items() if value is not None}


def items_with(**changes: Any) -> dict[str, Any]:
    body = {"targets": [[9, 9], [7, 7, 7, 7, 7, 7]], "eta": 0.1, "w": 10, **changes}
    return {key: value for key, value in body.items() if value is not None}


def window_with(**changes: Any) -> dict[str, Any]:
    body = {**ACCUMULATION_BODY, **changes}
    return {key: value for key, value in body.items() if value is not None}


BAD_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("too many ranks", body_with(counts=[1] * 65, means=[1] * 65), "counts"),
    ("no ranks", body_with(counts=[], means=[]), "counts"),
    ("negative count", body_with(counts=[2, -6]), "counts"),
    ("count above maximum", body_with(counts=[2, 2e12]), "counts"),
    ("boolean count", body_with(counts=[True, 6]), "counts"),
    ("string count", body_with(counts=["2", 6]), "counts"),
    ("all counts zero", body_with(counts=[0, 0]), "counts"),
    ("means too short", body_with(means=[1]), "means"),
    ("means missing", body_with(means=None), "means"),
    ("mean above maximum", body_with(means=[1, 1e13]), "means"),
    ("eta zero", body_with(eta=0), "eta"),
    ("eta negative", body_with(eta=-0.1), "eta"),
    ("eta above maximum", body_with(eta=2e6), "eta"),
    ("eta missing", body_with(eta=None), "eta"),
    ("eta boolean", body_with(eta=True), "eta"),
    ("w missing", body_with(w=None), "w"),
    ("w string", body_with(w="10"), "w"),
    ("w boolean", body_with(w=False), "w"),
    ("weights in the means form", body_with(weights=[[1], [1]]), "weights"),
    ("steps in the means form", body_with(steps=3), "steps"),
    ("unknown field", body_with(count=[2, 6]), "count"),
    ("no form", {"eta": 0.1, "w": 10}, "counts/targets/microbatches"),
    ("two forms", body_with(targets=[[1]]), "counts/targets/microbatches"),
    ("means in the items form", items_with(means=[1, 3]), "means"),
    ("too many target ranks", items_with(targets=[[1]] * 65), "targets"),
    ("too many items", items_with(targets=[[1] * 5001, [2] * 5000]), "targets"),
    ("too many items in one rank", items_with(targets=[[1] * 10_001]), "targets"),
    ("target above maximum", items_with(targets=[[1e13]]), "targets"),
    ("target boolean", items_with(targets=[[True]]), "targets"),
    ("targets not nested", items_with(targets=[9, 9]), "targets"),
    ("no valid items", items_with(targets=[[], []]), "targets"),
    ("every item masked", items_with(weights=[[0, 0], [0] * 6]), "weights"),
    ("negative weight", items_with(weights=[[1, -1], [1] * 6]), "weights"),
    ("weights too short", items_with(weights=[[1], [1] * 6]), "weights"),
    ("weights for fewer ranks", items_with(weights=[[1, 1]]), "weights"),
    ("weights nested too deep", items_with(weights=[[[1], [1]], [[1]] * 6]), "weights"),
    ("weight boolean", items_with(weights=[[True, 1], [1] * 6]), "weights"),
    ("steps negative", items_with(steps=-1), "steps"),
    ("steps too many", items_with(steps=1001), "steps"),
    ("steps fractional", items_with(steps=2.5), "steps"),
    ("steps float", items_with(steps=2.0), "steps"),
    ("steps boolean", items_with(steps=True), "steps"),
    ("steps string", items_with(steps="5"), "steps"),
    ("rank without microbatches", window_with(microbatches=[[]]), "microbatches"),
    ("too many microbatch ranks", window_with(microbatches=[[[1]]] * 65), "microbatches"),
    ("too many microbatches", window_with(microbatches=[[[1]] * 65]), "microbatches"),
    (
        "too many window items",
        window_with(microbatches=[[[1] * 5001], [[1] * 5000]]),
        "microbatches",
    ),
    ("empty window", window_with(microbatches=[[[]], [[], []]]), "microbatches"),
    ("steps in the accumulation form", window_with(steps=3), "steps"),
    ("window weights per item", window_with(weights=[[1, 1], [1] * 6]), "weights"),
    (
        "window weights short",
        window_with(weights=[[[1, 1], [1] * 6], [[1, 1], [1] * 5]]),
        "weights",
    ),
    ("window all masked", window_with(weights=[[[0, 0], [0] * 6]] * 2), "weights"),
]


@pytest.mark.parametrize(
    ("body", "field"), [case[1:] for case in BAD_BODIES], ids=[case[0] for case in BAD_BODIES]
)
def test_gradient_bad_body_is_422_naming_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    assert_refused(post(client, body), field)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"targets": [[9, NaN]], "eta": 0.1, "w": 10}', "targets"),
        ('{"targets": [[9, 9]], "weights": [[1, Infinity]], "eta": 0.1, "w": 10}', "weights"),
        ('{"microbatches": [[[9, -Infinity]]], "eta": 0.1, "w": 10}', "microbatches"),
        ('{"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": NaN}', "w"),
        ('{"counts": [NaN], "targets": [[1]], "eta": 0.1, "w": 10}', "counts/targets"),
        ('{"counts": [2], "means": [1], "eta": 0.1, "w": 10, "x": NaN}', "x"),
    ],
)
def test_gradient_non_finite_anywhere_is_422(client: TestClient, text: str, field: str) -> None:
    assert_refused(post_raw(client, text), field)


@pytest.mark.parametrize("text", ["[1, 2]", '"counts"', "null", "3", ""])
def test_gradient_body_not_an_object_is_422(client: TestClient, text: str) -> None:
    response = post_raw(client, text)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][0] == "body"


def test_gradient_deeply_nested_body_is_422(client: TestClient) -> None:
    text = '{"counts": ' + "[" * 500 + "]" * 500 + ', "means": [1], "eta": 0.1, "w": 10}'
    assert_refused(post_raw(client, text), "counts")


def test_gradient_get_is_not_allowed(client: TestClient) -> None:
    assert client.get("/api/gradient").status_code == 405


def test_gradient_extremes_within_limits_stay_finite(client: TestClient) -> None:
    body = {"counts": [1e12] * 64, "means": [-1e12, 1e12] * 32, "eta": 1e6, "w": 1e12}
    response = post(client, body)
    assert response.status_code == 200
    assert response.json()["w_new"] == pytest.approx(1e12)


def test_gradient_diverging_trajectory_answers_finite_numbers(client: TestClient) -> None:
    response = post(client, items_with(targets=[[1e12, -1e12], [5e11]], eta=1e6, steps=1000))
    assert response.status_code == 200
    answer = response.json()
    path = answer["trajectory"]
    assert path["diverged"]
    assert path["steps"] < 1000
    assert any("diverges" in text for text in answer["warnings"])
    assert any("stop after step" in text for text in answer["warnings"])


def test_gradient_empty_rank_warns(client: TestClient) -> None:
    response = post(client, items_with(targets=[[9, 9], [], [7, 7, 7, 7, 7, 7]]))
    assert response.status_code == 200
    answer = response.json()
    assert answer["global_gradient"] == pytest.approx(2.5)
    assert answer["rank_mean_gradient"] == pytest.approx(4 / 3)
    assert answer["scale_factors"][1] == 0
    assert len(answer["warnings"]) == 1
    assert "rank 1 has no valid items" in answer["warnings"][0]


def test_gradient_openapi_has_an_example_per_form(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/api/gradient"]["post"]
    assert operation["tags"] == ["api"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    assert set(examples) == {"means", "items", "accumulation"}
    for example in examples.values():
        assert post(client, example["value"]).status_code == 200


@settings(max_examples=40, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.integers(-1000, 1000), st.sampled_from([0.0, 0.5, 1.0, 1.0, 3.0])),
        min_size=1,
        max_size=60,
    ),
    ranks=st.integers(min_value=1, max_value=64),
    data=st.data(),
)
def test_gradient_random_partitions_give_the_item_mean(
    client: TestClient, items: list[tuple[int, float]], ranks: int, data: st.DataObject
) -> None:
    if not any(weight for _, weight in items):
        items = [*items, (1, 1.0)]
    owner = data.draw(st.lists(st.integers(0, ranks - 1), min_size=len(items), max_size=len(items)))
    targets: list[list[int]] = [[] for _ in range(ranks)]
    weights: list[list[float]] = [[] for _ in range(ranks)]
    for (target, weight), rank in zip(items, owner, strict=True):
        targets[rank].append(target)
        weights[rank].append(weight)
    response = post(client, {"targets": targets, "weights": weights, "eta": 0.5, "w": 3})
    assert response.status_code == 200
    answer = response.json()
    total = sum(Fraction(x) for _, x in items)
    exact = sum(Fraction(x) * (3 - y) for y, x in items) / total
    assert answer["P"] == ranks
    assert answer["N"] == pytest.approx(float(total))
    assert answer["global_gradient"] == pytest.approx(float(exact), rel=1e-9, abs=1e-9)
    compensated = sum(answer["compensated_means"]) / ranks
    assert compensated == pytest.approx(float(exact), rel=1e-9, abs=1e-9)
    assert answer["w_new"] == pytest.approx(float(3 - Fraction(1, 2) * exact), abs=1e-9)


def test_gradient_subnormal_weight_is_422_not_500(client: TestClient) -> None:
    assert_refused(post(client, items_with(targets=[[1], [2]], weights=[[5e-324], [1]])), "weights")


def test_gradient_undecodable_body_is_400(client: TestClient) -> None:
    response = client.post(
        "/api/gradient", content=b"5\xff\xfew", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    responses = client.get("/openapi.json").json()["paths"]["/api/gradient"]["post"]["responses"]
    assert {"200", "400", "422"} <= set(responses)


# Without the confirmation's pool: loading the schema runs the app's lifespan, in every process
# that collects this module (the fuzzed operation never confirms).
openapi = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(Settings(confirm_enabled=False))
)


@pytest.mark.slow
@openapi.include(path="/api/gradient").parametrize()
@settings(max_examples=60, deadline=None)
def test_gradient_fuzzed_from_openapi(case: schemathesis.Case) -> None:
    """No 500s, and every answer matches the documented schema and status codes.

    Schema-valid bodies may still be refused: the cross-field rules (one form, matching
    lengths, N > 0) are not in the JSON schema, so that one check is left out.
    """
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
