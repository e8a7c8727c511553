"""The security middlewares at their edges, as mutation testing found them untested: a request
without a Host header, IPv6 hosts, an answer that breaks after it began, a response's own
headers, and the exact words of the 400 and 403 refusals."""

import asyncio
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from app.main import create_app
from app.settings import Settings
from app.web.security import (
    SecurityHeadersMiddleware,
    TrustedHostsMiddleware,
    relative_location,
)


def scope_of(headers: list[tuple[bytes, bytes]], **extra: object) -> Scope:
    return {"type": "http", "method": "GET", "path": "/", "headers": headers, **extra}


def call(app: object, scope: Scope) -> list[Message]:
    """What the middleware ``app`` sends for ``scope`` (no body to receive)."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))  # type: ignore[operator]
    return sent


async def ok(_scope: Scope, _receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_without_a_host_header_the_servers_own_address_is_this_site() -> None:
    served = scope_of([], server=("lab.example", 8000))
    assert relative_location("http://lab.example:8000/a?b=1#c", served) == "/a?b=1#c"
    assert relative_location("http://elsewhere:8000/a", served) == "http://elsewhere:8000/a"
    # Neither a Host nor a server address: only an address naming no host is this site's.
    assert relative_location("http:///a", scope_of([])) == "/a"


def test_a_path_read_as_another_host_keeps_one_slash_and_its_letters() -> None:
    assert relative_location("//Xample.org/a", scope_of([])) == "/Xample.org/a"
    assert relative_location("/\\Xx/a", scope_of([])) == "/Xx/a"


def test_an_answer_that_breaks_after_it_began_is_not_begun_twice() -> None:
    async def breaks(_scope: Scope, _receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("broken mid-answer")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    with pytest.raises(RuntimeError, match="broken mid-answer"):
        asyncio.run(SecurityHeadersMiddleware(breaks)(scope_of([]), receive, send))
    assert [m["type"] for m in sent] == ["http.response.start"]
    assert sent[0]["status"] == 200


def test_headers_are_added_to_an_answer_that_set_none_and_others_left_alone() -> None:
    async def bare(_scope: Scope, _receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 204})
        await send({"type": "http.response.body", "body": b""})

    start = call(SecurityHeadersMiddleware(bare), scope_of([(b"host", b"lab.example")]))[0]
    assert (b"x-frame-options", b"DENY") in start["headers"]

    async def linked(_scope: Scope, _receive: Receive, send: Send) -> None:
        headers = [(b"link", b"http://lab.example/next"), (b"location", b"http://lab.example/x")]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    start = call(SecurityHeadersMiddleware(linked), scope_of([(b"host", b"lab.example")]))[0]
    assert (b"link", b"http://lab.example/next") in start["headers"]
    assert (b"location", b"/x") in start["headers"]


def test_ipv6_hosts_are_served_by_their_address() -> None:
    hosts = TrustedHostsMiddleware(ok, ["::1", "lab.example"])
    assert hosts.serves("[::1]:8000")
    assert hosts.serves("[::1]")
    assert hosts.serves("lab.example:8000")
    assert not hosts.serves("[::2]:8000")
    # A bracket left open is not an address; text after the first closing one is not either.
    assert not TrustedHostsMiddleware(ok, ["::"]).serves("[::1")
    assert not TrustedHostsMiddleware(ok, ["::1]:80"]).serves("[::1]:80]")


def test_a_request_without_host_is_refused_where_hosts_are_named() -> None:
    sent = call(TrustedHostsMiddleware(ok, ["lab.example"]), scope_of([]))
    assert sent[0]["status"] == 400


@pytest.fixture(scope="module")
def guarded() -> Iterator[TestClient]:
    settings = Settings(confirm_enabled=False, trusted_hosts=["lab.example"])
    with TestClient(create_app(settings), base_url="http://lab.example") as client:
        yield client


def test_the_refusals_say_why_in_full(guarded: TestClient) -> None:
    wrong_host = guarded.get("/", headers={"Host": "evil.example"})
    assert wrong_host.status_code == 400
    assert wrong_host.json()["detail"] == (
        "Invalid Host header: this server answers only the names it is configured for"
        " (ATLAS_TRUSTED_HOSTS)."
    )
    site = "s" * 50
    marked = guarded.post("/quiz", headers={"Sec-Fetch-Site": site})
    assert marked.status_code == 403
    assert marked.json()["detail"] == (
        f"Cross-site request refused: the browser marked it Sec-Fetch-Site: {'s' * 40}."
        " Changes are accepted only from this site's own pages, or from scripts that send no"
        " Origin header."
    )
    origin = "https://" + "o" * 100
    foreign = guarded.post("/quiz", headers={"Origin": origin})
    assert foreign.status_code == 403
    assert foreign.json()["detail"].startswith(
        f"Cross-site request refused: it comes from Origin {origin[:80]!r}, not from this site."
    )
