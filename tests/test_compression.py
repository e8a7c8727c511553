"""gzip (app/web/compression.py): what is compressed, what is left alone, and that every compressed
answer decompresses to the bytes the app sent, for a whole body and a streamed one."""

import gzip
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.web.compression import GzipMiddleware, accepts_gzip, incompressible

TEXT = ("the global item mean g = (1/N) Σ n_r ḡ_r, " * 40).encode()  # 1.8 kB, compresses well
CHUNKS = [b"rank %d: " % r + TEXT for r in range(5)]


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        (b"gzip", True),
        (b"gzip, deflate, br, zstd", True),
        (b"br;q=1.0, GZIP;q=0.5", True),
        (b"*", True),
        (b"identity", False),
        (b"deflate, br", False),
        (b"gzip;q=0", False),
        (b"gzip; q=0.000, deflate", False),
        (b"gzip;q=nonsense", False),
        (b"x-gzip", False),
        (b"", False),
    ],
)
def test_accept_encoding_is_read_by_coding_and_quality(value: bytes, accepted: bool) -> None:
    assert accepts_gzip(value) is accepted


async def whole(request: Request) -> Response:
    return Response(TEXT, media_type="text/html", headers={"Vary": "HX-Request"})


async def small(request: Request) -> Response:
    return Response(TEXT[:100], media_type="text/plain")


async def streamed(request: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in CHUNKS:
            yield chunk

    return StreamingResponse(chunks(), media_type="text/plain")


async def png(request: Request) -> Response:
    return Response(TEXT, media_type="image/png")


async def svg(request: Request) -> Response:
    return Response(TEXT, media_type="image/svg+xml")


async def encoded(request: Request) -> Response:
    body = gzip.compress(TEXT)
    return Response(body, media_type="text/plain", headers={"Content-Encoding": "gzip"})


async def partial(request: Request) -> Response:
    return Response(TEXT, status_code=206, media_type="text/plain")


async def font(request: Request) -> FileResponse:
    return FileResponse(request.app.state.font, media_type="font/woff2")


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    paths = {f.__name__: f for f in (whole, small, streamed, png, svg, encoded, partial, font)}
    app = Starlette(routes=[Route(f"/{name}", f) for name, f in paths.items()])
    app.state.font = tmp_path / "font.woff2"
    app.state.font.write_bytes(TEXT)
    app.add_middleware(GzipMiddleware, minimum_size=500, level=1)
    return TestClient(app)


def raw(client: TestClient, path: str, accept: str = "gzip") -> tuple[dict[str, str], bytes]:
    with client.stream("GET", path, headers={"Accept-Encoding": accept}) as answer:
        return dict(answer.headers), b"".join(answer.iter_raw())


def test_svg_is_text_and_compressed(client: TestClient) -> None:
    headers, body = raw(client, "/svg")
    assert headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == TEXT


def test_a_whole_body_is_compressed_with_its_length_and_vary(client: TestClient) -> None:
    headers, body = raw(client, "/whole")
    assert headers["content-encoding"] == "gzip"
    assert body[:3] == b"\x1f\x8b\x08"
    assert gzip.decompress(body) == TEXT
    assert int(headers["content-length"]) == len(body) < len(TEXT) / 4
    assert headers["vary"] == "HX-Request, Accept-Encoding"


def test_a_streamed_body_is_compressed_chunk_by_chunk(client: TestClient) -> None:
    headers, body = raw(client, "/streamed")
    assert headers["content-encoding"] == "gzip"
    assert "content-length" not in headers
    assert gzip.decompress(body) == b"".join(CHUNKS)
    assert len(body) < len(b"".join(CHUNKS)) / 4


@pytest.mark.parametrize("path", ["/whole", "/streamed", "/small"])
def test_without_gzip_accepted_the_bytes_are_as_sent_and_vary_says_why(
    client: TestClient, path: str
) -> None:
    plain = {"/whole": TEXT, "/streamed": b"".join(CHUNKS), "/small": TEXT[:100]}[path]
    for accept in ("identity", "gzip;q=0"):
        headers, body = raw(client, path, accept)
        assert "content-encoding" not in headers
        assert body == plain
        assert "Accept-Encoding" in headers["vary"]


def test_a_small_answer_is_not_compressed(client: TestClient) -> None:
    headers, body = raw(client, "/small")
    assert "content-encoding" not in headers
    assert body == TEXT[:100]
    assert headers["content-length"] == "100"


@pytest.mark.parametrize("path", ["/png", "/font", "/partial"])
def testincompressible_types_and_partial_content_pass_as_they_are(
    client: TestClient, path: str
) -> None:
    headers, body = raw(client, path)
    assert "content-encoding" not in headers
    assert body == TEXT
    assert "vary" not in headers


@pytest.mark.parametrize(
    ("media_type", "passed_as_is"),
    [
        (b"image/png", True),
        (b"IMAGE/WEBP; q=1", True),
        (b"font/woff2", True),
        (b"audio/ogg", True),
        (b"video/mp4; codecs=avc1", True),
        (b"text/event-stream", True),
        (b"image/svg+xml", False),
        (b"text/html; charset=utf-8", False),
        (b"application/json", False),
        (b"font/woff3", False),
        (b"audio", False),
    ],
)
def test_media_types_are_read_by_type_and_family(media_type: bytes, passed_as_is: bool) -> None:
    # Named types match whole; a family ("audio/") matches every type in it.
    assert incompressible(media_type) is passed_as_is


def test_an_answer_encoded_already_is_not_encoded_twice(client: TestClient) -> None:
    headers, body = raw(client, "/encoded")
    assert headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == TEXT


def test_a_head_request_gets_the_headers_of_its_get(client: TestClient) -> None:
    head = client.head("/whole", headers={"Accept-Encoding": "gzip"})
    get, body = raw(client, "/whole", "gzip")
    assert head.status_code == 200
    assert head.content == b""
    for name in ("content-encoding", "content-length", "vary"):
        assert head.headers[name] == get[name]
    assert int(get["content-length"]) == len(body)


@pytest.mark.parametrize("level", [-1, 4, 9])
def test_levels_outside_isa_l_are_refused(level: int) -> None:
    with pytest.raises(ValueError, match="levels 0-3"):
        GzipMiddleware(Starlette(), level=level)
