"""Peer instruction in real Chromium against ``python -m app``: an instructor, a projector and
three students on phones run a question with two votes, a discussion timer, confidence and the
shift, with no page reloaded; the report after it has nothing serious for axe. Screenshots of
the shift and the report at 1280x800 and 1920x1080 go to the artifacts folder."""

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import test_live
from tests.browser.test_lesson_page import ConsoleLog
from tests.browser.test_live import (
    LIVE_S,
    PHONE,
    Classroom,
    join,
    serious,
    start_class,
    stayed_open,
)
from tests.test_live import questions

pytestmark = pytest.mark.browser

classroom = test_live.classroom
isolated = test_live.isolated
LAPTOP = {"width": 1280, "height": 800}
PROJECTOR = {"width": 1920, "height": 1080}


def answer(page: Any, choice: int, confidence: str) -> None:
    page.locator(f"#class-question input[name=choice][value='{choice}']").check()
    page.get_by_label(confidence, exact=True).check()
    page.locator("#class-question button[type=submit]").click()
    expect(page.locator(".live-note")).to_contain_text(f"option {choice}", timeout=LIVE_S)


def test_two_votes_with_a_timer_confidence_and_the_shift(
    isolated: Any, classroom: Classroom, artifacts: Path
) -> None:
    first = questions()[0]
    right = first.answer_number
    others = [n for n, _ in first.choices if n != right]
    host = isolated(viewport=LAPTOP)
    console = ConsoleLog(host)
    code = start_class(host, classroom.url)
    screen = host.context.new_page()  # the projector: the instructor's own cookie
    screen.set_viewport_size(PROJECTOR)
    screen_console = ConsoleLog(screen)
    screen.goto(f"{classroom.url}/class/{code}/screen")
    screen.evaluate("window.stayedOpen = true")
    students = [isolated(viewport=PHONE) for _ in range(3)]
    consoles = [ConsoleLog(page) for page in students]
    for n, page in enumerate(students):
        join(page, classroom.url, code, f"student {n}")

    # The instructor looks at the dashboard: Chromium draws frames at full rate for the tab in
    # front only (a tab behind gets about one a second, and every action waits for two).
    host.bring_to_front()
    host.select_option("#question", first.id)
    host.select_option("#rounds", "2")
    host.get_by_role("button", name="Ask", exact=True).click()
    expect(host.locator(".live-state")).to_have_text(
        "Question 1, vote 1 of 2: Answering is open.", timeout=LIVE_S
    )
    host.evaluate("window.stayedOpen = true")
    # Vote 1: two wrong and sure, one right and guessing.
    vote_1 = [(others[0], "Sure"), (others[0], "Sure"), (right, "Guessing")]
    for page in students:
        expect(page.locator(".live-vote")).to_have_text("Vote 1 of 2", timeout=LIVE_S)
    for page, (choice, sure) in zip(students, vote_1, strict=True):
        answer(page, choice, sure)
    bar = host.locator(f"[data-choice='{others[0]}']")
    expect(bar).to_have_attribute("data-count", "2", timeout=LIVE_S)
    expect(bar).to_have_attribute("data-sure", "2")
    expect(host.locator(f"[data-choice='{right}']")).to_have_attribute("data-unsure", "1")
    expect(host.locator(f"[data-choice='{others[0]}'] .live-bar-confidence")).to_contain_text(
        "2 sure"
    )
    host.locator(".live-controls").first.screenshot(path=str(artifacts / "peer-controls.png"))
    host.locator("#host-now").screenshot(path=str(artifacts / "peer-vote-1-dashboard.png"))
    # The projector and the students know how many answered, not what.
    expect(screen.locator("#screen-live")).to_contain_text(
        "All 3 students answered.", timeout=LIVE_S
    )
    assert screen.locator("[data-count]").count() == 0
    for page in students:
        assert page.locator("[data-count]").count() == 0

    host.fill("#seconds", "90")
    host.get_by_role("button", name="Start the timer").click()
    for page in [screen, *students]:
        expect(page.locator("#timer")).to_be_visible(timeout=LIVE_S)
        # The page's script counts down to the server's end time.
        expect(page.locator("#timer .live-timer-left")).to_contain_text("left", timeout=LIVE_S)
    screen.bring_to_front()
    screen.screenshot(path=str(artifacts / "peer-timer-1920x1080.png"))
    host.bring_to_front()

    host.get_by_role("button", name="Open vote 2").click()
    # Each row on the dashboard shows vote 1 and (not yet) vote 2, without a reload.
    for n, (choice, _) in enumerate(vote_1):
        row = host.locator("#roster-rows tr", has_text=f"student {n}")
        expect(row).to_contain_text(f"option {choice} → none", timeout=LIVE_S)
    for page, (choice, _) in zip(students, vote_1, strict=True):
        expect(page.locator(".live-first")).to_have_attribute(
            "data-first", str(choice), timeout=LIVE_S
        )
        expect(page.locator("#timer")).to_have_count(0)
        expect(page.locator("input[name=round]")).to_have_value("2")
    students[0].screenshot(path=str(artifacts / "peer-vote-2-phone-390x844.png"), full_page=True)
    assert serious(students[0]) == []
    # Vote 2: after discussing, two move to the answer.
    vote_2 = [(right, "Sure"), (right, "Sure"), (right, "Sure")]
    for page, (choice, sure) in zip(students, vote_2, strict=True):
        answer(page, choice, sure)
    expect(host.locator("#answer-count")).to_have_text("3", timeout=LIVE_S)
    assert screen.locator("#shift").count() == 0  # not before the reveal

    host.get_by_role("button", name="Reveal the answer").click()
    for page in (host, screen):
        shift = page.locator("#shift")
        expect(shift).to_be_visible(timeout=LIVE_S)
        expect(shift.locator(f"[data-option='{right}']")).to_have_attribute("data-vote1", "1")
        expect(shift.locator(f"[data-option='{right}']")).to_have_attribute("data-vote2", "3")
        expect(shift.locator(".live-shift-summary")).to_contain_text(
            "1 of 3 right (33 %) in vote 1, 3 of 3 right (100 %) in vote 2"
        )
    for page in students:
        expect(page.locator("#class-verdict")).to_have_attribute(
            "data-correct", "true", timeout=LIVE_S
        )
        assert stayed_open(page)
    assert stayed_open(host)
    assert stayed_open(screen)
    assert serious(host) == []  # the confidence split and the shift
    assert serious(screen) == []
    screen.bring_to_front()
    screen.screenshot(path=str(artifacts / "peer-shift-projector-1920x1080.png"), full_page=True)
    screen.set_viewport_size(LAPTOP)
    screen.screenshot(path=str(artifacts / "peer-shift-projector-1280x800.png"), full_page=True)
    host.bring_to_front()
    host.locator("#shift").scroll_into_view_if_needed()
    host.screenshot(path=str(artifacts / "peer-shift-dashboard-1280x800.png"))

    report = host.context.new_page()
    for name, size in (("1280x800", LAPTOP), ("1920x1080", PROJECTOR)):
        report.set_viewport_size(size)
        report.goto(f"{classroom.url}/class/{code}/report")
        expect(report.locator(f"#report-{first.id} li[data-round='2']")).to_contain_text(
            "3 of 3 right (100 %)"
        )
        report.screenshot(path=str(artifacts / f"peer-report-{name}.png"), full_page=True)
        assert serious(report) == []
    report.emulate_media(color_scheme="dark")
    assert serious(report) == []
    report.emulate_media(media="print", color_scheme="light")
    report.screenshot(path=str(artifacts / "peer-report-print.png"), full_page=True)
    assert console.errors == []
    assert screen_console.errors == []
    for log in consoles:
        assert log.errors == []
