"""Nothing rendered depends on the Host header: every URL the app writes is a path."""

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.security import relative_location
from tests.test_classroom import questions

LESSON = "counts=2,6&means=1,3&eta=0.1&w=10"
URL_ATTRIBUTES = ("href", "src", "action", "formaction", "hx-get", "hx-post")
HX = {"HX-Request": "true"}


@pytest.fixture(scope="module")
def web() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        yield client


def answers(client: TestClient, host: str) -> list[str]:
    client.cookies.clear()
    headers = {"Host": host}
    first = questions()[0]
    quiz = {"question": first.id, "choice": str(first.answer_number)}
    return [
        client.get("/", headers=headers).text,
        client.get(f"/?{LESSON}&eta=0.25", headers=headers).text,
        client.get(f"/lab?{LESSON}", headers={**headers, **HX}).text,
        client.get(f"/lab?{LESSON}&ring_p=16", headers={**headers, **HX}).text,
        client.post("/quiz", data=quiz, headers=headers).text,
        client.post("/quiz", data=quiz, headers={**headers, **HX}).text,
        client.post("/lab/confirm", data={"counts": "2,6"}, headers={**headers, **HX}).text,
    ]


def test_pages_are_the_same_for_any_host(web: TestClient) -> None:
    one = answers(web, "one.example")
    other = answers(web, "other.example:8443")
    assert one == other
    for text in one:
        assert "one.example" not in text


def test_every_url_written_is_a_path(web: TestClient) -> None:
    for text in answers(web, "lab.example"):
        soup = BeautifulSoup(text, "html.parser")
        for tag in soup.find_all(True):
            for name in URL_ATTRIBUTES:
                value = tag.get(name)
                if not isinstance(value, str) or not value:
                    continue
                assert "lab.example" not in value
                if not value.startswith(("/", "#", "?")):
                    # Only links out (the published lesson) may be absolute: nothing is loaded
                    # from them and they never name this server.
                    assert tag.name in ("a", "link"), (tag.name, name, value)
                    assert set(tag.get("rel") or []) <= {"canonical", "noopener", "external"}


def test_paths_follow_the_root_path() -> None:
    app = create_app(Settings(confirm_enabled=False))
    first = questions()[0]
    quiz = {"question": first.id, "choice": str(first.answer_number)}
    with TestClient(app, root_path="/atlas") as client:
        soup = BeautifulSoup(client.get("/").text, "html.parser")
        answered = client.post("/quiz", data=quiz, follow_redirects=False)
    assert answered.status_code == 303
    assert answered.headers["location"] == f"/atlas/#{first.id}"
    stylesheet = soup.select_one("link[rel=stylesheet]")
    assert stylesheet is not None
    assert str(stylesheet["href"]).startswith("/atlas/static/")
    form = soup.select_one("form.quiz-form")
    assert form is not None
    assert str(form["action"]).startswith("/atlas/quiz")


@pytest.mark.parametrize(
    ("path", "location"), [("/healthz/", "/healthz"), ("/docs/", "/docs"), ("/lab/", "/lab")]
)
def test_a_redirect_never_sends_the_host_back(web: TestClient, path: str, location: str) -> None:
    response = web.get(path, headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == location
    assert "evil.example" not in response.text


@pytest.mark.parametrize(
    ("written", "location"),
    [
        ("http://lab.example:8000/a/?b=1#c", "/a/?b=1#c"),
        ("https://lab.example:8000", "/"),
        ("http://lab.example:8000//evil.example/", "/evil.example/"),
        ("//evil.example/x", "/evil.example/x"),
        ("/\\evil.example/x", "/evil.example/x"),
        ("https://atlas.example.org/published", "https://atlas.example.org/published"),
        ("/learn/x/#section-2", "/learn/x/#section-2"),
    ],
)
def test_a_location_on_this_host_is_a_path_that_stays_here(written: str, location: str) -> None:
    scope = {"type": "http", "headers": [(b"host", b"lab.example:8000")]}
    assert relative_location(written, scope) == location
