"""A live class in real Chromium: an instructor and three students on phones; everything the
instructor does reaches the students' pages without a reload (htmx's SSE extension), and a
restarted server on the same data folder brings the stream back by itself. axe finds nothing
serious on the host's, a student's and the projector's pages."""

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from bench._servers import Server, free_port, launch, stop
from tests.browser import test_lesson_page
from tests.browser.test_lesson_page import ConsoleLog
from tests.conftest import INSTRUCTOR_PASSWORD
from tests.test_live import questions, wrong

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
KEY = "browser-live-key"
LIVE_S = 10_000  # ms: what "live" may take here, on a shared machine
# Pages in fresh contexts (own cookies) that fail the test if a request leaves 127.0.0.1.
isolated = test_lesson_page.isolated


@dataclass
class Classroom:
    data_dir: Path
    port: int
    server: Server | None = None
    workers: int = 1
    access_log: Path | None = None  # where the server's log goes, access log included
    settings: dict[str, str] = field(default_factory=dict)  # more ATLAS_… settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            **os.environ,
            "ATLAS_DATA_DIR": str(self.data_dir),
            "ATLAS_SECRET_KEY": KEY,
            "ATLAS_CONFIRM_ENABLED": "false",
            **self.settings,
        }
        command = [sys.executable, "-m", "app", "--port", str(self.port)]
        level = "info" if self.access_log else "warning"
        command += ["--workers", str(self.workers), "--log-level", level]
        with contextlib.ExitStack() as stack:
            log = stack.enter_context(self.access_log.open("ab")) if self.access_log else None
            self.server = launch(command, port=self.port, ready_path="/healthz", env=env, log=log)

    def stop(self) -> None:
        if self.server is not None:
            stop(self.server)
            self.server = None


@contextlib.contextmanager
def running(data_dir: Path, access_log: Path | None = None) -> Iterator[Classroom]:
    room = Classroom(data_dir, free_port(), access_log=access_log)
    room.start()
    try:
        yield room
    finally:
        room.stop()


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Classroom]:
    """One server for the module's tests that leave it running: each starts a class of its own
    (its own code, host and students), so none sees another's. Its log, access log included, is
    ``classroom.access_log``."""
    folder = tmp_path_factory.mktemp("classroom")
    with running(folder / "data", access_log=folder / "server.log") as room:
        yield room


@pytest.fixture
def own_classroom(tmp_path: Path) -> Iterator[Classroom]:
    """A server of the test's own, which it may stop and start."""
    with running(tmp_path / "data") as room:
        yield room


def start_class(host: Any, url: str) -> str:
    host.goto(f"{url}/class/new")
    host.fill("#password", INSTRUCTOR_PASSWORD)
    host.get_by_role("button", name="Start the class").click()
    expect(host.locator("#join-code")).to_be_visible()
    return str(host.locator("#join-code").inner_text()).strip()


def join(page: Any, url: str, code: str, nickname: str) -> None:
    page.goto(f"{url}/join/{code}")
    page.fill("#nickname", nickname)
    page.get_by_role("button", name="Join").click()
    expect(page.locator("#class-question")).to_be_visible()
    # A page that reloads loses this mark: everything below must arrive without a reload.
    page.evaluate("window.stayedOpen = true")


def stayed_open(page: Any) -> bool:
    return bool(page.evaluate("window.stayedOpen === true"))


def ask(host: Any, question_id: str) -> None:
    host.select_option("#question", question_id)
    host.get_by_role("button", name="Ask", exact=True).click()


def serious(page: Any) -> list[tuple[str, str, list[Any]]]:
    # A form posted by a click navigates; its new page's DOM can be there before its stylesheet
    # (a dark page without it is the browser's own: a blue link on black). Axe checks the page
    # as loaded.
    page.wait_for_load_state("load")
    results = Axe().run(page)
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_a_class_runs_live_for_three_students(isolated: Any, classroom: Classroom) -> None:
    first = questions()[0]
    host = isolated(viewport=DESKTOP)
    console = ConsoleLog(host)
    code = start_class(host, classroom.url)
    students = [isolated(viewport=PHONE) for _ in range(3)]
    consoles = [ConsoleLog(page) for page in students]
    for n, page in enumerate(students):
        join(page, classroom.url, code, f"student {n}")
    expect(host.locator("#participant-count")).to_have_text("3", timeout=LIVE_S)

    ask(host, first.id)
    for page in students:
        expect(page.locator("#class-question input[name=question]")).to_have_value(
            first.id, timeout=LIVE_S
        )
    choices = [first.answer_number, first.answer_number, wrong(first)]
    for page, choice in zip(students, choices, strict=True):
        page.locator(f"#class-question input[name=choice][value='{choice}']").check()
        page.get_by_role("button", name="Send my answer").click()
        expect(page.locator(".live-note")).to_contain_text(f"option {choice}")
    # The dashboard counts them as they arrive, without a reload.
    host.evaluate("window.stayedOpen = true")
    expect(host.locator("#answer-count")).to_have_text("3", timeout=LIVE_S)
    bar = host.locator(f"[data-choice='{first.answer_number}']")
    expect(bar).to_have_attribute("data-count", "2")
    assert stayed_open(host)

    host.get_by_role("button", name="Reveal the answer").click()
    for page, choice in zip(students, choices, strict=True):
        verdict = page.locator("#class-verdict")
        expect(verdict).to_have_attribute(
            "data-correct", "true" if choice == first.answer_number else "false", timeout=LIVE_S
        )
        expect(verdict.locator(".reasoning")).to_be_visible()

    host.fill("#lab-counts", "2,6")
    host.fill("#lab-means", "1,3")
    host.fill("#lab-eta", "0.1")
    host.fill("#lab-w", "10")
    host.get_by_role("button", name="Share with everyone").click()
    for page in students:
        # Each student's own lab moves to the state sent, and says so.
        lab = page.locator("#class-own-lab")
        expect(lab.locator("dd[data-value='w-new']")).to_have_text("9.75", timeout=LIVE_S)
        expect(lab.locator("dd[data-value='w-new-rank-mean']")).to_have_text("9.8")
        expect(lab.locator("#class-lab-sent")).to_be_visible()
        assert stayed_open(page), "a student's page reloaded"
        # 390 px: nothing scrolls sideways.
        widths = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1]
    assert console.errors == []
    for log in consoles:
        assert log.errors == []


def test_a_student_reconnects_after_the_server_restarts(
    isolated: Any, own_classroom: Classroom
) -> None:
    classroom = own_classroom
    first, second = questions()[:2]
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    student = isolated(viewport=PHONE)
    join(student, classroom.url, code, "Ada")
    ask(host, first.id)
    expect(student.locator("#class-question input[name=question]")).to_have_value(
        first.id, timeout=LIVE_S
    )
    student.locator(f"#class-question input[name=choice][value='{first.answer_number}']").check()
    student.get_by_role("button", name="Send my answer").click()
    expect(student.locator(".live-note")).to_contain_text(f"option {first.answer_number}")

    classroom.stop()
    classroom.start()  # the same port and data folder

    # The instructor's cookie still opens the dashboard, with everything kept.
    host.goto(f"{classroom.url}/class/{code}/host")
    expect(host.locator("#answer-count")).to_have_text("1")
    ask(host, second.id)
    # The student's page was never reloaded: its stream came back and caught up.
    expect(student.locator("#class-question input[name=question]")).to_have_value(
        second.id, timeout=40_000
    )
    assert stayed_open(student)


def test_an_answer_sent_from_a_page_behind_the_class_is_told_why_it_was_refused(
    isolated: Any, classroom: Classroom
) -> None:
    # A page whose stream lags (here: none at all) still shows the form after the instructor
    # paused; its answer is refused (409), and the student must see why, not a dead button.
    first = questions()[0]
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    ask(host, first.id)
    student = isolated(viewport=PHONE)
    student.route("**/events*", lambda route: route.abort())
    join(student, classroom.url, code, "Ada")
    expect(student.locator("#class-question input[name=question]")).to_have_value(first.id)
    host.get_by_role("button", name="Pause answering").click()
    expect(host.locator(".live-state")).to_contain_text("paused", timeout=LIVE_S)

    student.locator(f"#class-question input[name=choice][value='{first.answer_number}']").check()
    student.get_by_role("button", name="Send my answer").click()
    refusal = student.locator("#class-question .live-error")
    expect(refusal).to_contain_text("paused answering", timeout=LIVE_S)
    assert stayed_open(student)  # shown in place by htmx, not by a reload


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_class_pages_have_no_serious_accessibility_problems(
    isolated: Any, classroom: Classroom, scheme: str
) -> None:
    first = questions()[0]
    host = isolated(viewport=DESKTOP, color_scheme=scheme)
    code = start_class(host, classroom.url)
    student = isolated(viewport=PHONE, color_scheme=scheme)
    join(student, classroom.url, code, "Ada")
    ask(host, first.id)
    host.get_by_role("button", name="Reveal the answer").click()
    expect(student.locator("#class-verdict")).to_be_visible(timeout=LIVE_S)
    assert serious(student) == []
    assert serious(host) == []
    host.goto(f"{classroom.url}/class/{code}/screen")
    assert serious(host) == []
    host.goto(f"{classroom.url}/class/{code}/key")  # the projector and co-host links' page
    assert serious(host) == []
    host.fill("#key", "not-a-key")
    host.get_by_role("button", name="Open").click()  # its refusal, beside the field
    expect(host.locator("#key-error")).to_be_visible()
    assert serious(host) == []
    join_page = isolated(viewport=PHONE, color_scheme=scheme)
    join_page.goto(f"{classroom.url}/join")
    assert serious(join_page) == []


def test_the_projector_and_cohost_links_open_another_device_without_logging_their_keys(
    isolated: Any, classroom: Classroom
) -> None:
    """The links carry their keys after "#": the page posts them, the address bar drops them,
    and the server's access log never sees them. The projector's link opens its view only."""
    assert classroom.access_log is not None
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    host.locator(".live-cohost summary").click()
    screen_link = host.locator("#screen-url").input_value()
    cohost_link = host.locator("#cohost-url").input_value()

    projector = isolated(viewport={"width": 1920, "height": 1080})
    projector.goto(screen_link)
    expect(projector).to_have_url(f"{classroom.url}/class/{code}/screen")
    expect(projector.locator(".live-screen-join")).to_contain_text(code)
    # Its stream is the projector's too: a question asked shows without a reload.
    ask(host, questions()[0].id)
    expect(projector.locator(".live-screen-question")).to_contain_text("1.", timeout=LIVE_S)
    projector.goto(f"{classroom.url}/class/{code}/host")
    expect(projector.locator("main")).to_contain_text("for the class's instructor")

    cohost = isolated(viewport=PHONE)
    cohost.goto(cohost_link)
    expect(cohost).to_have_url(f"{classroom.url}/class/{code}/host")
    expect(cohost.locator("#join-code")).to_have_text(code)
    # Both links' posts are in the access log (it was on) once the server has written them.
    said = logged(classroom.access_log, f"POST /class/{code}/key", times=2)
    for link in (screen_link, cohost_link):
        assert link.partition("#")[2] not in said


def logged(log: Path, line: str, times: int) -> str:
    """The log once ``line`` is in it ``times`` times (read as the server writes it)."""
    deadline = time.monotonic() + LIVE_S / 1000
    while (said := log.read_text()).count(line) < times:
        assert time.monotonic() < deadline, f"{line!r} not logged {times} times:\n{said[-2000:]}"
        time.sleep(0.05)
    return said


def drag(page: Any, slider: Any, dx: float) -> None:
    """A real drag of a range input's thumb, from its middle by ``dx`` pixels, in steps (each
    step an input event, as a finger makes)."""
    slider.hover()  # scrolled into view and settled (the page scrolls smoothly)
    box = slider.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=8)
    page.mouse.up()


def test_a_students_lab_reaches_the_dashboard_the_projector_and_back(
    isolated: Any, classroom: Classroom
) -> None:
    host = isolated(viewport=DESKTOP)
    console = ConsoleLog(host)
    code = start_class(host, classroom.url)
    student = isolated(viewport=PHONE)
    student_console = ConsoleLog(student)
    join(student, classroom.url, code, "Ada Lovelace")
    labs = host.locator("#class-labs")
    expect(labs.locator("[data-value='joined']")).to_have_text("1", timeout=LIVE_S)
    expect(labs.locator("[data-value='states']")).to_have_text("0")
    host.evaluate("window.stayedOpen = true")

    # The student's lab is the lesson's: sliders, not text fields, and its own results.
    lab = student.locator("#class-own-lab #lab")
    count_0 = lab.locator("input[type=range][data-sync='lab-count-0']")
    expect(count_0).to_be_visible()
    expect(lab.locator("[data-value='w-new']")).to_have_text("9.75")
    # Rank 0's count from 2 upwards: unequal counts stay, the dashboard counts one state.
    drag(student, count_0, 40)
    moved = student.locator("#lab-count-0").input_value()
    assert moved != "2"
    expect(labs.locator("[data-value='states']")).to_have_text("1", timeout=LIVE_S)
    expect(labs.locator("[data-value='unequal']")).to_have_text("1")
    # The drag's last state arrives too (its trailing update, within a second).
    w_new = lab.locator("[data-value='w-new']").inner_text()
    expect(labs.locator("[data-value='median-global']")).to_have_text(w_new, timeout=LIVE_S)
    assert stayed_open(host)

    # On the projector, without the name.
    screen = isolated(viewport={"width": 1920, "height": 1080})
    screen.context.add_cookies(host.context.cookies())
    screen.goto(f"{classroom.url}/class/{code}/screen")
    host.get_by_role("button", name="Project the lab state of Ada").click()
    projected = screen.locator("#screen-live .live-shared")
    expect(projected.locator("[data-value='N']")).to_have_text(str(int(moved) + 6), timeout=LIVE_S)
    assert "Ada" not in screen.content()

    # Sent to everyone: the student's sliders move there, and they can move on from it.
    host.fill("#lab-counts", "4,4")
    host.fill("#lab-means", "1,3")
    host.fill("#lab-eta", "0.1")
    host.fill("#lab-w", "10")
    host.get_by_role("button", name="Share with everyone").click()
    expect(student.locator("#lab-count-0")).to_have_value("4", timeout=LIVE_S)
    expect(count_0).to_have_value("4")
    expect(lab.locator("[data-value='w-new']")).to_have_text("9.8")
    assert stayed_open(student)
    expect(labs.locator("[data-value='unequal']")).to_have_text("0", timeout=LIVE_S)
    expect(labs.locator("[data-value='at-sent']")).to_have_text("1")
    drag(student, count_0, -40)
    expect(labs.locator("[data-value='unequal']")).to_have_text("1", timeout=LIVE_S)
    expect(labs.locator("[data-value='at-sent']")).to_have_count(0)
    assert stayed_open(student)
    assert console.errors == []
    # htmx reports each lab request that a newer one replaced (hx-sync "this:replace") as an
    # error event, on the lesson page as here: anything else is a fault.
    replaced = ("htmx:sendAbort", "htmx:afterRequest")
    assert [error for error in student_console.errors if not error.startswith(replaced)] == []


def test_a_slow_post_of_a_lab_state_is_never_stored_after_a_newer_one(
    isolated: Any, classroom: Classroom
) -> None:
    """A student's lab posts its states one at a time: a newer state waits for the reply to the
    one on its way. (Two on their way at once could reach two server workers and be stored in
    either order: the dashboard would keep the older.) The first post is held in the browser
    while the student drags on and the page's clock runs past the coalescing gap; then it goes."""
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    student = isolated(viewport=PHONE)
    student.clock.install()  # the page's timers, run on below (time flows until then)
    join(student, classroom.url, code, "Grace Hopper")
    labs = host.locator("#class-labs")
    lab = student.locator("#class-own-lab #lab")
    count_0 = lab.locator("input[type=range][data-sync='lab-count-0']")
    expect(count_0).to_be_visible()
    held: list[Any] = []
    posted: list[str] = []

    def hold_the_first(route: Any) -> None:
        posted.append(route.request.post_data or "")
        if len(posted) == 1:
            held.append(route)  # let go below, after the newer state
        else:
            route.continue_()

    def dragged(dx: float) -> str:
        """Drags rank 0's count (from the slider's middle, by ``dx``); the lab's w_new once its
        results show the new count."""
        drag(student, count_0, dx)
        expect(lab.locator("[data-value='N']")).to_have_text(str(int(count_0.input_value()) + 6))
        return str(lab.locator("[data-value='w-new']").inner_text())

    student.route(f"**/class/{code}/state", hold_the_first)
    with student.expect_request(f"**/class/{code}/state"):
        first_w = dragged(40)
    last_w = dragged(80)
    assert last_w != first_w
    # Well past the gap: a page that posts while one is on its way sends the newer state now;
    # a request sent after it (and so routed after it) makes sure it has gone on.
    student.clock.run_for(5 * 1000)
    with student.expect_request("**/healthz"):
        student.evaluate("fetch('/healthz')")
    held[0].continue_()
    # The newer state arrives, and stays: the dashboard's median is the student's last w_new.
    expect(labs.locator("[data-value='median-global']")).to_have_text(last_w, timeout=LIVE_S)
    assert len(posted) == 2, posted
