"""A course in real Chromium: the index and lessons without the gradient lab pass axe with no
violations, in light and dark; the ring panel alone answers under its lesson's address; a quiz
answered with htmx counts for its lesson only."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

from bench._servers import stop
from tests.browser import test_lesson_page
from tests.browser.test_lesson_page import ConsoleLog, choose_and_check
from tests.conftest import LiveServer, start_server
from tests.test_course import FLOAT_SLUG, course_folder

pytestmark = pytest.mark.browser

SHARD = "sharded-matmul-ownership"
GRADIENT = "distributed-gradient-weighting"
DESKTOP = {"width": 1280, "height": 900}
# Pages in fresh contexts (own cookies) that fail the test if a request leaves 127.0.0.1.
isolated = test_lesson_page.isolated
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def course_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder: Path = course_folder(tmp_path_factory.mktemp("course"))
    server = start_server({"ATLAS_LESSON_PATH": str(folder), "ATLAS_CONFIRM_ENABLED": "false"})
    try:
        yield server
    finally:
        stop(server)


def violations(page: Any) -> list[tuple[str, str, list[Any]]]:
    results = Axe().run(page)
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
        for v in results.response["violations"]
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", ["/", f"/learn/{FLOAT_SLUG}/", f"/learn/{SHARD}/"])
def test_no_accessibility_violations(
    isolated: Any, course_server: LiveServer, path: str, scheme: str
) -> None:
    page = isolated(viewport=DESKTOP, color_scheme=scheme)
    console = ConsoleLog(page)
    page.goto(f"{course_server.url}{path}")
    assert violations(page) == []
    assert console.errors == []


def test_index_leads_to_each_lesson(isolated: Any, course_server: LiveServer) -> None:
    page = isolated(viewport=PHONE, color_scheme="light")
    page.goto(f"{course_server.url}/")
    widths = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1]
    page.get_by_role("link", name="Sharded matrix multiplication and result ownership").click()
    page.wait_for_url(f"**/learn/{SHARD}/")
    assert page.locator("h1").inner_text() == "Sharded matrix multiplication and result ownership"
    page.get_by_role("link", name="Floating-point reductions and compiler permissions").click()
    page.wait_for_url(f"**/learn/{FLOAT_SLUG}/")
    assert page.locator("#lab").count() == 0


def test_ring_panel_alone_answers_under_its_lesson(
    isolated: Any, course_server: LiveServer
) -> None:
    page = isolated(viewport=DESKTOP, color_scheme="light")
    console = ConsoleLog(page)
    page.goto(f"{course_server.url}/learn/{SHARD}/")
    lab = page.locator("#lab")
    assert lab.locator("h2").inner_text() == "Ring all-reduce lab"
    assert lab.locator("#lab-form").count() == 0
    before = lab.locator("[data-value=ring-time]").inner_text()
    with page.expect_response(lambda r: f"/learn/{SHARD}/lab/ring" in r.url) as answer:
        page.fill("#ring-mb", "1000")
    assert answer.value.status == 200
    page.wait_for_function(
        "before => document.querySelector('[data-value=ring-time]').textContent !== before",
        arg=before,
    )
    assert "count" not in lab.inner_text().lower()
    assert violations(page) == []
    assert console.errors == []


def test_quiz_with_htmx_counts_for_its_lesson_only(
    isolated: Any, course_server: LiveServer
) -> None:
    page = isolated(viewport=DESKTOP, color_scheme="light")
    page.goto(f"{course_server.url}/learn/{SHARD}/")
    choose_and_check(page, "section-12", 2)
    feedback = page.locator("#feedback-section-12")
    feedback.locator(".verdict").wait_for()
    assert feedback.locator(".verdict").inner_text() == "Correct. The answer is “[43,50]”."
    assert "1 of 3 correct" in page.locator("#quiz-score").inner_text()
    page.goto(f"{course_server.url}/learn/{GRADIENT}/")
    assert "0 of 3 correct" in page.locator("#quiz-score").inner_text()
