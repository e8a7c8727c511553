"""The confirmation's verdicts on real gloo DDP runs, against an exact Fraction reference.

``matches_reference`` must be true exactly when a run's gradient is the global item mean (on
the gradient's own scale: a huge w or a tiny η cannot hide 2.0 against 2.5); the objective of
DDP's default is named as ``/api/gradient`` names it; the panel's sentence follows the flags;
and the result cache answers only an identical request.
"""

from fractions import Fraction
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.confirming import confirm

pytestmark = pytest.mark.distributed

LESSON = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}


def exact_means(counts: list[float], means: list[float]) -> tuple[Fraction, Fraction]:
    """Global item mean and plain rank mean, exactly (an empty rank counts 0 in the latter)."""
    n = [Fraction(c) for c in counts]
    m = [Fraction(x) if c else Fraction(0) for c, x in zip(counts, means, strict=True)]
    total = sum(n, Fraction(0))
    return sum((a * b for a, b in zip(n, m, strict=True)), Fraction(0)) / total, sum(
        m, Fraction(0)
    ) / len(m)


@pytest.mark.parametrize(
    ("w", "eta"),
    [(1e12, 0.1), (10.0, 1e-9), (1e12, 1e-9), (-1e12, 1e6)],
)
def test_default_ddp_never_matches_the_reference_when_its_gradient_differs(
    confirm_client: TestClient, w: float, eta: float
) -> None:
    answer = confirm(confirm_client, {**LESSON, "w": w, "eta": eta})
    assert answer["ddp_default"]["grad"] == pytest.approx([2.0, 2.0], abs=1e-3)
    assert answer["compensated"]["grad"] == pytest.approx([2.5, 2.5], abs=1e-3)
    assert answer["ddp_default"]["matches_reference"] is False
    assert answer["compensated"]["matches_reference"] is True
    assert answer["comm_hook"]["matches_reference"] is True
    assert answer["engine_agrees"] is True
    assert answer["schemes_agree"] is False
    assert answer["agreement"] == "unequal counts"
    # The tolerance is on the gradient's own scale (|w - y| is 1 or 3 here), stated.
    assert answer["gradient_scale"] == 3.0
    assert answer["gradient_tolerance"] == pytest.approx(3e-9)
    assert answer["gradient_tolerance"] < 0.5


def test_equal_counts_make_default_ddp_match_the_reference(confirm_client: TestClient) -> None:
    answer = confirm(confirm_client, {"counts": [4, 4], "means": [1, 3], "eta": 1e-9, "w": 1e12})
    assert answer["ddp_default"]["matches_reference"] is True
    assert answer["schemes_agree"] is True
    assert answer["agreement"] == "proportional counts"


def test_accumulation_names_the_naive_microbatch_mean_as_the_api_does(
    confirm_client: TestClient,
) -> None:
    body = {"microbatches": [[[9, 9]], [[7, 7, 7], [7, 7, 7, 7, 5]]], "eta": 0.1, "w": 10}
    answer = confirm(confirm_client, body)
    gradient = confirm_client.post("/api/gradient", json=body).json()
    default = answer["ddp_default"]
    assert default["objective"] == "naive microbatch mean"
    assert default["engine_field"] == "naive_gradient"
    assert default["engine_grad"] == gradient["accumulation"]["naive_gradient"]
    assert default["engine_grad"] != gradient["rank_mean_gradient"]
    assert default["grad"] == pytest.approx([default["engine_grad"]] * 2, rel=1e-12)
    assert answer["compensated"]["engine_field"] == "global_gradient"
    assert answer["compensated"]["engine_grad"] == gradient["global_gradient"]
    assert default["matches_reference"] is False


def test_panel_verdict_names_only_the_runs_that_match(confirm_client: TestClient) -> None:
    form = {"counts": ["2", "6"], "means": ["1", "3"], "eta": "0.1", "w": "10", "P": "2"}
    differs = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    text = BeautifulSoup(differs.text, "html.parser").select_one(".confirm-verdict").text
    assert "only the compensated and comm-hook runs match" in text
    assert "2 instead of 2.5" in text
    assert "equal to the global item mean" not in text
    form = {**form, "counts": ["4", "4"]}
    agrees = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    text = BeautifulSoup(agrees.text, "html.parser").select_one(".confirm-verdict").text
    assert "all three runs match" in text
    assert "every rank has the same count" in text
    assert "only the compensated" not in text
    form = {**form, "counts": ["2", "6"], "means": ["3", "3"]}
    means = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    text = BeautifulSoup(means.text, "html.parser").select_one(".confirm-verdict").text
    assert "all three runs match" in text
    assert "same mean gradient" in text
    assert "same count" not in text


def test_large_w_panel_says_default_ddp_does_not_match(confirm_client: TestClient) -> None:
    form = {"counts": ["2", "6"], "means": ["1", "3"], "eta": "1e-9", "w": "1000000", "P": "2"}
    response = confirm_client.post("/lab/confirm", data=form, headers={"HX-Request": "true"})
    panel = BeautifulSoup(response.text, "html.parser")
    row = panel.select_one('tr[data-row="matches-reference"]')
    assert row.select_one('td[data-run="ddp_default"]').text == "no"
    assert (
        "only the compensated and comm-hook runs match" in panel.select_one(".confirm-verdict").text
    )


@pytest.mark.parametrize(
    "change",
    [
        {"counts": [3, 6]},
        {"means": [1, 4]},
        {"eta": 0.2},
        {"w": 11},
        "items",
    ],
)
def test_cache_answers_only_an_identical_request(
    confirm_client: TestClient, change: dict[str, Any] | str
) -> None:
    base = {"counts": [2, 6], "means": [1, 3], "eta": 0.125, "w": 12}
    first = confirm(confirm_client, base)
    again = confirm(confirm_client, base)
    assert again["cached"] is True
    assert again["ddp_default"] == first["ddp_default"]
    if change == "items":
        # The same items as the means form builds (targets w - ḡᵣ), sent as the items form.
        other = {"targets": [[11, 11], [9] * 6], "eta": 0.125, "w": 12}
    else:
        assert isinstance(change, dict)
        other = {**base, **change}
    answer = confirm(confirm_client, other)
    assert answer["cached"] is False, other
    global_mean, _ = exact_means(
        other.get("counts", [2, 6]),
        other.get("means", [1, 3]),
    )
    if change != "items":
        assert answer["compensated"]["grad"][0] == pytest.approx(float(global_mean), rel=1e-12)


means_st = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 2, 3, 4, 6, 2.5]),
        st.sampled_from([-3.0, -1.0, 0.0, 0.5, 1.0, 3.0, 7.0]),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ranks=means_st,
    w=st.sampled_from([0.0, 10.0, 1e6, 1e12]),
    eta=st.sampled_from([1e-9, 0.1, 1.0]),
)
def test_generated_runs_match_the_reference_exactly_when_the_gradients_agree(
    confirm_client: TestClient, ranks: list[tuple[float, float]], w: float, eta: float
) -> None:
    counts = [c for c, _ in ranks]
    means = [m for _, m in ranks]
    if not any(counts):
        counts[0] = 1
    answer = confirm(confirm_client, {"counts": counts, "means": means, "eta": eta, "w": w})
    assert answer["engine_agrees"], answer
    global_mean, rank_mean = exact_means(counts, means)
    # The job's items are w - ḡᵣ: exact for these values, so the exact means are the run's.
    assert answer["ddp_default"]["matches_reference"] is (global_mean == rank_mean), answer
    assert answer["schemes_agree"] is (global_mean == rank_mean)
    assert answer["compensated"]["matches_reference"] is True
    assert answer["comm_hook"]["matches_reference"] is True
