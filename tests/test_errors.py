"""One error handler: a page in the site's layout for a browser, JSON for scripts and the API."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from httpx import Response

from app.main import create_app
from app.settings import Settings
from app.web.security import SECURITY_HEADERS
from tests.test_course import course_folder

# What Chromium sends when it navigates to a page.
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
SCRIPT = {"Accept": "application/json"}
BODY_LIMIT = 4_096
GRADIENT = "distributed-gradient-weighting"


def with_failing_routes(app: FastAPI) -> FastAPI:
    """Routes that fail as a busy or broken server does: no route of the app answers 429 or 500
    to a browser on demand (the confirmation's are API answers)."""

    @app.get("/busy")
    def busy() -> None:
        raise HTTPException(429, "Too many confirmations queued.", {"Retry-After": "7"})

    @app.get("/starting")
    def starting() -> None:
        raise HTTPException(503, "The pool is starting.")

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals")

    return app


@pytest.fixture(scope="module")
def web() -> Iterator[TestClient]:
    settings = Settings(confirm_enabled=False, max_body_bytes=BODY_LIMIT)
    app = with_failing_routes(create_app(settings))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def error_page(response: Response, status: int) -> BeautifulSoup:
    """The page, after checking what every error page shares: the site's layout, the security
    headers, an answer that varies with Accept, no traceback."""
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("text/html")
    assert "Accept" in response.headers["vary"]
    assert response.headers["x-frame-options"] == SECURITY_HEADERS["X-Frame-Options"]
    assert "Traceback" not in response.text
    soup = BeautifulSoup(response.text, "html.parser")
    assert soup.select_one("link[rel=stylesheet][href*='css/site.css']") is not None
    assert soup.select_one("a.skip-link[href='#main']") is not None
    assert soup.select_one("main#main") is not None
    assert soup.select_one("h1") is not None
    assert soup.title is not None
    assert soup.title.get_text().startswith(f"{status} ")
    return soup


def words(soup: BeautifulSoup, selector: str) -> str:
    found = soup.select_one(selector)
    assert found is not None
    return " ".join(found.get_text(" ").split()).replace(" .", ".")


def home_link(soup: BeautifulSoup) -> str:
    link = soup.select_one("main a[rel=home]")
    assert link is not None
    return str(link["href"])


def browser_answers(web: TestClient) -> dict[int, Response]:
    return {
        404: web.get("/no-such-page", headers=BROWSER),
        405: web.delete("/", headers=BROWSER),
        413: web.post("/quiz", data={"choice": "1" * BODY_LIMIT}, headers=BROWSER),
        429: web.get("/busy", headers=BROWSER),
        500: web.get("/boom", headers=BROWSER),
        503: web.get("/starting", headers=BROWSER),
    }


def test_a_browser_gets_a_page_with_a_way_home(web: TestClient) -> None:
    for status, response in browser_answers(web).items():
        soup = error_page(response, status)
        assert home_link(soup) == "/"
        assert web.get(home_link(soup)).status_code == 200


def test_each_page_says_what_happened(web: TestClient) -> None:
    said = {
        status: words(BeautifulSoup(response.text, "html.parser"), "main")
        for status, response in browser_answers(web).items()
    }
    assert "There is no page at /no-such-page" in said[404]
    assert "does not answer a DELETE request" in said[405]
    assert "ATLAS_MAX_BODY_BYTES" in said[413]
    assert "Too many confirmations queued" in said[429]
    assert "The pool is starting" in said[503]
    assert "could not answer this request" in said[500]
    assert "secret internals" not in said[500]


def test_the_page_keeps_the_answers_headers(web: TestClient) -> None:
    answers = browser_answers(web)
    assert answers[405].headers["allow"] == "GET"
    assert answers[429].headers["retry-after"] == "7"
    assert answers[413].headers["connection"] == "close"


def test_scripts_get_json_as_before(web: TestClient) -> None:
    for headers in (SCRIPT, {"Accept": "*/*"}, {}):
        response = web.get("/no-such-page", headers=headers)
        assert response.status_code == 404
        assert response.json() == {"detail": "Not Found"}
        assert "Accept" in response.headers["vary"]
    busy = web.get("/busy", headers=SCRIPT)
    assert busy.json() == {"detail": "Too many confirmations queued."}
    assert busy.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("path", "status"),
    [("/api/no-such-thing", 404), ("/api/gradient", 405)],  # no such path; POST only
)
def test_the_api_answers_json_even_to_a_browser(web: TestClient, path: str, status: int) -> None:
    response = web.get(path, headers=BROWSER)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert "detail" in response.json()


def test_only_the_api_prefix_makes_an_address_the_apis(web: TestClient) -> None:
    error_page(web.get("/learn/api", headers=BROWSER), 404)
    error_page(web.get("/no/api/here", headers=BROWSER), 404)
    assert web.get("/api", headers=BROWSER).headers["content-type"] == "application/json"


def test_the_confirmations_refusal_is_the_one_handlers(web: TestClient) -> None:
    # Off on this server: 503, JSON (an API path), varying with Accept like every error.
    response = web.post(
        "/api/confirm",
        json={"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10},
        headers=BROWSER,
    )
    assert response.status_code == 503
    assert "ATLAS_CONFIRM_ENABLED" in response.json()["detail"]
    assert "Accept" in response.headers["vary"]


def test_what_the_address_said_is_shown_escaped_and_short(web: TestClient) -> None:
    response = web.get("/<script>alert(1)</script>" + "x" * 5_000, headers=BROWSER)
    soup = error_page(response, 404)
    assert "<script>alert" not in response.text
    shown = soup.select_one(".error-path")
    assert shown is not None
    assert shown.get_text().startswith("/<script>alert(1)</script>xxx")
    assert len(shown.get_text()) <= 81


def test_form_errors_stay_inline(web: TestClient) -> None:
    response = web.post("/quiz", data={"question": "no-such-question", "choice": "1"})
    assert response.status_code == 422
    soup = BeautifulSoup(response.text, "html.parser")
    # The lesson page itself (not an error page), the message at the quiz naming the field.
    assert soup.select_one("nav.toc") is not None
    assert soup.select_one("main a[rel=home]") is None
    alerts = soup.select(".quiz-error[role=alert]")
    assert len(alerts) == 1
    assert "form field “question”" in alerts[0].get_text()


def test_home_follows_the_root_path() -> None:
    app = create_app(Settings(confirm_enabled=False))
    with TestClient(app, root_path="/atlas") as client:
        soup = error_page(client.get("/atlas/no-such-page", headers=BROWSER), 404)
        api = client.get("/atlas/api/no-such-thing", headers=BROWSER)
    assert api.headers["content-type"] == "application/json"
    assert home_link(soup) == "/atlas/"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    folder: Path = course_folder(tmp_path_factory.mktemp("course"))
    with TestClient(create_app(Settings(lesson_path=folder, confirm_enabled=False))) as client:
        yield client


def test_in_a_course_home_is_the_lesson_or_the_index(course: TestClient) -> None:
    inside = error_page(course.get(f"/learn/{GRADIENT}/no-such-page", headers=BROWSER), 404)
    assert home_link(inside) == f"/learn/{GRADIENT}/"
    assert words(inside, "main a[rel=home]") == "Go to the lesson"
    outside = error_page(course.get("/no-such-page", headers=BROWSER), 404)
    assert home_link(outside) == "/"
    assert words(outside, "main a[rel=home]") == "Go to the lessons"


def test_a_lessons_api_in_a_course_answers_json(course: TestClient) -> None:
    response = course.get(f"/learn/{GRADIENT}/api/no-such-thing", headers=BROWSER)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}
    # Refused by a middleware of the course's outer app, before the lesson's app sees it.
    refused = course.post(
        f"/learn/{GRADIENT}/api/gradient",
        json={"counts": [2, 6]},
        headers={**BROWSER, "Sec-Fetch-Site": "cross-site"},
    )
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("Cross-site request refused")
    page = course.post(
        f"/learn/{GRADIENT}/quiz", headers={**BROWSER, "Sec-Fetch-Site": "cross-site"}
    )
    error_page(page, 403)
