"""Rank, item and microbatch limits: at, just under and just over each, in the lab's URL and form
and in the JSON API; an oversized state is refused quickly with a short answer naming the field."""

import gc
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.lab.state import MAX_ITEMS, MAX_MICROBATCHES, MAX_RANKS
from app.main import create_app
from app.settings import Settings

HX = {"HX-Request": "true"}
COMMON = "&eta=0.1&w=10"


@pytest.fixture(scope="module")
def web() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        yield client


def means_query(ranks: int, means: int | None = None) -> str:
    shown = ranks if means is None else means
    return f"counts={','.join(['2'] * ranks)}&means={','.join(['1'] * shown)}{COMMON}"


def lab_errors(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    return [node.get_text(" ", strip=True) for node in soup.select("[data-field]")]


@pytest.mark.parametrize(
    ("ranks", "status"), [(MAX_RANKS - 1, 200), (MAX_RANKS, 200), (MAX_RANKS + 1, 422)]
)
def test_lab_rank_limit_at_under_and_over(web: TestClient, ranks: int, status: int) -> None:
    response = web.get(f"/lab?{means_query(ranks)}", headers=HX)
    assert response.status_code == status
    if status == 422:
        (error,) = lab_errors(response.text)
        assert error.startswith("counts")
        assert f"at most {MAX_RANKS} ranks" in error
        assert f"the request gives {ranks}" in error
        assert "lesson's example instead" in error


def test_an_oversized_lab_url_is_refused_quickly_and_shortly(web: TestClient) -> None:
    """8,000 ranks (a 16 KB URL, about the most the URL limit lets through) cost about what the
    lesson's own two ranks cost: nothing is split per rank or rendered."""
    lesson, huge = means_query(2), means_query(8_000, means=2)
    assert len(huge) < Settings().max_url_bytes

    def timed(query: str, headers: dict[str, str]) -> float:
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            web.get(f"/?{query}", headers=headers)
            best = min(best, time.perf_counter() - started)
        return best

    for headers in ({}, HX):
        floor, oversized = timed(lesson, headers), timed(huge, headers)
        assert oversized < 3 * floor + 0.005, (headers, oversized, floor)
    page = web.get(f"/?{huge}")
    assert page.status_code == 422
    assert len(page.content) < 2 * len(web.get(f"/?{lesson}").content)
    fragment = web.get(f"/lab?{huge}", headers=HX)
    assert len(fragment.content) < 4_000
    assert "2,2,2,2,2" not in page.text, "the refused state was echoed"


def test_lab_items_limit_in_a_posted_form(web: TestClient) -> None:
    """A form body can carry more than a URL: items are counted before anything is split."""
    for items, refused in ((MAX_ITEMS, False), (MAX_ITEMS + 1, True)):
        first = ",".join(["1"] * (items - 1))
        form = {"targets": f"{first};1", "eta": "0.1", "w": "10", "steps": "1"}
        response = web.post("/lab/confirm", data=form, headers=HX)
        text = response.text
        if refused:
            assert response.status_code == 422
            assert len(response.content) < 4_000
            # Without htmx the whole page comes back, the message at the targets field.
            page = web.post("/lab/confirm", data=form)
            assert page.status_code == 422
            errors = lab_errors(page.text)
            assert any(e.startswith("targets") and "at most" in e for e in errors), errors
            assert ",".join(["1"] * 100) not in page.text, "the refused state was echoed"
        else:
            # Valid: it goes on to the confirmation, which is off here.
            assert "items in all" not in text
            assert response.status_code == 503


def api(web: TestClient, body: dict[str, Any]) -> Any:
    return web.post("/api/gradient", json={**body, "eta": 0.1, "w": 10})


@pytest.mark.parametrize(
    ("ranks", "status"), [(MAX_RANKS - 1, 200), (MAX_RANKS, 200), (MAX_RANKS + 1, 422)]
)
def test_api_rank_limit(web: TestClient, ranks: int, status: int) -> None:
    response = api(web, {"counts": [2] * ranks, "means": [1] * ranks})
    assert response.status_code == status
    if status == 422:
        assert response.json()["detail"][0]["loc"] == ["body", "counts"]


@pytest.mark.parametrize(
    ("items", "status"), [(MAX_ITEMS - 1, 200), (MAX_ITEMS, 200), (MAX_ITEMS + 1, 422)]
)
def test_api_items_limit(web: TestClient, items: int, status: int) -> None:
    half = items // 2
    response = api(web, {"targets": [[9.0] * half, [7.0] * (items - half)]})
    assert response.status_code == status
    if status == 422:
        detail = response.json()["detail"][0]
        assert detail["loc"] == ["body", "targets"]
        assert f"at most {MAX_ITEMS} items" in detail["msg"]


@pytest.mark.parametrize(
    ("batches", "status"),
    [(MAX_MICROBATCHES - 1, 200), (MAX_MICROBATCHES, 200), (MAX_MICROBATCHES + 1, 422)],
)
def test_api_microbatch_limit(web: TestClient, batches: int, status: int) -> None:
    response = api(web, {"microbatches": [[[9.0]] * batches, [[7.0]]]})
    assert response.status_code == status
    if status == 422:
        assert response.json()["detail"][0]["loc"] == ["body", "microbatches"]


def test_api_huge_rank_list_is_refused_before_its_items_are_read(web: TestClient) -> None:
    """100,000 ranks of one item each: refused on the list's length, in about the time it takes
    to parse the JSON, with an answer of a few hundred bytes."""
    body = json.dumps({"targets": [[1.0]] * 100_000, "eta": 0.1, "w": 10})
    answer: list[Any] = []
    # The rest of the session's objects frozen out of the collector: a full collection walks the
    # whole heap, which in a full run (browsers, servers, classes) is what the timing would show.
    gc.collect()
    gc.freeze()
    try:
        floor = min(_timed(lambda: json.loads(body)) for _ in range(3))
        took = min(
            _timed(
                lambda: answer.append(
                    web.post(
                        "/api/gradient", content=body, headers={"content-type": "application/json"}
                    )
                )
            )
            for _ in range(3)
        )
    finally:
        gc.unfreeze()
    response = answer[-1]
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "targets"]
    assert len(response.content) < 1_000
    assert took < 6 * floor + 0.05, (took, floor)


def _timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def test_every_operation_that_takes_a_body_documents_the_refusal_it_gets(web: TestClient) -> None:
    """A body over ATLAS_MAX_BODY_BYTES is refused with 413 before anything parses it, on every
    operation that takes one, and each says so in OpenAPI (with the 408 of a stalled body and the
    400 of an undecodable one): a client generated from the schema knows every answer."""
    schema = web.app.openapi()  # type: ignore[attr-defined]
    operations = [
        (method, path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    ]
    assert {("post", "/api/gradient"), ("post", "/api/confirm"), ("post", "/quiz")} <= set(
        operations
    )
    too_large = b"[" + b"0," * (Settings().max_body_bytes // 2) + b"0]"
    for method, path in operations:
        documented = schema["paths"][path][method]["responses"]
        assert {"400", "408", "413"} <= set(documented), (method, path)
        answer = web.request(
            method, path, content=too_large, headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 413, (method, path)
        assert "ATLAS_MAX_BODY_BYTES" in answer.text
