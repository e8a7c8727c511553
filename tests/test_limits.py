"""Request limits before any parsing: URL (414), body (413), short echoes. (A slow body's 408 is
the server protocol's: tests/test_server.py.)"""

import json
import socket
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.limits import ECHO_CHARS, MAX_ERRORS_LISTED, short
from bench._servers import stop
from tests.conftest import LiveServer, start_server

URL_LIMIT = 1_024
BODY_LIMIT = 4_096
LESSON_BODY = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}


@pytest.fixture(scope="module")
def small() -> Iterator[TestClient]:
    """The app with small limits, so tests can stand at, just under and just over them."""
    settings = Settings(confirm_enabled=False, max_url_bytes=URL_LIMIT, max_body_bytes=BODY_LIMIT)
    with TestClient(create_app(settings)) as client:
        yield client


def url_of_size(size: int) -> str:
    """``/healthz?pad=xxx…`` whose path plus query string is exactly ``size`` bytes."""
    base = "/healthz"
    query = "pad="
    return f"{base}?{query}{'x' * (size - len(base) - len(query))}"


@pytest.mark.parametrize(
    ("size", "status"), [(URL_LIMIT - 1, 200), (URL_LIMIT, 200), (URL_LIMIT + 1, 414)]
)
def test_url_limit_at_under_and_over(small: TestClient, size: int, status: int) -> None:
    response = small.get(url_of_size(size))
    assert response.status_code == status
    if status == 414:
        assert f"{size} bytes" in response.text
        assert "ATLAS_MAX_URL_BYTES" in response.text
        assert "xxxx" not in response.text, "the refusal echoed the URL"
        assert response.headers["x-content-type-options"] == "nosniff"


def gradient_body(size: int) -> bytes:
    """The lesson's JSON body padded with spaces to exactly ``size`` bytes (still valid JSON)."""
    body = json.dumps(LESSON_BODY).encode()
    return body + b" " * (size - len(body))


@pytest.mark.parametrize(
    ("size", "status"), [(BODY_LIMIT - 1, 200), (BODY_LIMIT, 200), (BODY_LIMIT + 1, 413)]
)
def test_body_limit_with_content_length(small: TestClient, size: int, status: int) -> None:
    response = small.post(
        "/api/gradient", content=gradient_body(size), headers={"content-type": "application/json"}
    )
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["global_gradient"] == 2.5
    else:
        assert f"{size} bytes" in response.text
        assert "ATLAS_MAX_BODY_BYTES" in response.text


@pytest.mark.parametrize(
    ("size", "status"), [(BODY_LIMIT - 1, 200), (BODY_LIMIT, 200), (BODY_LIMIT + 1, 413)]
)
def test_body_limit_when_streamed_without_length(small: TestClient, size: int, status: int) -> None:
    body = gradient_body(size)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = small.post(
        "/api/gradient", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["rank_mean_gradient"] == 2.0


def test_form_body_limit_applies_to_the_quiz(small: TestClient) -> None:
    response = small.post("/quiz", data={"question": "q", "choice": "1" * BODY_LIMIT})
    assert response.status_code == 413


def test_422_echoes_only_a_short_prefix(client: TestClient) -> None:
    huge = "7" * 300_000
    response = client.post("/api/gradient", json={**LESSON_BODY, "counts": huge})
    assert response.status_code == 422
    assert len(response.content) < 4_000, f"a {len(response.content)} byte 422"
    echoed = [item.get("input") for item in response.json()["detail"]]
    assert short(huge) in echoed
    assert huge[: ECHO_CHARS + 1] not in response.text


def test_422_echoes_a_huge_number_as_a_short_prefix(client: TestClient) -> None:
    digits = "9" * 4_000
    body = f'{{"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": {digits}}}'
    response = client.post(
        "/api/gradient", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "w"]
    assert error["input"] == short(digits)
    assert len(response.content) < 400, f"a {len(response.content)} byte 422"


def test_422_echoes_a_number_that_fits_as_it_is(client: TestClient) -> None:
    body = {**LESSON_BODY, "eta": 10**30}
    response = client.post("/api/gradient", json=body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["input"] == 10**30


def test_422_lists_a_bounded_number_of_errors(client: TestClient) -> None:
    body = {"targets": [["bad"] * 5_000], "eta": 0.1, "w": 10}
    response = client.post("/api/gradient", json=body)
    assert response.status_code == 422
    payload = response.json()
    assert len(payload["detail"]) == MAX_ERRORS_LISTED
    assert payload["errors_total"] >= 5_000
    assert len(response.content) < 20_000


def test_small_errors_still_echo_their_input(client: TestClient) -> None:
    response = client.post("/api/gradient", json={**LESSON_BODY, "eta": "fast"})
    assert response.status_code == 422
    assert {"input": "fast"}.items() <= response.json()["detail"][0].items()


def test_short_cuts_long_text() -> None:
    assert short("abc") == "abc"
    cut = short("a" * 1000)
    assert cut.startswith("a" * ECHO_CHARS + "…")
    assert "1000 characters" in cut


# ---- a real uvicorn: the body arrives over a socket ------------------------------------------


@pytest.fixture(scope="module")
def limited() -> Iterator[LiveServer]:
    server = start_server(
        {
            "ATLAS_CONFIRM_ENABLED": "false",
            "ATLAS_MAX_BODY_BYTES": str(BODY_LIMIT),
        }
    )
    try:
        yield server
    finally:
        stop(server)


def raw_exchange(server: LiveServer, head: bytes, body: bytes, wait: float) -> bytes:
    """Send ``head + body`` and read the answer until the server closes (a refusal closes)."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait + 5) as sock:
        sock.sendall(head + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


@pytest.mark.server
def test_declared_oversize_body_refused_before_it_is_sent(limited: LiveServer) -> None:
    head = (
        b"POST /api/gradient HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        b"Content-Length: 20000000\r\n\r\n"
    )
    # No body is ever sent: a server that waited for it would never answer (the socket's
    # timeout fails the test), so the 413 came from the declared length alone.
    answer = raw_exchange(limited, head, b"", wait=0.5)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
