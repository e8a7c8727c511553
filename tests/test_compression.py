"""gzip as a client sees it (Starlette's GZipMiddleware, as app.main sets it): pages, panes and
text assets compressed, with Vary; small answers, fonts, partial content and answers a client does
not accept gzip for as they are; and the live class's Server-Sent Events, through a real uvicorn,
neither compressed nor held back."""

import asyncio
import gzip
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from bench._http import TLS
from bench._servers import Server, free_port, launch, stop
from tests.conftest import INSTRUCTOR_PASSWORD
from tests.test_live import questions

FONT = "/static/vendor/stix-two-math/STIXTwoMath-Regular.woff2"
CSS = "/static/css/site.css"
PANE = "/lab?counts=2,6,3&means=1,3,-2&eta=0.1&w=10"
PANE_HEADERS = {"HX-Request": "true", "HX-Target": "lab-results"}


def raw(
    client: TestClient, path: str, accept: str = "gzip", **headers: str
) -> tuple[httpx.Headers, bytes]:
    """The answer's headers and its bytes as they came over the wire (not decoded)."""
    sent = {"Accept-Encoding": accept, **headers}
    with client.stream("GET", path, headers=sent) as answer:
        return answer.headers, b"".join(answer.iter_raw())


@pytest.mark.parametrize(("path", "headers"), [("/", {}), (CSS, {}), (PANE, PANE_HEADERS)])
def test_text_is_compressed_and_decompresses_to_the_plain_answer(
    client: TestClient, path: str, headers: dict[str, str]
) -> None:
    zipped_headers, zipped = raw(client, path, "gzip, deflate, br, zstd", **headers)
    plain_headers, plain = raw(client, path, "identity", **headers)
    assert zipped_headers["content-encoding"] == "gzip"
    assert zipped[:3] == b"\x1f\x8b\x08"
    assert gzip.decompress(zipped) == plain
    assert int(zipped_headers["content-length"]) == len(zipped) < len(plain) / 2
    assert "content-encoding" not in plain_headers
    # Caches keep the two encodings apart: both answers name Accept-Encoding in Vary.
    for answer in (zipped_headers, plain_headers):
        assert "Accept-Encoding" in answer["vary"]


def test_the_pane_keeps_its_own_vary(client: TestClient) -> None:
    headers, _ = raw(client, PANE, **PANE_HEADERS)
    assert headers["vary"] == "HX-Request, HX-Target, Accept-Encoding"


def test_a_small_answer_is_sent_as_it_is(client: TestClient) -> None:
    headers, body = raw(client, "/healthz")
    assert len(body) < 500
    assert "content-encoding" not in headers
    assert int(headers["content-length"]) == len(body)


def test_a_font_is_compressed_already_and_sent_as_it_is(client: TestClient) -> None:
    headers, body = raw(client, FONT)
    assert "content-encoding" not in headers
    assert body[:4] == b"wOF2"
    assert int(headers["content-length"]) == len(body) > 500


def test_partial_content_is_the_bytes_asked_for(client: TestClient) -> None:
    _, whole = raw(client, CSS, "identity")
    headers, part = raw(client, CSS, Range="bytes=0-999")
    assert "content-encoding" not in headers
    assert part == whole[:1000]


def test_a_head_request_gets_the_headers_of_its_get(client: TestClient) -> None:
    head = client.head(CSS, headers={"Accept-Encoding": "gzip"})
    get_headers, body = raw(client, CSS)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get_headers["content-type"]
    assert int(get_headers["content-length"]) == len(body)


# ---- the live class's stream, through a real server --------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    env = {
        **os.environ,
        "ATLAS_DATA_DIR": str(tmp_path / "data"),
        "ATLAS_SECRET_KEY": "test-compression-key",
        "ATLAS_CONFIRM_ENABLED": "false",
    }
    command = [sys.executable, "-m", "app", "--port", str(port), "--log-level", "warning"]
    running = launch(command, port=port, ready_path="/healthz", env=env)
    try:
        yield running
    finally:
        stop(running)


async def _next_event(chunks: "asyncio.Queue[bytes]", seen: bytearray) -> bytes:
    """The stream's next whole event (up to its blank line), as raw bytes, within 5 s."""
    while b"\n\n" not in seen and b"\r\n\r\n" not in seen:
        seen += await asyncio.wait_for(chunks.get(), 5.0)
    for end in (b"\r\n\r\n", b"\n\n"):
        if end in seen:
            event, _, rest = seen.partition(end)
            seen[:] = rest
            return bytes(event)
    raise AssertionError("unreachable")


def test_server_sent_events_are_neither_compressed_nor_held_back(server: Server) -> None:
    """A browser that accepts gzip opens the class's stream: it answers as text/event-stream
    without a Content-Encoding, its first event (the current state) arrives while the stream
    stays open, and a change made afterwards arrives as the next event, unbuffered."""

    async def run() -> None:
        gzip_please = {"Accept-Encoding": "gzip, deflate, br, zstd"}
        async with (
            httpx.AsyncClient(
                base_url=server.url, timeout=30, headers=gzip_please, verify=TLS
            ) as host,
            httpx.AsyncClient(
                base_url=server.url, timeout=30, headers=gzip_please, verify=TLS
            ) as pupil,
        ):
            started = await host.post("/class/new", data={"password": INSTRUCTOR_PASSWORD})
            assert started.status_code == 303
            code = started.headers["location"].split("/")[2]
            joined = await pupil.post("/join", data={"code": code, "nickname": "Ada"})
            assert joined.status_code == 303
            chunks: asyncio.Queue[bytes] = asyncio.Queue()
            opened: asyncio.Future[httpx.Headers] = asyncio.get_running_loop().create_future()

            async def follow() -> None:
                async with pupil.stream("GET", f"/class/{code}/events") as answer:
                    opened.set_result(answer.headers)
                    async for chunk in answer.aiter_raw():
                        await chunks.put(chunk)

            reader = asyncio.create_task(follow())
            try:
                headers = await asyncio.wait_for(opened, 5.0)
                assert headers["content-type"].startswith("text/event-stream")
                assert "content-encoding" not in headers
                seen = bytearray()
                first = await _next_event(chunks, seen)
                assert first[:2] != b"\x1f\x8b"
                assert b"event: class" in first
                # A change after the stream opened reaches it as an event of its own.
                question = questions()[0].id
                asked = await host.post(f"/class/{code}/ask", data={"question": question})
                assert asked.status_code == 303
                marker = f'value="{question}"'.encode()
                while marker not in (changed := await _next_event(chunks, seen)):
                    assert changed[:2] != b"\x1f\x8b"
            finally:
                reader.cancel()

    asyncio.run(run())
