"""POST /api/confirm on a real warm gloo pool (one pool for the module), against the engine."""

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.lab.compute import compute
from app.lab.state import GradientRequest
from tests.confirming import confirm

pytestmark = pytest.mark.distributed

LESSON = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}


def test_lesson_example_default_ddp_gives_the_rank_mean_on_every_rank(
    confirm_client: TestClient,
) -> None:
    answer = confirm(confirm_client, LESSON)
    assert answer["backend"] == "gloo"
    assert answer["world_size"] == 2
    assert answer["torch_version"].startswith("2.13.0")
    assert answer["counts"] == [2.0, 6.0]
    assert answer["total"] == 8.0
    assert answer["ddp_default"]["grad"] == [2.0, 2.0]
    assert answer["ddp_default"]["w_new"] == pytest.approx([9.8, 9.8], rel=1e-15)
    for run in ("compensated", "comm_hook"):
        assert answer[run]["grad"] == [2.5, 2.5]
        assert answer[run]["w_new"] == [9.75, 9.75]
        assert answer[run]["matches_reference"] is True
    assert answer["reference"] == {
        "grad": 2.5,
        "w_new": 9.75,
        "engine_grad": 2.5,
        "engine_w_new": 9.75,
        "matches_engine": True,
    }
    # The lesson's third question: replicas agree, yet the default run has the wrong objective.
    assert answer["replicas_agree"] is True
    assert answer["ddp_default"]["matches_reference"] is False
    assert answer["engine_agrees"] is True


def test_identical_request_is_answered_from_the_cache(confirm_client: TestClient) -> None:
    body = {"counts": [3, 1], "means": [2, -1], "eta": 0.5, "w": 1}
    first = confirm(confirm_client, body)
    second = confirm(confirm_client, body)
    assert first["cached"] is False
    assert second["cached"] is True
    assert second["comm_hook"] == first["comm_hook"]


def test_items_with_an_empty_rank_and_masked_items(confirm_client: TestClient) -> None:
    body = {
        "targets": [[9, 9, 4], [], [7, 7, 7, 7, 7, 7]],
        "weights": [[1, 1, 0], [], [1, 1, 1, 1, 1, 0.5]],
        "eta": 0.1,
        "w": 10,
    }
    answer = confirm(confirm_client, body)
    engine = compute(GradientRequest.model_validate(body))
    assert answer["counts"] == [2.0, 0.0, 5.5]
    # The empty rank still joins the all-reduce with a zero gradient: DDP divides by P = 3.
    assert answer["ddp_default"]["grad"] == pytest.approx([engine.rank_mean_gradient] * 3)
    assert answer["comm_hook"]["grad"] == pytest.approx([engine.global_gradient] * 3)
    assert answer["engine_agrees"]
    assert answer["replicas_agree"]


def test_accumulation_under_no_sync(confirm_client: TestClient) -> None:
    body = {
        "microbatches": [[[9, 9], [7, 7, 7, 7, 7, 7]], [[5], [], [8, 8, 8]]],
        "eta": 0.1,
        "w": 10,
    }
    answer = confirm(confirm_client, body)
    window = compute(GradientRequest.model_validate(body)).accumulation
    assert window is not None
    assert answer["form"] == "accumulation"
    assert answer["ddp_default"]["grad"] == pytest.approx([window.naive_gradient] * 2)
    assert answer["compensated"]["grad"] == pytest.approx([window.window_gradient] * 2)
    assert answer["comm_hook"]["w_new"] == pytest.approx([window.w_new_window] * 2)
    assert window.naive_gradient != pytest.approx(window.window_gradient)
    assert answer["engine_agrees"]
    assert answer["replicas_agree"]


def test_comm_hook_divides_by_n_not_p(confirm_client: TestClient) -> None:
    body = {"counts": [1, 1, 1, 5], "means": [4, 4, 4, 0], "eta": 1, "w": 0}
    answer = confirm(confirm_client, body)
    # Σ nᵣ ḡᵣ = 12 over N = 8 items; DDP's own division by P = 4 would give 12 / 4 = 3.
    assert answer["comm_hook"]["grad"] == [1.5] * 4
    assert answer["ddp_default"]["grad"] == [3.0] * 4
    assert answer["comm_hook"]["w_new"] == [-1.5] * 4


def test_fractional_counts_run_as_weighted_items(confirm_client: TestClient) -> None:
    answer = confirm(confirm_client, {"counts": [0.5, 2.25], "means": [1, 3], "eta": 0.1, "w": 2})
    assert answer["counts"] == [0.5, 2.25]
    assert answer["engine_agrees"]
    assert answer["replicas_agree"]
    assert "not all whole numbers" in answer["notes"][0]


@settings(max_examples=12, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=8).filter(
        lambda counts: sum(counts) > 0
    ),
    data=st.data(),
)
def test_random_partitions_match_the_engine(
    confirm_client: TestClient, counts: list[int], data: st.DataObject
) -> None:
    means = data.draw(st.lists(st.integers(-50, 50), min_size=len(counts), max_size=len(counts)))
    eta = data.draw(st.sampled_from([0.01, 0.1, 0.5, 1.0]))
    w = data.draw(st.integers(-20, 20))
    body = {"counts": counts, "means": means, "eta": eta, "w": w}
    answer = confirm(confirm_client, body)
    engine = compute(GradientRequest.model_validate(body))
    assert answer["world_size"] == len(counts)
    assert answer["replicas_agree"], answer
    assert answer["engine_agrees"], answer
    assert answer["compensated"]["grad"][0] == pytest.approx(engine.global_gradient, abs=1e-9)
    assert answer["ddp_default"]["grad"][0] == pytest.approx(engine.rank_mean_gradient, abs=1e-9)


def test_more_ranks_than_the_pool_is_a_422_naming_the_field(confirm_client: TestClient) -> None:
    response = confirm_client.post(
        "/api/confirm", json={"targets": [[1.0]] * 9, "eta": 0.1, "w": 0}
    )
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["loc"] == ["body", "targets"]
    assert "1 to 8 ranks" in detail["msg"]


def test_invalid_body_is_a_422_before_any_job(confirm_client: TestClient) -> None:
    response = confirm_client.post(
        "/api/confirm", json={"counts": [0, 0], "means": [1, 2], "eta": 0.1, "w": 0}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "counts"]
    response = confirm_client.post(
        "/api/confirm", json={"counts": [1], "means": [1], "eta": -1, "w": 0}
    )
    assert response.status_code == 422
    assert "eta" in response.json()["detail"][0]["loc"]


def test_status_reports_the_ready_pool(confirm_client: TestClient) -> None:
    confirm(confirm_client, LESSON)
    status = confirm_client.get("/api/confirm/status").json()
    assert status["state"] == "ready"
    assert status["role"] == "owner"
    assert status["world_size"] == 8
    assert status["torch_version"].startswith("2.13.0")


def test_openapi_documents_the_response_and_the_429_and_503(confirm_client: TestClient) -> None:
    operation = confirm_client.get("/openapi.json").json()["paths"]["/api/confirm"]["post"]
    responses = operation["responses"]
    assert responses["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ConfirmResponse"
    )
    assert {"422", "429", "503"} <= set(responses)
    assert "Retry-After" in responses["429"]["headers"]
    assert responses["503"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ConfirmProblem"
    )


def test_lab_panel_without_javascript_renders_the_whole_page(confirm_client: TestClient) -> None:
    form = {"counts": ["2", "6"], "means": ["1", "3"], "eta": "0.1", "w": "10", "P": "2"}
    response = confirm_client.post("/lab/confirm", data=form)
    assert response.status_code == 200
    page = BeautifulSoup(response.text, "html.parser")
    assert page.select_one("main") is not None, "the whole lesson page comes back"
    table = page.select_one("#confirm table")
    assert (
        table.select_one('tr[data-rank="1"] td[data-run="ddp_default"] .confirm-grad').text == "g 2"
    )
    assert (
        table.select_one('tr[data-rank="0"] td[data-run="comm_hook"] .confirm-w').text == "w 9.75"
    )
    verdicts = table.select_one('tr[data-row="matches-reference"]')
    assert verdicts.select_one('td[data-run="ddp_default"]').text == "no"
    assert verdicts.select_one('td[data-run="compensated"]').text == "yes"
    # The lab keeps the posted state.
    assert page.select_one("#lab-count-1")["value"] == "6"


def test_lab_panel_for_htmx_is_the_panel_alone(confirm_client: TestClient) -> None:
    form = {"targets": "9,9;7,7,7,7,7,7;", "eta": "0.1", "w": "10", "steps": "30"}
    response = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "HX-Request" in response.headers["Vary"]
    panel = BeautifulSoup(response.text, "html.parser")
    assert panel.select_one("main") is None
    assert len(panel.select("#confirm tbody tr[data-rank]")) == 3
    assert len(panel.select("#confirm thead th[data-run]")) == 3
    assert "replica" in panel.select_one(".confirm-verdict").text


def test_lab_panel_with_invalid_input_says_so(confirm_client: TestClient) -> None:
    form = {"counts": ["2", "6"], "means": ["1", "x"], "eta": "0.1", "w": "10"}
    response = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    assert response.status_code == 422
    error = BeautifulSoup(response.text, "html.parser").select_one("#confirm .confirm-error")
    assert error is not None
    assert "Fix the lab's inputs" in error.text
