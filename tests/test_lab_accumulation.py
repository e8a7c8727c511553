"""Gradient accumulation in the lab: microbatches cut from the items form, checked exactly."""

import re
from fractions import Fraction

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.lab import accumulation

HEAVY = (
    "targets=9,9,9,9,9,9,9,9;7,7,0,0,0,0,0,0&weights=1,1,1,1,1,1,1,1;1,1,0,0,0,0,0,0"
    "&eta=0.1&w=10&steps=30"
)


@pytest.mark.parametrize(
    ("length", "m", "sizes"),
    [(8, 2, [4, 4]), (6, 4, [2, 2, 1, 1]), (2, 3, [1, 1, 0]), (0, 2, [0, 0])],
)
def test_split_is_contiguous_and_even(length: int, m: int, sizes: list[int]) -> None:
    values = [float(v) for v in range(length)]
    pieces = accumulation.split(values, m)
    assert [len(p) for p in pieces] == sizes
    assert [v for p in pieces for v in p] == values


def figures(client: TestClient, query: str) -> dict[str, str]:
    page = BeautifulSoup(client.get(f"/?{query}").text, "html.parser")
    return {
        str(dd["data-value"]): dd.get_text(strip=True)
        for dd in page.select(".lab-accumulation [data-value]")
    }


def test_heavy_padding_in_two_microbatches(client: TestClient) -> None:
    # Rank 0: eight 9s at w = 10 (gradient 1) as 4 + 4; rank 1: two 7s (gradient 3) and six
    # padded positions as [7, 7, pad, pad] + [four pads], an empty microbatch.
    n = [[4, 4], [2, 0]]
    means = [[Fraction(1), Fraction(1)], [Fraction(3), Fraction(0)]]
    naive = sum(sum(row) / len(row) for row in means) / 2
    window = sum(
        c * g for rc, rg in zip(n, means, strict=True) for c, g in zip(rc, rg, strict=True)
    )
    window /= sum(map(sum, n))
    shown = figures(client, f"{HEAVY}&acc_m=2")
    assert Fraction(shown["acc-naive"]) == naive == Fraction(5, 4)
    assert Fraction(shown["acc-window"]) == window == Fraction(7, 5)
    assert Fraction(shown["acc-w-new-naive"]) == 10 - Fraction(1, 10) * naive
    assert Fraction(shown["acc-w-new-window"]) == 10 - Fraction(1, 10) * window


def test_the_window_gradient_is_the_labs_g_for_any_split(client: TestClient) -> None:
    for m in range(1, 9):
        page = BeautifulSoup(client.get(f"/?{HEAVY}&acc_m={m}").text, "html.parser")
        g = page.select_one('#lab-results [data-value="g"]')
        window = page.select_one('[data-value="acc-window"]')
        assert g is not None
        assert window is not None
        assert window.get_text(strip=True) == g.get_text(strip=True) == "1.4"


@pytest.mark.parametrize("typed", ["0", "9", "2.5", "two", ""])
def test_a_bad_microbatch_count_is_flagged_at_its_field(client: TestClient, typed: str) -> None:
    response = client.get(f"/?{HEAVY}&acc_m={typed}")
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    field = page.select_one("#lab-acc-m")
    assert field is not None
    assert field["aria-invalid"] == "true"
    message = page.select_one("#msg-lab-acc-m")
    assert message is not None
    assert "microbatches per rank M" in message.get_text()


def test_the_default_stays_out_of_the_address(client: TestClient) -> None:
    headers = {"HX-Request": "true"}
    url = client.get(f"/lab?{HEAVY}&acc_m=2", headers=headers).headers["X-Lab-Url"]
    assert "acc_m" not in url
    url = client.get(f"/lab?{HEAVY}&acc_m=3", headers=headers).headers["X-Lab-Url"]
    assert url.endswith("&acc_m=3")


def verdict(client: TestClient, query: str) -> str:
    page = BeautifulSoup(client.get(f"/?{query}").text, "html.parser")
    found = page.select_one(".lab-accumulation .lab-verdict")
    assert found is not None
    return " ".join(found.get_text(" ", strip=True).split())


def test_the_verdict_gives_both_gradients_and_why_they_differ(client: TestClient) -> None:
    # As above: naive 5/4, window 7/5; rank 1's second microbatch is empty.
    said = verdict(client, f"{HEAVY}&acc_m=2")
    match = re.fullmatch(
        r"The naive average gives (\S+) instead of (\S+) \((\S+) lower\): it weights each"
        r" microbatch by 1/\(P·Mᵣ\), not each item, and it counts each empty microbatch as a"
        r" mean of 0\. After the update w new is (\S+) instead of (\S+)\.",
        said,
    )
    assert match, said
    naive, window, lower, w_naive, w_window = (Fraction(x) for x in match.groups())
    assert (naive, window, lower) == (Fraction(5, 4), Fraction(7, 5), Fraction(3, 20))
    assert (w_naive, w_window) == (10 - naive / 10, 10 - window / 10)


def test_equal_means_agree_for_that_reason_not_for_equal_shares(client: TestClient) -> None:
    # Every item's gradient is 10 - 9 = 1, in microbatches of 2, 1 (rank 0) and 1, 1 (rank 1):
    # the counts are not in proportion to the naive weights, the means are all equal.
    query = "targets=9,9,9;9,9&eta=0.1&w=10&steps=30&acc_m=2"
    shown = figures(client, query)
    assert shown["acc-naive"] == shown["acc-window"] == "1"
    assert verdict(client, query) == (
        "Both schemes agree here: every microbatch has the same mean gradient, so any"
        " weighting of them gives that same mean."
    )
