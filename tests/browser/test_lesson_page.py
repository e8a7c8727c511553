"""The lesson page in real Chromium: math, quizzes with and without JavaScript, a11y, layout."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

from app.lesson.loader import load_lesson
from app.settings import DEFAULT_LESSON
from tests.conftest import LiveServer, OffHostLog, new_page
from tests.records import parse_questions

pytestmark = pytest.mark.browser

QUESTIONS = parse_questions(load_lesson(DEFAULT_LESSON).sections)
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


class ConsoleLog:
    """Console errors and uncaught exceptions of one page (a CSP violation is a console error)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning") and "Content Security Policy" in message.text:
            self.errors.append(f"csp: {message.text}")
        elif message.type == "error":
            self.errors.append(message.text)


@pytest.fixture
def isolated(browser: Any, off_host: OffHostLog) -> Iterator[Any]:
    """Opens pages in fresh contexts (own cookies); fails if any request left 127.0.0.1."""
    contexts: list[Any] = []

    def open_page(**context_args: Any) -> Any:
        opened = new_page(browser, off_host, **context_args)
        contexts.append(opened.context)
        return opened

    yield open_page
    for context in contexts:
        context.close()
    assert off_host.urls == [], f"requests left 127.0.0.1: {off_host.urls}"


def choose_and_check(page: Any, question_id: str, option: int) -> None:
    box = page.locator(f"#quiz-{question_id}")
    box.locator(f"input[name=choice][value='{option}']").check()
    box.get_by_role("button", name="Check answer").click()


def wrong_option(index: int) -> int:
    question = QUESTIONS[index]
    return next(n for n, _ in question.choices if n != question.answer_number)


def test_math_is_laid_out_with_the_vendored_font(
    page: Any, live_server: LiveServer, artifacts: Path
) -> None:
    console = ConsoleLog(page)
    page.emulate_media(reduced_motion="reduce")  # scroll at once, so the screenshot is settled
    page.goto(f"{live_server.url}/")
    page.evaluate("document.fonts.ready")
    statuses = page.evaluate(
        "[...document.fonts].filter(f => f.family.includes('STIX Two Math')).map(f => f.status)"
    )
    assert statuses == ["loaded"]
    assert page.evaluate("document.fonts.check('20px \"STIX Two Math\"')")
    first = page.locator("math[display=block]").first
    fraction = first.locator("mfrac").first.bounding_box()
    letter = first.locator("mi").first.bounding_box()
    total = first.locator("munderover").first.bounding_box()
    assert fraction is not None
    assert letter is not None
    assert total is not None
    # Real MathML layout: the fraction stacks two rows, the sum carries limits above and below.
    assert fraction["height"] > 1.6 * letter["height"]
    assert total["height"] > 2.0 * letter["height"]
    family = page.evaluate("getComputedStyle(document.querySelector('math')).fontFamily")
    assert "STIX Two Math" in family
    page.locator("#section-4").scroll_into_view_if_needed()
    page.locator("#section-3").evaluate("heading => heading.scrollIntoView()")
    page.screenshot(path=str(artifacts / "lesson-math-1280.png"))
    assert console.errors == []


def test_quiz_with_javascript_swaps_feedback_in_place(
    page: Any, live_server: LiveServer, artifacts: Path
) -> None:
    console = ConsoleLog(page)
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{live_server.url}/")
    page.evaluate("window.notReloaded = true")
    # Nothing chosen: the browser's own validation stops the request.
    page.locator("#quiz-section-11").get_by_role("button", name="Check answer").click()
    assert page.locator("#feedback-section-11").inner_text() == ""
    for index, question in enumerate(QUESTIONS):
        feedback = page.locator(f"#feedback-{question.id}")
        choose_and_check(page, question.id, wrong_option(index))
        # A second try before the answer is shown.
        feedback.locator(".verdict-retry").wait_for()
        assert f"“{question.answer}”" not in feedback.inner_text()
        assert question.reasoning.split("\n")[0] not in feedback.inner_text()
        choose_and_check(page, question.id, question.answer_number)
        feedback.locator(".verdict-correct").wait_for()
        assert "on try 2" in feedback.inner_text()
        assert question.reasoning.split("\n")[0] in feedback.inner_text()
        assert feedback.locator(".verdict-retry").count() == 0
        # Focus stays on the button that was pressed, so a keyboard user is not thrown back.
        focused = page.evaluate("document.activeElement.closest('.quiz')?.id")
        assert focused == f"quiz-{question.id}"
    assert page.evaluate("window.notReloaded") is True
    assert page.url == f"{live_server.url}/"
    score = page.locator("#quiz-score")
    # The score records the first answers, all wrong here.
    assert " ".join(score.inner_text().split()) == "Score: 0 of 3 correct"
    assert page.locator("#quiz-score").count() == 1
    page.locator("#section-10").evaluate("heading => heading.scrollIntoView()")
    page.screenshot(path=str(artifacts / "lesson-quiz-htmx-1280.png"))
    assert console.errors == []


def test_quiz_without_javascript_posts_the_whole_page(
    isolated: Any, live_server: LiveServer, artifacts: Path
) -> None:
    page = isolated(viewport=PHONE, java_script_enabled=False, reduced_motion="reduce")
    page.goto(f"{live_server.url}/")
    for index, question in enumerate(QUESTIONS):
        choose_and_check(page, question.id, wrong_option(index))
        # Post/redirect/get: the address is the lesson's, at the question, never /quiz.
        page.wait_for_url(f"{live_server.url}/#{question.id}")
        feedback = page.locator(f"#feedback-{question.id}")
        assert "Not quite." in feedback.inner_text()
        chosen = page.locator(f"#quiz-{question.id} input[name=choice]:checked")
        assert chosen.get_attribute("value") == str(wrong_option(index))
        if index == 0:
            page.locator(f"#quiz-{question.id}").get_by_role(
                "button", name="Show the answer"
            ).click()
            page.wait_for_url(f"{live_server.url}/#{question.id}")
            assert f"The answer is “{question.answer}”" in feedback.inner_text()
        choose_and_check(page, question.id, question.answer_number)
        page.wait_for_url(f"{live_server.url}/#{question.id}")
        assert "Correct, on try 2." in page.locator(f"#feedback-{question.id}").inner_text()
    page.screenshot(path=str(artifacts / "lesson-quiz-nojs-390.png"))
    # A reload keeps every question's feedback; the score counts the first answers.
    page.goto(f"{live_server.url}/")
    score = " ".join(page.locator("#quiz-score").inner_text().split())
    assert score == "Score: 0 of 3 correct"
    assert page.locator(".verdict-correct").count() == 3


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_accessibility_violations(
    isolated: Any, live_server: LiveServer, scheme: str
) -> None:
    page = isolated(viewport=DESKTOP, color_scheme=scheme)
    page.goto(f"{live_server.url}/")
    # With feedback showing too: the verdict colours must keep their contrast.
    choose_and_check(page, "section-11", wrong_option(0))
    page.locator("#feedback-section-11 .verdict").wait_for()
    choose_and_check(page, "section-12", QUESTIONS[1].answer_number)
    page.locator("#feedback-section-12 .verdict").wait_for()
    results = Axe().run(page)
    serious = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == [], serious


def test_phone_width_has_no_horizontal_scroll(
    isolated: Any, live_server: LiveServer, artifacts: Path
) -> None:
    page = isolated(viewport=PHONE, color_scheme="light")
    console = ConsoleLog(page)
    page.goto(f"{live_server.url}/")
    widths = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    # Wide content scrolls inside its own box instead.
    for selector in (".math-display", ".table-scroll"):
        overflow = page.evaluate(
            "s => [...document.querySelectorAll(s)].map(e => getComputedStyle(e).overflowX)",
            selector,
        )
        assert overflow, selector
        assert set(overflow) == {"auto"}, selector
    page.screenshot(path=str(artifacts / "lesson-390.png"), full_page=True)
    assert console.errors == []


def test_desktop_and_dark_screenshots(
    isolated: Any, live_server: LiveServer, artifacts: Path
) -> None:
    light = isolated(viewport=DESKTOP, color_scheme="light")
    light.goto(f"{live_server.url}/")
    light.screenshot(path=str(artifacts / "lesson-1280.png"), full_page=True)
    dark = isolated(viewport=PHONE, color_scheme="dark")
    dark.goto(f"{live_server.url}/")
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 26)"
    dark.screenshot(path=str(artifacts / "lesson-390-dark.png"), full_page=True)


def test_print_hides_controls_and_navigation(isolated: Any, live_server: LiveServer) -> None:
    page = isolated(viewport=DESKTOP)
    page.goto(f"{live_server.url}/")
    page.emulate_media(media="print")
    hidden = page.evaluate(
        """() => ['.toc', '.skip-link', '#quiz-section-11 button', '#quiz-section-11 input',
                  '#quiz-score'].map(s => getComputedStyle(document.querySelector(s)).display)"""
    )
    assert hidden == ["none"] * 5
    assert page.locator("#section-11").is_visible()
    assert page.locator("math[display=block]").first.is_visible()
    assert page.locator("footer").is_visible()
