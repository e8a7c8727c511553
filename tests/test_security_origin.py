"""Same-origin state changes, trusted hosts, and a 500 that still carries the security headers."""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from app.main import create_app
from app.settings import Settings
from app.web.security import SECURITY_HEADERS, TrustedHostsMiddleware, cross_site_reason
from tests.test_classroom import questions

LESSON_BODY = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}
LAB_FORM = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}


def quiz_form() -> dict[str, str]:
    first = questions()[0]
    return {"question": first.id, "choice": str(first.answer_number)}


CROSS_SITE = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://testserver.evil.example"},
    {"Sec-Fetch-Site": "cross-site", "Origin": "http://testserver"},
    # Another port of the same host is another origin (another server, maybe anyone's).
    {"Origin": "http://testserver:8080"},
    {"Origin": "https://testserver:8443"},
]
SAME_ORIGIN = [
    {},  # curl, scripts: no Origin, no Sec-Fetch-Site
    {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"},
    {"Sec-Fetch-Site": "none"},
    {"Origin": "http://testserver"},
    {"Origin": "https://testserver"},  # behind a TLS proxy the app sees http
]


@pytest.mark.parametrize("path", ["/quiz", "/lab/confirm", "/api/confirm"])
@pytest.mark.parametrize("headers", CROSS_SITE)
def test_cross_site_state_changes_are_refused(
    client: TestClient, path: str, headers: dict[str, str]
) -> None:
    response = client.post(path, data=quiz_form(), headers=headers)
    assert response.status_code == 403
    assert response.json()["detail"].startswith("Cross-site request refused")
    assert "evil.example" * 2 not in response.text
    assert "set-cookie" not in response.headers
    assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("headers", SAME_ORIGIN)
def test_same_origin_and_scripts_get_the_routes_own_answers(
    client: TestClient, headers: dict[str, str]
) -> None:
    # The session's client runs no confirmation: past the origin check its routes say so (503,
    # naming the setting); a cross-site refusal would be a 403.
    quiz = client.post("/quiz", data=quiz_form(), headers=headers, follow_redirects=False)
    assert quiz.status_code == 303  # scored, and back to the page at the question
    assert quiz.headers["location"] == f"/#{quiz_form()['question']}"
    assert "atlas_quiz" in quiz.headers["set-cookie"]
    panel = client.post("/lab/confirm", data=LAB_FORM, headers=headers)
    assert panel.status_code == 503
    assert "ATLAS_CONFIRM_ENABLED=false" in panel.text
    api = client.post("/api/confirm", json=LESSON_BODY, headers=headers)
    assert api.status_code == 503
    assert "ATLAS_CONFIRM_ENABLED" in api.json()["detail"]


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("lab.example:8000", "http://lab.example:8080"),
        ("lab.example:8000", "http://lab.example"),
        ("lab.example", "http://lab.example:8000"),
        ("127.0.0.1:8000", "http://127.0.0.1:9000"),
        ("[::1]:8000", "http://[::1]:9000"),
    ],
)
def test_an_origin_on_another_port_is_another_site(host: str, origin: str) -> None:
    # Same host name, another port: a different origin (RFC 6454), e.g. another user's server on
    # a shared machine.
    headers = Headers({"host": host, "origin": origin})
    reason = cross_site_reason("POST", headers)
    assert reason is not None
    assert repr(origin) in reason


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("lab.example:8000", "http://lab.example:8000"),
        ("lab.example", "https://lab.example"),
        ("[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_an_origin_on_the_same_host_and_port_passes(host: str, origin: str) -> None:
    assert cross_site_reason("POST", Headers({"host": host, "origin": origin})) is None


def test_same_origin_quiz_answer_is_scored(client: TestClient) -> None:
    response = client.post(
        "/quiz", data=quiz_form(), headers={"Sec-Fetch-Site": "same-origin", "HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "atlas_quiz" in response.headers["set-cookie"]


def test_reads_are_never_refused(client: TestClient) -> None:
    assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


async def strict_app(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("a refused request reached the app")


@pytest.fixture(scope="module")
def strict_hosts() -> Iterator[TestClient]:
    settings = Settings(confirm_enabled=False, trusted_hosts=["lab.example.org", "localhost"])
    with TestClient(create_app(settings), base_url="http://lab.example.org") as client:
        yield client


def test_trusted_hosts_answer(strict_hosts: TestClient) -> None:
    assert strict_hosts.get("/healthz").status_code == 200
    assert strict_hosts.get("/healthz", headers={"Host": "localhost:8000"}).status_code == 200


def test_other_hosts_are_refused_with_the_headers(strict_hosts: TestClient) -> None:
    response = strict_hosts.get("/", headers={"Host": "x" * 10_000})
    assert response.status_code == 400
    assert len(response.content) < 200
    assert (
        response.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    )


def test_a_browser_sent_from_another_host_gets_the_error_page(strict_hosts: TestClient) -> None:
    response = strict_hosts.get("/", headers={"Host": "evil.example", "Accept": "text/html"})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert "ATLAS_TRUSTED_HOSTS" in response.text
    assert "evil.example" not in response.text


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("lab.example.org", True),
        ("LAB.example.org:8443", True),
        ("a.lab.example.org", False),
        ("b.school.example", True),
        ("b.c.school.example:80", True),
        ("school.example", False),
        ("evilschool.example", False),
        ("school.example.evil.example", False),
        ("[::1]:8000", True),
        ("[::2]:8000", False),
        ("", False),
    ],
)
def test_trusted_hosts_are_names_ip_addresses_or_subdomains(host: str, served: bool) -> None:
    middleware = TrustedHostsMiddleware(
        strict_app, allowed_hosts=["lab.example.org", "*.school.example", "[::1]"]
    )
    assert middleware.serves(host) is served


@pytest.mark.parametrize("pattern", ["lab.*.org", "*lab.org", "*.*.org"])
def test_a_wildcard_only_names_subdomains(pattern: str) -> None:
    with pytest.raises(ValueError, match="only alone or as"):
        TrustedHostsMiddleware(strict_app, allowed_hosts=[pattern])


def test_any_host_by_default(client: TestClient) -> None:
    assert client.get("/healthz", headers={"Host": "anything.example:1234"}).status_code == 200


def test_a_server_error_is_plain_and_carries_the_security_headers() -> None:
    """A 500 says so in JSON to a script and as a page to a browser, never what went wrong."""
    app = create_app(Settings(confirm_enabled=False))

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
        page = client.get("/boom", headers={"Accept": "text/html"})
    assert response.status_code == page.status_code == 500
    assert response.json()["detail"].startswith("Internal server error")
    assert page.headers["content-type"].startswith("text/html")
    assert "could not answer this request" in page.text
    for answer in (response, page):
        assert "secret internals" not in answer.text
        assert "Traceback" not in answer.text
        assert answer.headers["cache-control"] == "no-store"
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name] == value
