"""The caches of rendered lab fragments and lesson pages: an answer from the cache is the answer
a cold render gives, for that request and no other (query, rendering, Host, score)."""

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient
from httpx import Response
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from app.main import create_app
from app.routes.pages import SCORE_COOKIE, Skeleton, page_context, render_page
from app.settings import Settings
from app.templating import Lru, RenderCache, Rendered, templates

LESSON = "counts=2,6&means=1,3&eta=0.1&w=10"
RESULTS = {"HX-Request": "true", "HX-Target": "lab-results"}
WHOLE_LAB = {"HX-Request": "true", "HX-Target": "lab"}
RING = {"HX-Request": "true", "HX-Target": "ring-results"}
# Content-Length aside, every header a route or the middleware sets.
COMPARED = ("content-type", "vary", "x-lab-url", "cache-control", "content-security-policy")


@pytest.fixture(scope="module")
def warm() -> Iterator[TestClient]:
    """The real app with its caches."""
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        yield client


@pytest.fixture(scope="module")
def cold() -> Iterator[TestClient]:
    """The real app with caches that keep nothing (no answer fits in 0 bytes): every answer is
    rendered afresh."""
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        app: FastAPI = client.app  # type: ignore[assignment]
        app.state.lab_fragments = RenderCache(0)
        app.state.lesson_pages = RenderCache(0)
        yield client


def same_answer(first: Response, second: Response) -> None:
    assert second.status_code == first.status_code
    assert second.content == first.content
    for name in COMPARED:
        assert second.headers.get(name) == first.headers.get(name), name


def fragments(client: TestClient) -> RenderCache:
    app: FastAPI = client.app  # type: ignore[assignment]
    cache: RenderCache = app.state.lab_fragments
    return cache


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        (f"/lab?{LESSON}", RESULTS, 200),
        (f"/lab?{LESSON}", WHOLE_LAB, 200),
        (f"/lab/ring?{LESSON}&ring_p=16", RING, 200),
        ("/lab?targets=9,9;7,7,7&eta=0.1&w=10&steps=12", RESULTS, 200),
        ("/lab?counts=2,x&means=1,3", RESULTS, 422),
        ("/lab/ring?ring_p=1", RING, 422),
    ],
)
def test_cached_fragment_equals_a_fresh_render(
    warm: TestClient, cold: TestClient, path: str, headers: dict[str, str], status: int
) -> None:
    first = warm.get(path, headers=headers)
    kept = len(fragments(warm))
    second = warm.get(path, headers=headers)
    assert len(fragments(warm)) == kept, "the second answer was rendered again, not kept"
    fresh = cold.get(path, headers=headers)
    assert first.status_code == status
    same_answer(first, second)
    same_answer(fresh, second)
    assert second.headers["vary"].startswith("HX-Request, HX-Target")
    assert second.headers["x-content-type-options"] == "nosniff"
    if status == 200:
        assert second.headers["x-lab-url"].startswith("/?")
    else:
        assert "x-lab-url" not in second.headers


@settings(max_examples=40, deadline=None)
@given(
    states=st.lists(
        st.tuples(
            st.lists(st.integers(0, 9), min_size=1, max_size=3),
            st.sampled_from(["results", "lab"]),
        ),
        min_size=2,
        max_size=4,
    )
)
def test_different_requests_never_share_an_answer(
    warm: TestClient, cold: TestClient, states: list[tuple[list[int], str]]
) -> None:
    # Asked in turn, twice over, so later answers come from the cache among neighbours.
    for _ in range(2):
        for counts, target in states:
            query = f"counts={','.join(map(str, counts))}&means={','.join('1' * len(counts))}"
            headers = {"HX-Request": "true", "HX-Target": target}
            same_answer(
                cold.get(f"/lab?{query}", headers=headers),
                warm.get(f"/lab?{query}", headers=headers),
            )


def test_two_spellings_of_one_state_each_keep_what_was_typed(warm: TestClient) -> None:
    # The key is the raw query: the form shows the input as typed, the address is canonical.
    typed = {}
    for eta in ("0.1", "0.10"):
        response = warm.get(f"/lab?counts=2,6&means=1,3&w=10&eta={eta}", headers=WHOLE_LAB)
        field = BeautifulSoup(response.text, "html.parser").select_one("#lab-eta")
        assert field is not None
        typed[eta] = (field["value"], response.headers["x-lab-url"])
    assert typed == {
        "0.1": ("0.1", f"/?{LESSON}"),
        "0.10": ("0.10", f"/?{LESSON}"),
    }


def test_an_answer_never_depends_on_the_host_header(warm: TestClient) -> None:
    path = f"/lab?{LESSON}&eta=0.2"
    forged = warm.get(path, headers={**WHOLE_LAB, "Host": "evil.example"})
    real = warm.get(path, headers=WHOLE_LAB)
    assert "evil.example" not in forged.text
    assert forged.text == real.text
    assert 'hx-get="/lab?' in real.text
    page = warm.get("/?eta=0.3", headers={"Host": "evil.example"})
    assert "evil.example" not in page.text
    assert page.text == warm.get("/?eta=0.3").text


def score_text(response: Response) -> str:
    found = BeautifulSoup(response.text, "html.parser").select_one("#quiz-score strong")
    assert found is not None
    return found.get_text(strip=True)


def test_a_page_never_shows_another_visitors_score(warm: TestClient) -> None:
    app: FastAPI = warm.app  # type: ignore[assignment]
    student = TestClient(app)  # the same app and caches, its own cookie jar
    stranger = TestClient(app)
    assert score_text(stranger.get(f"/?{LESSON}")) == "0 of 3 correct"
    answered = student.post("/quiz", data={"question": "section-11", "choice": "2"})
    assert answered.status_code == 200
    assert SCORE_COOKIE in student.cookies
    assert score_text(student.get(f"/?{LESSON}")) == "1 of 3 correct"
    assert score_text(stranger.get(f"/?{LESSON}")) == "0 of 3 correct"
    assert score_text(student.get(f"/?{LESSON}")) == "1 of 3 correct"
    # A cookie that fails its signature reads as no answers, never as the last one served.
    forger = TestClient(app)
    forger.cookies.set(SCORE_COOKIE, student.cookies[SCORE_COOKIE][:-2] + "xx")
    assert score_text(forger.get(f"/?{LESSON}")) == "0 of 3 correct"
    # The same score from another student's own cookie is the same page.
    twin = TestClient(app)
    twin.post("/quiz", data={"question": "section-11", "choice": "2"})
    same_answer(student.get(f"/?{LESSON}"), twin.get(f"/?{LESSON}"))


def test_lesson_page_from_its_skeleton_equals_the_whole_template(warm: TestClient) -> None:
    app: FastAPI = warm.app  # type: ignore[assignment]
    student = TestClient(app)
    student.post("/quiz", data={"question": "section-12", "choice": "1"})
    cookie = f"{SCORE_COOKIE}={student.cookies[SCORE_COOKIE]}"
    for query in ("", LESSON, "counts=2,x", "targets=9,9;7&eta=0.1&w=10&steps=5&ring_p=4"):
        page = student.get(f"/?{query}")
        assert score_text(page) == "0 of 3 correct"
        # The template rendered whole, as the pages that show quiz feedback are.
        request = Request(
            {
                "type": "http",
                "method": "GET",
                "path": "/",
                "query_string": query.encode(),
                "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode())],
                "scheme": "http",
                "server": ("testserver", 80),
                "root_path": "",
                "app": app,
                "router": app.router,
            }
        )
        context = {**page_context(request, request.query_params), "request": request}
        whole = templates.get_template("lesson.html").render(context)
        assert page.text == whole
        assert render_page(request).body == whole.encode()


def test_skeleton_fills_its_slots_in_order() -> None:
    skeleton = Skeleton.split("a\x00slot:score\x00b\x00slot:lab\x00c")
    assert skeleton.fill({"score": "1", "lab": "2"}) == "a1b2c"
    with pytest.raises(ValueError, match="slots"):
        Skeleton.split("a\x00slot:lab\x00b\x00slot:lab\x00c")


def test_lru_drops_the_least_recently_used_past_its_bound() -> None:
    cache = Lru[bytes](10, len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # now "b" is the oldest
    cache.put("c", b"1234")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"1234", None, b"1234")
    assert cache.size == 8
    cache.put("big", b"x" * 11)  # larger than the whole cache: not kept
    assert cache.get("big") is None
    assert len(cache) == 2


def test_rendered_sends_the_same_response_again() -> None:
    original = HTMLResponse("<p>x</p>", 422, {"Vary": "HX-Request", "X-Lab-Url": "/?a=1"})
    rendered = Rendered.of(original)
    again = rendered.response()
    assert (again.status_code, again.body) == (422, b"<p>x</p>")
    assert again.headers.items() == original.headers.items()
    assert again.headers["content-type"] == "text/html; charset=utf-8"
    assert again.headers["content-length"] == "8"
    # Headers added to one answer (as the middleware does) never reach the kept one.
    again.headers["X-Extra"] = "1"
    assert "x-extra" not in rendered.response().headers


def test_kept_fragment_only_answers_the_htmx_get_it_was_rendered_for(warm: TestClient) -> None:
    path = f"/lab?{LESSON}&w=12"
    fragment = warm.get(path, headers=RESULTS)
    assert fragment.text.startswith('<div id="lab-results"')
    # Without htmx the same URL is the whole page; /lab answers GET only, kept or not.
    page = warm.get(path)
    assert page.text.startswith("<!doctype html>")
    assert page.headers["cache-control"] == "private, no-cache"
    assert warm.head(path, headers=RESULTS).status_code == 405
    assert warm.post(path, headers=RESULTS).status_code == 405
    # The whole lab for the same query is its own answer.
    whole = warm.get(path, headers=WHOLE_LAB)
    assert whole.text.startswith('<section id="lab"')
    assert warm.get(path, headers=RESULTS).content == fragment.content
