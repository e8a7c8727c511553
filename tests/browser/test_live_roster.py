"""The roster is the host's, in real Chromium (issue 38): a look-alike of a nickname in the class
is refused on the join page with the name it clashes with, the dashboard's roster keeps one row;
closing joining shows on the dashboard and refuses the next student with the reason; a removed
student is listed to be let back in. Screenshots at phone, laptop and projector sizes go to
ATLAS_SCREENSHOTS (when set) to be looked at."""

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import test_lesson_page, test_live
from tests.browser.test_live import DESKTOP, PHONE, Classroom, start_class

pytestmark = pytest.mark.browser
isolated = test_lesson_page.isolated
classroom = test_live.classroom
PROJECTOR = {"width": 1920, "height": 1080}


def try_join(page: Any, url: str, code: str, nickname: str) -> None:
    page.goto(f"{url}/join/{code}")
    page.fill("#nickname", nickname)
    page.get_by_role("button", name="Join").click()


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("ATLAS_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_a_roster_of_look_alikes_is_refused(isolated: Any, classroom: Classroom) -> None:
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    alice = isolated(viewport=PHONE)
    test_live.join(alice, classroom.url, code, "Alice")
    for typed in ("\u0410lice", "Alice\u034f", "AIice"):
        spoof = isolated(viewport=PHONE)
        try_join(spoof, classroom.url, code, typed)
        expect(spoof.locator("#nickname-error")).to_be_visible()
        assert "Alice" in spoof.locator("#nickname-error").inner_text() or "U+034F" in (
            spoof.locator("#nickname-error").inner_text()
        )
        expect(spoof.locator("#nickname")).to_have_value(typed)  # what they typed stays
        shot(spoof, f"join-refused-{ord(typed[0]):04x}")
    host.reload()
    expect(host.locator("#host-roster .live-nickname")).to_have_count(1)
    expect(host.locator("#host-roster .live-nickname")).to_have_text("Alice")


def test_a_locked_class_shows_as_locked(isolated: Any, classroom: Classroom) -> None:
    host = isolated(viewport=DESKTOP)
    code = start_class(host, classroom.url)
    expect(host.locator("#joining-state")).to_contain_text("Joining is open")
    host.get_by_role("button", name="Close joining").click()
    expect(host.locator("#joining-state")).to_contain_text("Joining is closed")
    expect(host.get_by_role("button", name="Open joining")).to_be_visible()
    late = isolated(viewport=PHONE)
    try_join(late, classroom.url, code, "Late")
    expect(late.locator(".live-error")).to_contain_text("closed joining")
    shot(late, "join-locked-phone")
    host.get_by_role("button", name="Open joining").click()
    expect(host.locator("#joining-state")).to_contain_text("Joining is open")
    test_live.join(late, classroom.url, code, "Late")
    # Removed: listed under Joining with the button that lets them back in.
    host.reload()
    host.get_by_role("button", name="Remove Late").click()
    removed = host.locator("#removed-list")
    expect(removed).to_contain_text("Late")
    expect(removed.get_by_role("button", name="Let Late back in")).to_be_visible()
    for size, name in ((DESKTOP, "laptop"), (PHONE, "phone"), (PROJECTOR, "projector")):
        host.set_viewport_size(size)
        host.locator("#joining").scroll_into_view_if_needed()
        shot(host, f"dashboard-joining-{name}")
        section = host.locator("#joining").bounding_box()
        assert section is not None
        assert section["x"] + section["width"] <= size["width"]  # the section fits the screen
