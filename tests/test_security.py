"""Web hygiene: security headers everywhere, no inline code, gzip, cacheable versioned assets."""

import gzip
import hashlib
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from app import PROJECT_DIR
from app.web.security import SECURITY_HEADERS, SecurityHeadersMiddleware
from app.web.templating import IMMUTABLE, REVALIDATE

STATIC = PROJECT_DIR / "static"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/healthz"),
        ("GET", "/static/css/site.css"),
        ("GET", "/no-such-page"),
        ("POST", "/quiz"),
    ],
)
def test_security_headers_on_every_response(client: TestClient, method: str, path: str) -> None:
    headers = client.request(method, path).headers
    csp = {
        part.strip().split(" ", 1)[0]: part.strip().split(" ", 1)[1]
        for part in headers["content-security-policy"].split(";")
    }
    assert csp["script-src"] == "'self'"
    assert csp["style-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'"
    assert csp["object-src"] == "'none'"
    assert csp["form-action"] == "'self'"
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert "unsafe-eval" not in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-frame-options"] == "DENY"


def test_page_has_no_inline_script_style_or_handler(client: TestClient) -> None:
    soup = BeautifulSoup(client.get("/").text, "html.parser")
    scripts = soup.find_all("script")
    assert scripts, "htmx and the page scripts are loaded"
    for script in scripts:
        assert script.get("src"), script
        assert script.has_attr("defer"), script
        assert not script.get_text(strip=True), script
    assert soup.find("style") is None
    for tag in soup.find_all(True):
        assert not tag.has_attr("style"), tag.name
        handlers = [name for name in tag.attrs if name.lower().startswith("on")]
        assert not handlers, (tag.name, handlers)
        for name in ("href", "src", "action", "hx-post", "hx-get"):
            assert not str(tag.get(name, "")).lower().startswith("javascript:"), tag


def test_htmx_is_configured_without_inline_styles(client: TestClient) -> None:
    soup = BeautifulSoup(client.get("/").text, "html.parser")
    meta = soup.find("meta", attrs={"name": "htmx-config"})
    assert isinstance(meta, Tag)
    config = json.loads(str(meta["content"]))
    assert config["includeIndicatorStyles"] is False
    assert config["allowEval"] is False
    swaps = {rule["code"]: rule["swap"] for rule in config["responseHandling"]}
    assert swaps["422"] is True
    css = (STATIC / "css" / "site.css").read_text(encoding="utf-8")
    assert ".htmx-request .htmx-indicator" in css


def test_page_links_every_asset_with_a_content_version(client: TestClient) -> None:
    soup = BeautifulSoup(client.get("/").text, "html.parser")
    urls = [str(link["href"]) for link in soup.find_all("link", rel="stylesheet")]
    urls += [str(script["src"]) for script in soup.find_all("script")]
    paths = {urlsplit(url).path for url in urls}
    assert {
        "/static/css/site.css",
        "/static/css/lab.css",
        "/static/css/confirm.css",
        "/static/vendor/htmx/htmx.min.js",
        "/static/js/lab.js",
        "/static/js/confirm.js",
    } <= paths
    for url in urls:
        parts = urlsplit(url)
        assert parts.hostname in (None, "testserver"), url
        relative = parts.path.removeprefix("/static/")
        digest = hashlib.sha256((STATIC / relative).read_bytes()).hexdigest()[:12]
        assert parse_qs(parts.query) == {"v": [digest]}, url
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["cache-control"] == IMMUTABLE, url


def test_unversioned_or_stale_asset_revalidates(client: TestClient) -> None:
    plain = client.get("/static/css/site.css")
    assert plain.headers["cache-control"] == REVALIDATE
    assert plain.headers["etag"]
    stale = client.get("/static/css/site.css?v=000000000000")
    assert stale.headers["cache-control"] == REVALIDATE


def test_conditional_get_gives_304(client: TestClient) -> None:
    first = client.get("/static/vendor/htmx/htmx.min.js")
    assert first.status_code == 200
    again = client.get(
        "/static/vendor/htmx/htmx.min.js", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.content == b""
    since = client.get(
        "/static/vendor/htmx/htmx.min.js",
        headers={"If-Modified-Since": first.headers["last-modified"]},
    )
    assert since.status_code == 304


def test_page_and_assets_are_gzipped(client: TestClient) -> None:
    page = client.get("/", headers={"Accept-Encoding": "gzip"})
    assert page.headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in page.headers["vary"]
    css = client.get("/static/css/site.css", headers={"Accept-Encoding": "gzip"})
    assert css.headers["content-encoding"] == "gzip"


def test_the_lab_pane_is_gzipped_and_holds_the_same_bytes(client: TestClient) -> None:
    """A browser asks for gzip: the drag's answer comes compressed (at the level app.main
    sets) and decompresses to the answer sent without gzip."""
    url = "/lab?counts=2,6,3&means=1,3,-2&eta=0.1&w=10"
    pane = {"HX-Request": "true", "HX-Target": "lab-results"}
    plain = client.get(url, headers={**pane, "Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert "Accept-Encoding" in plain.headers["vary"]
    with client.stream("GET", url, headers={**pane, "Accept-Encoding": "gzip"}) as answer:
        assert answer.headers["content-encoding"] == "gzip"
        assert answer.headers["vary"] == "HX-Request, HX-Target, Accept-Encoding"
        raw = b"".join(answer.iter_raw())
    assert raw[:3] == b"\x1f\x8b\x08"
    assert gzip.decompress(raw) == plain.content
    assert len(raw) < len(plain.content) / 2


def test_vendored_files_carry_their_licenses() -> None:
    htmx = STATIC / "vendor" / "htmx"
    assert 'version:"2.0.11"' in (htmx / "htmx.min.js").read_text(encoding="utf-8")
    assert "Zero-Clause BSD" in (htmx / "LICENSE").read_text(encoding="utf-8")
    sse = STATIC / "vendor" / "htmx-ext-sse"
    digest = hashlib.sha256((sse / "sse.min.js").read_bytes()).hexdigest()
    assert f"sha256 of sse.min.js: {digest}" in (sse / "VERSION").read_text(encoding="utf-8")
    assert "BSD Zero Clause License" in (sse / "LICENSE").read_text(encoding="utf-8")
    font = STATIC / "vendor" / "stix-two-math"
    assert (font / "STIXTwoMath-Regular.woff2").read_bytes()[:4] == b"wOF2"
    assert "SIL Open Font License" in (font / "OFL.txt").read_text(encoding="utf-8")
    css = (STATIC / "css" / "site.css").read_text(encoding="utf-8")
    assert "../vendor/stix-two-math/STIXTwoMath-Regular.woff2" in css
    assert '--font-math: "STIX Two Math"' in css


def test_a_response_keeps_a_security_header_it_sets_itself() -> None:
    """The middleware adds each header a response lacks, once, and never overrides one it set."""

    async def own_frame_policy(scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse("ok", headers={"X-Frame-Options": "SAMEORIGIN"})
        await response(scope, receive, send)

    answer = TestClient(SecurityHeadersMiddleware(own_frame_policy)).get("/")
    assert answer.headers.get_list("x-frame-options") == ["SAMEORIGIN"]
    for name, value in SECURITY_HEADERS.items():
        if name != "X-Frame-Options":
            assert answer.headers.get_list(name) == [value]
