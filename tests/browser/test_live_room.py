"""The room's instruments in real Chromium, with 30 students answering through real HTTP: the
dashboard's first screen at 1280 x 800 holds what the instructor acts on (the join code and QR,
the counts, the current question with its live bars, the pacing controls); the projector fits a
16:9 screen at 1920 x 1080 and 1280 x 720 for each of the lesson's questions, the code and QR
beside it; no page scrolls sideways from 1024 to 2560 px; the pacing keys act (not while typing
in a field, nor once turned off) and are named in aria-keyshortcuts; axe finds nothing serious.
The screenshots in docs/classroom.md are taken here: into tests/artifacts/ on every run, and into
docs/ with ``ATLAS_DOCS_SCREENSHOTS=1`` (so that a test run leaves the checkout as it was)."""

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from app.lesson.quiz import Question
from bench._http import TLS
from tests.browser import test_lesson_page
from tests.browser.test_live import LIVE_S, Classroom, ask, join, serious, start_class
from tests.conftest import ARTIFACTS, ROOT
from tests.test_live import questions

pytestmark = pytest.mark.browser
isolated = test_lesson_page.isolated

STUDENTS = 30
ANSWERING = 20  # of them, so some are still to answer
DASHBOARD = {"width": 1280, "height": 800}
PROJECTORS = [{"width": 1920, "height": 1080}, {"width": 1280, "height": 720}]
WIDTHS = [1024, 1100, 1200, 1280, 1440, 1920, 2560]
KEYS = {"N": "Ask", "P": "Pause answering", "O": "Open answering", "R": "Reveal the answer"}
# Where the screenshots of docs/classroom.md go: docs/ itself only when asked for.
SHOTS = ROOT / "docs" if os.environ.get("ATLAS_DOCS_SCREENSHOTS") == "1" else ARTIFACTS

# Inside the viewport: not cut by its edges, not hidden (CSP forbids eval, not evaluate).
IN_VIEW = """(selector) => [...document.querySelectorAll(selector)].map((element) => {
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && box.left >= 0 && box.top >= 0
        && box.right <= window.innerWidth && box.bottom <= window.innerHeight;
})"""


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Classroom]:
    from bench._servers import free_port

    classroom = Classroom(tmp_path_factory.mktemp("room") / "data", free_port())
    classroom.start()
    try:
        yield classroom
    finally:
        classroom.stop()


class Students:
    """The class's students, each an HTTP client with their own cookie."""

    def __init__(self, url: str, code: str) -> None:
        self.code = code
        # A phone lets an idle connection go well before the server does: the server closes it
        # after 5 s idle (ATLAS_KEEP_ALIVE_S), and httpx's own default is those same 5 s, so a
        # request sent after a gap that long can meet the server's close (CI: "Server
        # disconnected without sending a response" on a student's second request).
        idle = httpx.Limits(keepalive_expiry=1.0)
        self.clients = [
            httpx.Client(base_url=url, limits=idle, verify=TLS) for _ in range(STUDENTS)
        ]
        for n, client in enumerate(self.clients):
            joined = client.post("/join", data={"code": code, "nickname": f"Student {n:02}"})
            assert joined.status_code == 303, joined.text[:200]

    def answer(self, question: Question) -> dict[str, int]:
        """The first ``ANSWERING`` answer (most of them right); the count each option has."""
        counts = {str(number): 0 for number, _ in question.choices}
        for n, client in enumerate(self.clients[:ANSWERING]):
            option = question.answer_number if n % 3 else 1 + n % len(question.choices)
            sent = client.post(
                f"/class/{self.code}/answer", data={"question": question.id, "choice": option}
            )
            assert sent.status_code == 303, sent.text[:200]
            counts[str(option)] += 1
        return counts

    def share(self, n: int) -> None:
        state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
        assert self.clients[n].post(f"/class/{self.code}/share", data=state).status_code == 303

    def close(self) -> None:
        for client in self.clients:
            client.close()


@pytest.fixture
def hosted(isolated: Any, room: Classroom) -> Iterator[tuple[Any, Students]]:
    """A class of ``STUDENTS`` and its dashboard at 1280 x 800."""
    host = isolated(viewport=DASHBOARD)
    students = Students(room.url, start_class(host, room.url))
    try:
        yield host, students
    finally:
        students.close()


def in_view(page: Any, selector: str) -> list[bool]:
    shown: list[bool] = page.evaluate(IN_VIEW, selector)
    assert shown, f"no {selector} on the page"
    return shown


def no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def shows_counts(page: Any, counts: dict[str, int]) -> None:
    for option, count in counts.items():
        expect(page.locator(f"[data-choice='{option}']")).to_have_attribute(
            "data-count", str(count), timeout=LIVE_S
        )


def screenshot(page: Any, name: str) -> None:
    page.evaluate("document.fonts.ready")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name))


def test_the_dashboards_first_screen_holds_what_the_instructor_acts_on(
    hosted: tuple[Any, Students],
) -> None:
    host, students = hosted
    students.share(3)
    expect(host.locator("#participant-count")).to_have_text(str(STUDENTS), timeout=LIVE_S)
    for question in questions():
        ask(host, question.id)
        counts = students.answer(question)
        expect(host.locator("#answer-count")).to_have_text(str(ANSWERING), timeout=LIVE_S)
        shows_counts(host, counts)
        expect(host.locator("#current-question")).to_contain_text(f"{question.number}. ")
        first_screen = [
            "#join-code",
            "#join-qr svg",
            "#participant-count",
            "#current-question",
            "#host-now [data-choice]",
            "#answer-count",
            "#question",
            "button[aria-keyshortcuts]",
        ]
        for selector in first_screen:
            assert all(in_view(host, selector)), (question.number, selector)
        # The students: counted, and those who need attention listed first (the one who shared
        # a lab state, then those still to answer), a dozen of them.
        expect(host.locator("[data-filter=waiting] .live-number")).to_have_text(
            str(STUDENTS - ANSWERING)
        )
        rows = host.locator("#roster-rows tr")
        expect(rows).to_have_count(12)
        expect(rows.first.locator("th")).to_have_text("Student 03")
        expect(rows.nth(1).locator("td").first).to_have_text("—")
        if question.number == 1:
            screenshot(host, "classroom-dashboard.png")
    assert no_sideways_scroll(host)


def test_no_page_scrolls_sideways_from_1024_to_2560_px(
    hosted: tuple[Any, Students], room: Classroom
) -> None:
    host, students = hosted
    first = questions()[0]
    ask(host, first.id)
    students.answer(first)
    students.share(3)  # the picture of the class's lab states, with its table of ranges
    code = students.code
    for path in ("host", "screen", "students", "students?show=waiting"):
        host.goto(f"{room.url}/class/{code}/{path}")
        for width in WIDTHS:
            host.set_viewport_size({"width": width, "height": 900})
            assert no_sideways_scroll(host), (path, width)
            if path == "host" and width >= DASHBOARD["width"]:
                # The table of ranges stays inside its column (it once spilled over the next).
                fits = (
                    "(e => e.scrollWidth <= e.clientWidth)(document.querySelector('#class-labs'))"
                )
                assert host.evaluate(fits), width


def test_the_projector_fits_each_question_with_its_bars_and_the_join_code(
    isolated: Any, hosted: tuple[Any, Students], room: Classroom
) -> None:
    host, students = hosted
    # Two projectors: the instructor's laptop and a classroom PC opened with the view-only
    # projector link (one device has one projector stream: its newer page closes the older).
    laptop, classroom_pc = host.context.new_page(), isolated(viewport=PROJECTORS[1])
    classroom_pc.goto(str(host.locator("#screen-url").get_attribute("value")))
    expect(classroom_pc.locator("#join-code")).to_have_text(students.code)
    screens = [laptop, classroom_pc]
    for screen, size in zip(screens, PROJECTORS, strict=True):
        screen.set_viewport_size(size)
        screen.goto(f"{room.url}/class/{students.code}/screen")
        expect(screen.locator("#join-code")).to_have_text(students.code)
    # The instructor looks at one tab at a time (Chromium draws frames at full rate for the tab
    # in front only; a tab behind gets about one a second, and every action waits for two).
    host.bring_to_front()
    host.locator("button[aria-keyshortcuts=S]").click()  # results on the projector as they come
    expect(host.locator("button[aria-keyshortcuts=S]")).to_contain_text("hide results")
    for question in questions():
        host.bring_to_front()
        ask(host, question.id)
        counts = students.answer(question)
        for screen, size in zip(screens, PROJECTORS, strict=True):
            screen.bring_to_front()
            shows_counts(screen, counts)
            expect(screen.locator("#current-question")).to_contain_text(f"{question.number}. ")
            for selector in ("#current-question", "[data-choice]", ".live-bar-track"):
                assert all(in_view(screen, selector)), (size, question.number, selector)
            for selector in ("#join-code", "#join-qr svg"):
                assert all(in_view(screen, selector)), (size, question.number, selector)
            assert no_sideways_scroll(screen)
            if question.number == 1:
                screenshot(screen, f"classroom-projector-{size['width']}.png")
    # The answer revealed: the bars stay, marked.
    host.bring_to_front()
    host.get_by_role("button", name="Reveal the answer").click()
    for screen in screens:
        screen.bring_to_front()
        expect(screen.locator(".live-bar-correct")).to_have_count(1, timeout=LIVE_S)
        assert all(in_view(screen, "[data-choice]"))
    laptop.bring_to_front()
    assert serious(laptop) == []


def test_the_projector_goes_full_screen_from_its_button_and_its_key(
    hosted: tuple[Any, Students], room: Classroom
) -> None:
    host, students = hosted
    screen = host.context.new_page()
    screen.set_viewport_size(PROJECTORS[1])
    screen.goto(f"{room.url}/class/{students.code}/screen")
    button = screen.get_by_role("button", name="Full screen")
    expect(button).to_have_attribute("aria-keyshortcuts", "F")
    expect(button).to_be_visible()
    changed = "() => new Promise((done) => document.addEventListener('fullscreenchange',"
    changed += " () => done(document.fullscreenElement !== null), {once: true}))"
    screen.evaluate(f"() => {{ window.changed = ({changed})(); }}")
    button.click()
    assert screen.evaluate("window.changed") is True
    expect(screen.get_by_role("button", name="Leave full screen")).to_be_visible()
    screen.evaluate(f"() => {{ window.changed = ({changed})(); }}")
    screen.keyboard.press("f")
    assert screen.evaluate("window.changed") is False


def test_the_pacing_keys_act_are_named_and_wait_while_typing(
    hosted: tuple[Any, Students],
) -> None:
    host, _ = hosted
    first, second = questions()[:2]
    with host.expect_navigation():  # the ask is a form posted: the dashboard loads again
        ask(host, first.id)
    expect(host.locator("#current-question")).to_contain_text(f"{first.number}. ")
    for key, name in KEYS.items():
        button = host.get_by_role("button", name=name, exact=True)
        expect(button).to_have_attribute("aria-keyshortcuts", key)
        expect(button.locator(".live-key")).to_have_text(key)
        expect(button.locator(".live-key")).to_be_visible()
    # The commands the page sends (POSTs), not what it reads: its stream may open again (a
    # page loaded after the ask, a reconnect under load) without any key pressed.
    posted: list[str] = []

    def commands(request: Any) -> None:
        if request.method == "POST":
            posted.append(request.url.rsplit("/", 1)[-1])

    host.on("request", commands)
    state = host.locator("#host-now .live-state")

    host.locator("#host-now").click()  # the keyboard on the page, not in a field
    host.keyboard.press("p")
    expect(state).to_contain_text("paused", timeout=LIVE_S)
    # Typed into a field: letters, not commands.
    host.locator("#lab-counts").fill("")
    host.locator("#lab-counts").press_sequentially("rop")
    expect(host.locator("#lab-counts")).to_have_value("rop")
    assert posted == ["pause"]
    host.locator("#host-now").click()
    host.keyboard.press("o")
    expect(state).to_contain_text("open", timeout=LIVE_S)
    # Turned off: a key is a key.
    host.locator("#keys-on").uncheck()
    host.locator("#host-now").click()
    host.keyboard.press("r")
    expect(host.locator("button[aria-keyshortcuts=R] .live-key")).to_be_hidden()
    host.locator("#keys-on").check()
    host.locator("#host-now").click()
    host.keyboard.press("r")
    expect(state).to_contain_text("revealed", timeout=LIVE_S)
    assert posted == ["pause", "resume", "reveal"]
    # N asks the question the picker shows: the next one.
    host.keyboard.press("n")
    expect(host.locator("#current-question")).to_contain_text(f"{second.number}. ")


def test_a_phone_joins_and_answers_and_the_students_page_is_accessible(
    isolated: Any, hosted: tuple[Any, Students], room: Classroom
) -> None:
    host, students = hosted
    first = questions()[0]
    ask(host, first.id)
    phone = isolated(viewport={"width": 390, "height": 844})
    join(phone, room.url, students.code, "Ada")
    expect(phone.locator("#class-question input[name=question]")).to_have_value(first.id)
    phone.locator(f"#class-question input[name=choice][value='{first.answer_number}']").check()
    phone.get_by_role("button", name="Send my answer").click()
    expect(phone.locator(".live-note")).to_contain_text(f"option {first.answer_number}")
    assert no_sideways_scroll(phone)
    screenshot(phone, "classroom-phone.png")
    # The whole roster, a page of its own, and only those still to answer.
    host.goto(f"{room.url}/class/{students.code}/students?show=waiting")
    expect(host.locator("#roster-rows tr")).to_have_count(STUDENTS)
    assert serious(host) == []
