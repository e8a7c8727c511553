"""The error page in real Chromium: a 404 in the site's layout, accessible in light and dark, on a
phone without sideways scrolling, with a link home that leads to the lesson, JavaScript or not."""

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

from app.lesson.loader import load_lesson
from app.settings import DEFAULT_LESSON
from tests.browser.test_lesson_page import DESKTOP, PHONE, ConsoleLog, isolated
from tests.conftest import LiveServer

pytestmark = pytest.mark.browser
__all__ = ["isolated"]  # the fixture, used here by name

LESSON_TITLE = load_lesson(DEFAULT_LESSON).record.title


def not_found(console: ConsoleLog) -> list[str]:
    """The console's errors, less Chromium's own note that the document answered 404."""
    return [error for error in console.errors if "404" not in error]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_404_page_is_accessible(isolated: Any, live_server: LiveServer, scheme: str) -> None:
    page = isolated(viewport=DESKTOP, color_scheme=scheme)
    console = ConsoleLog(page)
    response = page.goto(f"{live_server.url}/no-such-page")
    assert response is not None
    assert response.status == 404
    assert page.title().startswith("404 ")
    assert page.locator("h1").inner_text() == "Not Found"
    results = Axe().run(page)
    assert [v["id"] for v in results.response["violations"]] == []
    assert not_found(console) == []


@pytest.mark.parametrize("javascript", [True, False])
def test_the_way_home_leads_to_the_lesson(
    isolated: Any, live_server: LiveServer, javascript: bool
) -> None:
    page = isolated(viewport=PHONE, color_scheme="light", java_script_enabled=javascript)
    page.goto(f"{live_server.url}/no-such-page/{'x' * 300}")
    widths = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], "the page scrolls sideways"
    page.get_by_role("link", name="Go to the lesson").click()
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("h1").inner_text() == LESSON_TITLE
