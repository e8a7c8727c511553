"""POST /api/gradient through the real app: lesson numbers, every refusal, random partitions."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.schemas import LESSON_EXAMPLES

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
