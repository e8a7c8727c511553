"""POST /api/gradient answers byte for byte as captured before the engine's results were modelled
once (tests/fixtures/gradient_answers.json: every form, trajectories, warnings and refusals), and
each captured answer's numbers as the definitions give them in exact fractions."""

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

CASES = json.loads((Path(__file__).parent / "fixtures" / "gradient_answers.json").read_text())


def exact(value: float) -> Fraction:
    """A number as written (``0.1`` is one tenth), the way the API reads its inputs."""
    return Fraction(repr(float(value)))


@pytest.mark.parametrize("case", CASES, ids=[case["body"][:60] for case in CASES])
def test_gradient_answer_is_unchanged(client: TestClient, case: dict[str, Any]) -> None:
    response = client.post(
        "/api/gradient", content=case["body"], headers={"content-type": "application/json"}
    )
    assert (response.status_code, response.text) == (case["status"], case["answer"])


@pytest.mark.parametrize("case", [case for case in CASES if case["status"] == 200])
def test_captured_answer_holds_the_definitions(case: dict[str, Any]) -> None:
    """g = Σ nᵣ ḡᵣ / N against (1/P) Σ ḡᵣ, both steps, P·nᵣ/N, 1/N and 1/(P·nᵣ), rounded once."""
    answer = json.loads(case["answer"])
    body = json.loads(case["body"])
    n = [exact(x) for x in answer["counts"]]
    means = [exact(x) for x in answer["means"]]
    eta, w = exact(body["eta"]), exact(body["w"])
    ranks, total = len(n), sum(n)
    g = sum(x * m for x, m in zip(n, means, strict=True)) / total
    plain = sum(means) / ranks
    assert answer["P"] == ranks
    assert answer["N"] == float(total)
    assert answer["global_gradient"] == float(g)
    assert answer["rank_mean_gradient"] == float(plain)
    assert answer["w_new"] == float(w - eta * g)
    assert answer["w_new_rank_mean"] == float(w - eta * plain)
    assert answer["w_new_difference"] == float(eta * (g - plain))
    assert answer["scale_factors"] == [float(ranks * x / total) for x in n]
    assert answer["compensated_means"] == [
        float(ranks * x * m / total) for x, m in zip(n, means, strict=True)
    ]
    assert answer["influence_global"] == [float(1 / total) if x else 0.0 for x in n]
    assert answer["influence_rank_mean"] == [float(1 / (ranks * x)) if x else 0.0 for x in n]
    if "targets" in body:  # nᵣ = Σ weights, ḡᵣ = Σ weight·(w - y) / nᵣ
        weights = body.get("weights") or [[1] * len(y) for y in body["targets"]]
        for r, (y, weight) in enumerate(zip(body["targets"], weights, strict=True)):
            count = sum(map(exact, weight))
            weighted = sum(exact(a) * (w - exact(b)) for a, b in zip(weight, y, strict=True))
            assert n[r] == count
            assert answer["means"][r] == pytest.approx(float(weighted / count) if count else 0.0)
    path = answer["trajectory"]
    if path is not None:
        assert path["w_global"][0] == path["w_rank_mean"][0] == float(w)
        if path["steps"]:  # the first step is the answer's
            assert path["w_global"][1] == pytest.approx(answer["w_new"])
            assert path["w_rank_mean"][1] == pytest.approx(answer["w_new_rank_mean"])
        assert len(path["w_global"]) == len(path["loss_global"]) == path["steps"] + 1
    window = answer["accumulation"]
    if window is not None:
        batches = [[exact(x) for x in row] for row in window["counts"]]
        batch_means = [[exact(x) for x in row] for row in window["means"]]
        naive = sum(sum(row) / len(row) for row in batch_means) / ranks
        assert window["microbatch_counts"] == [len(row) for row in batches]
        assert window["naive_gradient"] == float(naive)
        assert window["window_gradient"] == answer["global_gradient"]
        assert window["w_new_naive"] == float(w - eta * naive)
        assert window["scale_factors"] == [
            [float(ranks * len(row) * x / total) for x in row] for row in batches
        ]
