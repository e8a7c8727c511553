"""No network at all: every page works with every request off 127.0.0.1 blocked.

The ``page`` fixture aborts and records any request that leaves loopback and fails the test if
one was attempted; here each test also checks that every loopback request succeeded, that the
document names no other host for anything it loads, and that the browser logged no error (a
blocked font, script or style would show there as well).
"""

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.settings import Settings
from tests.conftest import LiveServer, OffHostLog

pytestmark = pytest.mark.browser

LAB = "counts=2,6&means=1,3&eta=0.1&w=10"

# Every URL the document and its style sheets load from: elements with a source, links that
# fetch (style sheets, preloads, icons), and url(...) inside the rules of same-origin sheets.
SUBRESOURCES = """
() => {
  const urls = [];
  for (const el of document.querySelectorAll("[src], link[href]")) {
    const rel = el.getAttribute("rel") || "";
    if (el.tagName === "LINK" && !/stylesheet|preload|icon|modulepreload|manifest/.test(rel)) {
      continue;
    }
    urls.push(el.src || el.href);
  }
  for (const sheet of document.styleSheets) {
    for (const rule of sheet.cssRules) {
      for (const match of rule.cssText.matchAll(/url\\(["']?([^"')]+)/g)) {
        urls.push(new URL(match[1], sheet.href || document.baseURI).href);
      }
    }
  }
  return urls;
}
"""


@dataclass
class Traffic:
    """What the page asked for over loopback, and what failed."""

    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> "Traffic":
        page.on("requestfinished", lambda request: self.loaded.append(request.url))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        return self

    def _failed(self, request: Any) -> None:
        self.failed.append(f"{request.url}: {request.failure}")

    def _response(self, response: Any) -> None:
        # 422 is the lab's answer to an input it cannot compute; nothing here sends one.
        if response.status >= 400:
            self.failed.append(f"{response.url}: HTTP {response.status}")


def assert_self_contained(page: Any, server: LiveServer, traffic: Traffic, off: OffHostLog) -> None:
    origin = urlsplit(server.url).netloc
    foreign = [url for url in page.evaluate(SUBRESOURCES) if urlsplit(url).netloc != origin]
    assert foreign == [], f"the document loads from other hosts: {foreign}"
    assert off.urls == [], f"requests left 127.0.0.1: {off.urls}"
    assert traffic.failed == []
    assert traffic.errors == []


def test_lesson_page_loads_everything_from_this_server(
    page: Any, live_server: LiveServer, off_host: OffHostLog
) -> None:
    traffic = Traffic().watch(page)
    page.goto(f"{live_server.url}/", wait_until="networkidle")
    page.evaluate("document.fonts.ready")
    assert page.evaluate("typeof window.htmx") == "object", "htmx did not load"
    fonts = page.evaluate("[...document.fonts].map(f => f.status)")
    assert "loaded" in fonts
    assert "error" not in fonts
    assert page.locator("math").count() > 0
    kinds = {urlsplit(url).path.rsplit(".", 1)[-1] for url in traffic.loaded}
    assert {"css", "js", "woff2"} <= kinds, f"expected styles, scripts and a font: {kinds}"
    assert_self_contained(page, live_server, traffic, off_host)


def test_lab_updates_with_no_network(
    page: Any, live_server: LiveServer, off_host: OffHostLog
) -> None:
    traffic = Traffic().watch(page)
    page.goto(f"{live_server.url}/?{LAB}#lab", wait_until="networkidle")
    g = page.locator('#lab [data-value="g"]')
    expect(g).to_have_text("2.5")
    page.get_by_role("spinbutton", name="rank 1 count", exact=True).fill("2")
    # Equal counts: the global item mean is the plain mean of the rank means, (1 + 3) / 2.
    expect(g).to_have_text("2")
    page.wait_for_url("**/?counts=2,2&means=1,3&eta=0.1&w=10#lab")
    assert any(urlsplit(url).path == "/lab" for url in traffic.loaded), "no htmx request ran"
    assert_self_contained(page, live_server, traffic, off_host)


def test_quiz_answer_with_no_network(
    page: Any, live_server: LiveServer, off_host: OffHostLog
) -> None:
    lesson = render_lesson(load_lesson(Settings().lesson_path))
    question = lesson.questions[0].question
    traffic = Traffic().watch(page)
    page.goto(f"{live_server.url}/", wait_until="networkidle")
    quiz = page.locator(f"#quiz-{question.id}")
    quiz.locator(f'input[name="choice"][value="{question.answer_number}"]').check()
    quiz.get_by_role("button", name="Check answer").click()
    expect(page.locator(f"#feedback-{question.id} .verdict-correct")).to_be_visible()
    expect(page.locator("#quiz-score")).to_contain_text(f"1 of {len(lesson.questions)} correct")
    assert f"{live_server.url}/quiz" in traffic.loaded, "the answer did not go through htmx"
    assert_self_contained(page, live_server, traffic, off_host)
