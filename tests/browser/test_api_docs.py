"""/docs offline and under the CSP; same-origin state changes refused when another site posts."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from app.lesson.loader import load_lesson
from app.lesson.render import render_lesson
from app.settings import Settings
from tests.browser.test_offline import SUBRESOURCES, Traffic
from tests.conftest import LiveServer, OffHostLog, free_port

pytestmark = pytest.mark.browser


def test_api_docs_render_every_operation_with_no_network(
    page: Any, live_server: LiveServer, off_host: OffHostLog
) -> None:
    traffic = Traffic().watch(page)
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.goto(f"{live_server.url}/docs", wait_until="networkidle")
    paths = page.locator(".opblock-summary-path")
    expect(paths.first).to_be_visible(timeout=15_000)
    shown = set(paths.all_inner_texts())
    assert {"/api/gradient", "/api/confirm", "/api/confirm/status", "/healthz", "/quiz"} <= {
        text.replace("\u200b", "") for text in shown
    }, shown
    # Run the lesson's example through "Try it out": a same-origin POST from the docs page.
    gradient = page.locator("#operations-api-gradient_api_gradient_post")
    gradient.locator(".opblock-summary").click()
    gradient.get_by_role("button", name="Try it out").click()
    gradient.get_by_role("button", name="Execute").click()
    body = gradient.locator(".live-responses-table .response-col_description pre").first
    expect(body).to_contain_text('"global_gradient": 2.5', timeout=15_000)
    assert violations == []
    # Swagger UI's icons are data: URIs inside its style sheet; everything else is this server.
    origin = urlsplit(live_server.url).netloc
    loads = [url for url in page.evaluate(SUBRESOURCES) if not url.startswith("data:")]
    assert [url for url in loads if urlsplit(url).netloc != origin] == []
    assert off_host.urls == []
    assert traffic.failed == []
    assert traffic.errors == []


ATTACK = """<!doctype html><title>prize</title>
<form method="post" action="{target}/quiz">
  <input name="question" value="{question}"><input name="choice" value="{choice}">
</form>
<script>document.forms[0].submit()</script>"""


@pytest.fixture
def other_site(live_server: LiveServer) -> Iterator[str]:
    """A page on another port (another origin, same site) that posts a quiz answer to the lab."""
    question = render_lesson(load_lesson(Settings().lesson_path)).questions[0].question
    html = ATTACK.format(
        target=live_server.url, question=question.id, choice=question.answer_number
    ).encode()

    class Attacker(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Attacker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_form_posted_from_another_site_is_refused(
    page: Any, live_server: LiveServer, other_site: str
) -> None:
    with page.expect_navigation(url=f"{live_server.url}/quiz"):
        page.goto(other_site)
    assert "Cross-site request refused" in page.content()
    assert page.context.cookies(live_server.url) == [], "the score cookie was set"
