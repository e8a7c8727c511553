"""The answer stays in sight of the question: change any lab control where it sits on screen and
both new w values are on screen too, at 1280x800 and 390x844, in real Chromium."""

import re
from fractions import Fraction
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import LiveServer, OffHostLog, Pages, new_page

pytestmark = pytest.mark.browser

MEANS = "counts=2,6&means=1,3&eta=0.1&w=10"
ITEMS = "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30"
VIEWPORTS = [(1280, 800), (390, 844)]
MINUS = "\N{MINUS SIGN}"


def w_new(
    counts: list[Fraction], means: list[Fraction], eta: Fraction, w: Fraction
) -> tuple[Fraction, Fraction]:
    """Both updates, exactly: w - η·Σnᵣḡᵣ/N and w - η·(1/P)Σḡᵣ (an empty rank counts 0)."""
    total = sum(counts, Fraction(0))
    g = sum((n * m for n, m in zip(counts, means, strict=True)), Fraction(0)) / total
    rank_mean = sum(
        (m if n else Fraction(0) for n, m in zip(counts, means, strict=True)), Fraction(0)
    ) / len(counts)
    return w - eta * g, w - eta * rank_mean


def from_items(
    targets: list[list[int]], weights: list[list[int]], eta: Fraction, w: Fraction
) -> tuple[Fraction, Fraction]:
    counts = [Fraction(sum(ws)) for ws in weights]
    means = [
        sum((q * (w - y) for y, q in zip(ys, ws, strict=True)), Fraction(0)) / n
        if n
        else Fraction(0)
        for ys, ws, n in zip(targets, weights, counts, strict=True)
    ]
    return w_new(counts, means, eta, w)


F = Fraction
# control id, value typed, the two new w values it must produce (exact).
MEANS_CASES = [
    ("lab-P", "3", w_new([F(2), F(6), F(4)], [F(1), F(3), F(2)], F(1, 10), F(10))),
    ("lab-count-0", "3", w_new([F(3), F(6)], [F(1), F(3)], F(1, 10), F(10))),
    ("lab-count-1", "1", w_new([F(2), F(1)], [F(1), F(3)], F(1, 10), F(10))),
    ("lab-mean-0", "-1", w_new([F(2), F(6)], [F(-1), F(3)], F(1, 10), F(10))),
    ("lab-mean-1", "5", w_new([F(2), F(6)], [F(1), F(5)], F(1, 10), F(10))),
    ("lab-eta", "0.5", w_new([F(2), F(6)], [F(1), F(3)], F(1, 2), F(10))),
    ("lab-w", "4", w_new([F(2), F(6)], [F(1), F(3)], F(1, 10), F(4))),
]
ONES = [1, 1, 1, 1, 1, 1]
ITEMS_CASES = [
    (
        "lab-targets-0",
        "9,9,9",
        from_items([[9, 9, 9], [7] * 6], [[1, 1, 1], ONES], F(1, 10), F(10)),
    ),
    ("lab-targets-1", "7,7", from_items([[9, 9], [7, 7]], [[1, 1], [1, 1]], F(1, 10), F(10))),
    ("lab-weights-0", "1,0", from_items([[9, 9], [7] * 6], [[1, 0], ONES], F(1, 10), F(10))),
    (
        "lab-weights-1",
        "1,1,1,1,1,0",
        from_items([[9, 9], [7] * 6], [[1, 1], [1, 1, 1, 1, 1, 0]], F(1, 10), F(10)),
    ),
    ("lab-eta", "0.2", from_items([[9, 9], [7] * 6], [[1, 1], ONES], F(1, 5), F(10))),
    ("lab-w", "8", from_items([[9, 9], [7] * 6], [[1, 1], ONES], F(1, 10), F(8))),
    # The number of SGD steps and of microbatches leave this update as it is: still in sight.
    ("lab-acc-m", "3", from_items([[9, 9], [7] * 6], [[1, 1], ONES], F(1, 10), F(10))),
    ("lab-steps", "10", from_items([[9, 9], [7] * 6], [[1, 1], ONES], F(1, 10), F(10))),
]


def sized(pages: Pages, width: int, height: int, color_scheme: str = "light") -> Any:
    """The module's page at this viewport, fresh (see ``Pages``)."""
    return pages.get(viewport={"width": width, "height": height}, color_scheme=color_scheme)


@pytest.fixture(params=VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def sized_page(request: pytest.FixtureRequest, pages: Pages) -> Any:
    return sized(pages, *request.param)


# True when some element matching the selector shows the number, wholly inside the viewport,
# not transparent, and on top at its centre (not covered by a sticky bar).
IN_SIGHT = """([selector, want]) => {
    const close = (text) => {
        const shown = Number(text.trim().replace("\u2212", "-"));
        return Math.abs(shown - want) <= 1e-5 * Math.max(1, Math.abs(want));
    };
    return [...document.querySelectorAll(selector)].some((el) => {
        const r = el.getBoundingClientRect();
        const inside = r.width && r.top >= 0 && r.left >= 0
            && r.bottom <= innerHeight && r.right <= innerWidth;
        if (!inside || getComputedStyle(el).visibility === "hidden") {
            return false;
        }
        const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        const onTop = Boolean(top) && (el === top || el.contains(top));
        return onTop && close(el.textContent);
    });
}"""
SHOWS = """(want) => {
    const text = document.querySelector("#lab [data-value=w-new]").textContent;
    return Math.abs(Number(text.replace("\u2212", "-")) - want) < 1e-5;
}"""


def in_sight(page: Any, selector: str, value: Fraction) -> bool:
    """Some element matching ``selector`` shows ``value``, fully inside the viewport, on top."""
    return bool(page.evaluate(IN_SIGHT, [selector, float(value)]))


def change_where_it_sits(page: Any, url: str, control: str, typed: str) -> None:
    # ``url`` has no #lab: the page's smooth scroll to it would go on after the load and move
    # the control away from where the test puts it.
    page.goto(url)
    expect(page.locator("#lab [data-value=w-new]")).to_be_visible()
    page.evaluate("document.fonts.ready")
    page.evaluate(
        "(id) => document.getElementById(id)"
        ".scrollIntoView({block: 'center', behavior: 'instant'})",
        control,
    )
    # Count the results pane's answers htmx settles from here on: the test waits for the one this
    # change asks (the pictures' and the details' answers settle on their own, in any order).
    page.evaluate(
        "window.__settled = 0;"
        "document.addEventListener('htmx:afterSettle', (event) => {"
        "  if (event.target.id === 'lab-results') { window.__settled += 1; }"
        "})"
    )
    page.locator(f"#{control}").fill(typed)
    # The control is still in the middle of the screen, where the student had it.
    box = page.locator(f"#{control}").bounding_box()
    height = page.viewport_size["height"]
    assert height / 4 < box["y"] + box["height"] / 2 < height * 3 / 4


@pytest.mark.parametrize(
    ("control", "typed", "expected"), MEANS_CASES, ids=[c[0] for c in MEANS_CASES]
)
def test_means_control_changed_mid_screen_shows_both_new_w(
    live_server: LiveServer,
    sized_page: Any,
    control: str,
    typed: str,
    expected: tuple[Fraction, Fraction],
) -> None:
    change_where_it_sits(sized_page, f"{live_server.url}/?{MEANS}", control, typed)
    global_w, rank_w = expected
    sized_page.wait_for_function(SHOWS, arg=float(global_w))
    assert in_sight(sized_page, "[data-value=w-new], [data-summary=w-new]", global_w)
    assert in_sight(
        sized_page, "[data-value=w-new-rank-mean], [data-summary=w-new-rank-mean]", rank_w
    )


@pytest.mark.parametrize(
    ("control", "typed", "expected"), ITEMS_CASES, ids=[c[0] for c in ITEMS_CASES]
)
def test_items_control_changed_mid_screen_shows_both_new_w(
    live_server: LiveServer,
    sized_page: Any,
    control: str,
    typed: str,
    expected: tuple[Fraction, Fraction],
) -> None:
    change_where_it_sits(sized_page, f"{live_server.url}/?{ITEMS}", control, typed)
    global_w, rank_w = expected
    sized_page.wait_for_function("() => window.__settled > 0")
    assert in_sight(sized_page, "[data-value=w-new], [data-summary=w-new]", global_w)
    assert in_sight(
        sized_page, "[data-value=w-new-rank-mean], [data-summary=w-new-rank-mean]", rank_w
    )


def test_no_sideways_scrolling(live_server: LiveServer, sized_page: Any) -> None:
    for query in (MEANS, ITEMS, "counts=2,6,3,1,5,7,2,8&means=1,3,-2,4,0,1,2,3&eta=0.1&w=10"):
        sized_page.goto(f"{live_server.url}/?{query}#lab")
        assert sized_page.evaluate("document.documentElement.scrollWidth <= innerWidth"), query


def serious_violations(page: Any, context: str | None = None) -> list[tuple[str, list[Any]]]:
    """axe's serious and critical findings on the page, or on ``context`` (a selector) only."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context)
    return [
        (v["id"], [n["target"] for n in v["nodes"]][:5])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("added", ["stale", "presenting", "playing"])
def test_new_states_have_no_serious_accessibility_violations(
    live_server: LiveServer, pages: Pages, scheme: str, added: str
) -> None:
    for width, height in VIEWPORTS:
        page = sized(pages, width, height, color_scheme=scheme)
        present = "&present=1" if added == "presenting" else ""
        page.goto(f"{live_server.url}/?{MEANS}{present}#lab")
        if added == "stale":
            page.locator("#lab-count-1").fill("-1")
            expect(page.locator("#msg-lab-count-1")).to_be_visible()
        if added == "playing":
            page.get_by_role("button", name="Step").click()
            expect(page.locator(".lab-player-step")).to_have_text("step 0 of 30")
        # Playing changes the lab alone: the page around it, at this width and in this scheme, is
        # checked whole with the stale state and in presenter mode (which refolds it).
        context = "#lab" if added == "playing" else None
        assert serious_violations(page, context) == [], (width, added)


def test_presenter_mode_folds_the_lesson_and_widens_the_lab(
    live_server: LiveServer, pages: Pages
) -> None:
    page = sized(pages, 1280, 800)
    page.goto(f"{live_server.url}/?{MEANS}&present=1#lab")
    expect(page.locator(".lesson-header")).to_be_hidden()
    expect(page.locator("main > section").first).to_be_hidden()
    lab = page.locator("#lab").bounding_box()
    assert lab["width"] >= 1280 - 3 * 16 - 20
    # Large type: the key figure is at least 40 px.
    size = page.locator("[data-value=w-new]").evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert size >= 40
    # The flag survives a change of state, and the toggle leaves the mode without a reload.
    page.locator("#lab-count-1").fill("2")
    page.wait_for_url("**counts=2,2**present=1#lab")
    page.get_by_role("link", name="Leave presenter mode").click()
    expect(page.locator(".lesson-header")).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"present=1"))


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_play_and_step_draw_the_sgd_path(
    live_server: LiveServer, browser: Any, off_host: OffHostLog, width: int, height: int
) -> None:
    # The player's own timer, on the page's installed clock: the 30 steps' 6 s run at once,
    # in a context of its own (the clock stays installed in it).
    page = new_page(browser, off_host, viewport={"width": width, "height": height})
    try:
        page.clock.install()
        page.goto(f"{live_server.url}/?{MEANS}#lab")
        line = page.locator("#lab polyline.chart-line").first
        full = len(line.get_attribute("points").split())
        assert full == 31  # w and 30 steps
        page.get_by_role("button", name="Start over").click()
        assert len(line.get_attribute("points").split()) == 1
        page.get_by_role("button", name="Step").click()
        assert len(line.get_attribute("points").split()) == 2
        expect(page.locator(".lab-player-step")).to_have_text("step 1 of 30")
        page.get_by_role("button", name="Play").click()
        expect(page.get_by_role("button", name="Pause")).to_be_visible()
        page.clock.run_for(30 * 200)  # 6000 / 30 steps = 200 ms a step; 29 steps are left
        expect(page.locator(".lab-player-step")).to_have_text("step 30 of 30")
        expect(page.get_by_role("button", name="Play")).to_be_visible()
        assert len(line.get_attribute("points").split()) == full
    finally:
        page.context.close()
    assert off_host.urls == []


def test_share_link_copies_the_state_and_marks_the_preset(
    live_server: LiveServer, pages: Pages
) -> None:
    page = sized(pages, 1280, 800)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/?{MEANS}#lab")
    lesson = page.get_by_role("link", name="Lesson example", exact=True)
    expect(lesson).to_have_attribute("aria-current", "true")
    page.locator("#lab-count-1").fill("4")
    page.wait_for_url("**counts=2,4**#lab")
    expect(lesson).not_to_have_attribute("aria-current", "true")
    page.get_by_role("button", name="Copy link").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.endswith("/?counts=2,4&means=1,3&eta=0.1&w=10#lab")
    page.locator("#lab-count-1").fill("6")
    expect(lesson).to_have_attribute("aria-current", "true")
