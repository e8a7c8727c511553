"""A course served from a folder, and lessons served alone: labs only where they belong."""

import logging
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient

from app.main import create_app
from app.routes.pages import SCORE_COOKIE
from app.settings import Settings
from tests.records import SHARDED
from tests.soup import page_soup, text
from tests.test_course import FLOAT_SLUG, course_folder

GRADIENT = "distributed-gradient-weighting"
SHARD = "sharded-matmul-ownership"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return course_folder(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def course(folder: Path) -> Iterator[TestClient]:
    settings = Settings(lesson_path=folder, confirm_enabled=False)
    with TestClient(create_app(settings)) as client:
        yield client


def test_the_index_lists_every_lesson_served(course: TestClient) -> None:
    soup = page_soup(course)
    assert soup.title is not None
    assert text(soup.title) == "Atlas lessons: 3 lessons"
    entries = soup.select("li.course-lesson")
    assert [text(e.h2) for e in entries] == [
        "Uneven batches and the global gradient",
        "Floating-point reductions and compiler permissions",
        "Sharded matrix multiplication and result ownership",
    ]
    for entry, slug in zip(entries, (GRADIENT, FLOAT_SLUG, SHARD), strict=True):
        link = entry.h2.a
        assert isinstance(link, Tag)
        assert link["href"] == f"learn/{slug}/"
        facts = text(entry.dl)
        assert "Version 1.3.0" in facts
        assert "Revised 2026-10-07" in facts
        assert entry.find("a", string="Atlas releases and licensing") is not None
        assert course.get(urljoin("/", str(link["href"]))).status_code == 200
    description = entries[2].find(class_="course-lesson-description")
    assert text(description).startswith("Derive the communication operation")


def test_healthz_reports_the_lessons_and_the_skipped_records(course: TestClient) -> None:
    body = course.get("/healthz").json()
    assert body["status"] == "degraded"
    assert body["lesson_id"] is None
    assert [(x["id"], x["path"]) for x in body["lessons"]] == [
        ("atlas-lesson-distributed-gradient-weighting", f"/learn/{GRADIENT}/"),
        (f"atlas-lesson-{FLOAT_SLUG}", f"/learn/{FLOAT_SLUG}/"),
        ("atlas-lesson-sharded-matmul-ownership", f"/learn/{SHARD}/"),
    ]
    skipped = {x["file"]: x["error"] for x in body["skipped"]}
    assert set(skipped) == {"bad-hash.json", "not-json.json", "zz-duplicate.json"}
    assert skipped["bad-hash.json"].startswith("field contentHash does not match content")
    assert all(str(Path("/")) not in error.split(":")[0] for error in skipped.values())


def test_a_bad_record_is_logged_and_the_rest_served(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="atlas"):
        settings = Settings(lesson_path=folder, confirm_enabled=False)
        with TestClient(create_app(settings)) as client:
            assert client.get(f"/learn/{SHARD}/").status_code == 200
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad-hash.json: field contentHash does not match content" in logged
    assert "not-json.json: not a JSON lesson record" in logged


def lab_of(soup: BeautifulSoup) -> Tag | None:
    lab = soup.find(id="lab")
    return lab if isinstance(lab, Tag) else None


def test_each_lesson_shows_only_its_own_parts(course: TestClient) -> None:
    gradient = page_soup(course, f"/learn/{GRADIENT}/")
    lab = lab_of(gradient)
    assert lab is not None
    assert text(lab.h2) == "Gradient lab"
    assert lab.find(id="lab-form") is not None
    assert lab.find(id="ring") is not None
    assert gradient.find("nav", class_="toc").find("a", href="#lab") is not None

    sharded = page_soup(course, f"/learn/{SHARD}/")
    ring_lab = lab_of(sharded)
    assert ring_lab is not None
    assert text(ring_lab.h2) == "Ring all-reduce lab"
    assert ring_lab.find(id="lab-form") is None  # no gradient lab
    assert ring_lab.find(id="confirm") is None  # no torch confirmation
    assert "count" not in text(ring_lab).lower()  # nothing about the gradient's count N
    assert "Gradient lab" not in text(sharded)
    # After the section that cites the ring lab, and listed there in the contents.
    cited = sharded.find(id="section-14")
    assert cited is not None
    assert cited.parent.find_next_sibling() is ring_lab
    toc = [str(a["href"]) for a in sharded.find("nav", class_="toc").find_all("a")]
    assert toc.index("#lab") == toc.index("#section-14") + 1
    assert text(sharded.title) == (
        "Sharded matrix multiplication and result ownership · Atlas lesson"
    )

    floating = page_soup(course, f"/learn/{FLOAT_SLUG}/")
    assert lab_of(floating) is None
    assert floating.find("nav", class_="toc").find("a", href="#lab") is None


def test_the_lab_urls_live_under_their_lesson(course: TestClient) -> None:
    query = "counts=2,6&means=1,3&eta=0.1&w=10"
    answer = course.get(f"/learn/{GRADIENT}/lab?{query}", headers={"HX-Request": "true"})
    assert answer.status_code == 200
    assert "2.5" in answer.text
    assert answer.headers["X-Lab-Url"].startswith(f"/learn/{GRADIENT}/?")
    form = page_soup(course, f"/learn/{GRADIENT}/").find(id="lab-form")
    # Paths under the lesson's own address (relative: nothing rendered names the Host).
    assert form["action"].startswith(f"/learn/{GRADIENT}/")
    assert str(form["hx-get"]).startswith(f"/learn/{GRADIENT}/lab")
    api = course.post(
        f"/learn/{GRADIENT}/api/gradient",
        json={"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10},
    )
    assert api.status_code == 200
    assert api.json()["global_gradient"] == 2.5  # (2·1 + 6·3) / 8
    # Nothing of the gradient lab outside its lesson.
    assert course.get(f"/lab?{query}").status_code == 404
    assert course.get(f"/learn/{FLOAT_SLUG}/lab?{query}").status_code == 404
    ring = course.get(
        f"/learn/{SHARD}/lab/ring?ring_mb=100&ring_p=8&ring_us=5&ring_gbps=100",
        headers={"HX-Request": "true"},
    )
    assert ring.status_code == 200
    assert "count" not in ring.text.lower()


def test_continue_exploring_links_go_to_the_local_copy(course: TestClient) -> None:
    page_url = f"/learn/{SHARD}/"
    soup = page_soup(course, page_url)
    link = soup.find("a", string="Floating-point reductions and compiler permissions")
    assert isinstance(link, Tag)
    assert link["href"] == f"../{FLOAT_SLUG}/"
    target = urljoin(page_url, str(link["href"]))
    assert target == f"/learn/{FLOAT_SLUG}/"
    assert course.get(target).status_code == 200
    other = soup.find("a", string="Collective communication library")
    assert isinstance(other, Tag)
    assert other["href"] == "https://semiaifoundry.com/learn/atlas/nccl/"


def test_quiz_scores_are_kept_per_lesson(course: TestClient) -> None:
    course.cookies.clear()
    answer = course.post(f"/learn/{SHARD}/quiz", data={"question": "section-12", "choice": "2"})
    assert answer.status_code == 200
    cookie = next(c for c in course.cookies.jar if c.name == SCORE_COOKIE)
    assert cookie.path == f"/learn/{SHARD}/"
    shard_score = page_soup(course, f"/learn/{SHARD}/").find(id="quiz-score")
    assert "1 of 3 correct" in text(shard_score)
    gradient_score = page_soup(course, f"/learn/{GRADIENT}/").find(id="quiz-score")
    assert "0 of 3 correct" in text(gradient_score)
    course.cookies.clear()


def test_a_quiz_answer_without_javascript_returns_to_its_lesson(course: TestClient) -> None:
    course.cookies.clear()
    answer = course.post(
        f"/learn/{SHARD}/quiz",
        data={"question": "section-12", "choice": "2"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/learn/{SHARD}/#section-12"
    page = page_soup(course, answer.headers["location"].split("#")[0])
    assert page.find(id="section-12") is not None
    assert "1 of 3 correct" in text(page.find(id="quiz-score"))
    course.cookies.clear()


def test_a_lessons_address_without_its_slash_redirects_here(course: TestClient) -> None:
    answer = course.get(f"/learn/{SHARD}", headers={"Host": "evil.example"}, follow_redirects=False)
    assert answer.status_code == 307
    assert answer.headers["location"] == f"/learn/{SHARD}/"


def test_one_openapi_lists_each_lessons_operations_under_its_address(course: TestClient) -> None:
    schema = course.get("/openapi.json").json()
    assert schema["info"]["title"] == "Atlas lessons: 3 served"
    paths = set(schema["paths"])
    assert {
        "/",
        "/healthz",
        f"/learn/{GRADIENT}/",
        f"/learn/{SHARD}/",
        f"/learn/{SHARD}/lab",
    } <= paths
    # Only the parts a lesson has: the gradient lab's API is the gradient lesson's alone.
    assert {f"/learn/{GRADIENT}/api/gradient", f"/learn/{GRADIENT}/lab/confirm"} <= paths
    assert not any(
        p.startswith((f"/learn/{SHARD}/api/", f"/learn/{FLOAT_SLUG}/lab")) for p in paths
    )
    assert course.get(f"/learn/{SHARD}/openapi.json").status_code == 404


def test_a_single_lesson_without_the_gradient_lab_at_the_root() -> None:
    settings = Settings(lesson_path=SHARDED, confirm_enabled=False)
    with TestClient(create_app(settings)) as client:
        soup = page_soup(client)
        lab = lab_of(soup)
        assert lab is not None
        assert lab.find(id="lab-form") is None
        assert client.get("/api/gradient?counts=2,6&means=1,3").status_code == 404
        assert client.get("/healthz").json()["lesson_id"] == (
            "atlas-lesson-sharded-matmul-ownership"
        )
        title = client.get("/openapi.json").json()["info"]["title"]
        assert title == "Atlas lab: Sharded matrix multiplication and result ownership"
        link = soup.find("a", string="Floating-point reductions and compiler permissions")
        assert link["href"] == f"https://semiaifoundry.com/learn/atlas/{FLOAT_SLUG}/"


def test_one_api_docs_page_and_one_static_folder_serve_every_lesson(course: TestClient) -> None:
    page = page_soup(course, "/docs")
    root = page.find(id="swagger-ui")
    assert root is not None
    assert root["data-openapi-url"] == "/openapi.json"
    for script in page.find_all("script"):
        assert str(script["src"]).startswith("/static/")
    lesson = page_soup(course, f"/learn/{GRADIENT}/")
    assets = [str(tag["src"]) for tag in lesson.find_all("script")]
    assets += [str(tag["href"]) for tag in lesson.find_all("link", rel="stylesheet")]
    assert assets
    assert all(asset.startswith("/static/") for asset in assets)
    assert course.get(assets[0]).status_code == 200
    for gone in ("docs", "openapi.json", assets[0].removeprefix("/")):
        assert course.get(f"/learn/{GRADIENT}/{gone}").status_code == 404


def test_head_answers_the_index_and_each_lesson_as_get_does(course: TestClient) -> None:
    # (TestClient drops a HEAD's body itself: the headers are what a HEAD can get wrong.)
    plain = {"Accept-Encoding": "identity"}
    for path in ("/", f"/learn/{GRADIENT}/"):
        response = course.head(path, headers=plain)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        got = course.get(path, headers=plain)
        assert response.headers["content-length"] == str(len(got.content))
