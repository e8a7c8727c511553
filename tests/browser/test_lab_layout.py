"""The answer stays in sight of the question: change any lab control where it sits on screen and
both new w values are on screen too, at 1280x800 and 390x844, in real Chromium."""

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import LiveServer, OffHostLog, new_page

pytestmark = pytest.mark.browser

MEANS = "counts=2,6&means=1,3&eta=0.1&w=10"
ITEMS = "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30"
VIEWPORTS = [(1280, 800), (390, 844)]
MINUS = "\N{MINUS SIGN}"


def w_new(
    counts: list[Fraction], means: list[Fraction], eta: Fraction, w: Fraction
) -> tuple[Fraction, Fraction]:
    """Both updates, exactly: w − η·Σnᵣḡᵣ/N and w − η·(1/P)Σḡᵣ (an empty rank counts 0)."""
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
    # The number of SGD steps leaves this update as it is: it must still be in sight.
    ("lab-steps", "10", from_items([[9, 9], [7] * 6], [[1, 1], ONES], F(1, 10), F(10))),
]


@pytest.fixture(params=VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def sized_page(request: pytest.FixtureRequest, browser: Any, off_host: OffHostLog) -> Iterator[Any]:
    width, height = request.param
    page = new_page(browser, off_host, viewport={"width": width, "height": height})
    yield page
    page.context.close()


def in_sight(page: Any, selector: str, value: Fraction) -> bool:
    """Some element matching ``selector`` shows ``value``, fully inside the viewport, on top."""
    return bool(
        page.evaluate(
            """([selector, want]) => {
                const width = innerWidth, height = innerHeight;
                return [...document.querySelectorAll(selector)].some((el) => {
                    const r = el.getBoundingClientRect();
                    if (!r.width || r.top < 0 || r.left < 0 || r.bottom > height || r.right > width) {
                        return false;
                    }
                    const style = getComputedStyle(el);
                    if (style.visibility === "hidden" || Number(style.opacity) < 0.5) {
                        return false;
                    }
                    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    const shown = Number(el.textContent.trim().replace("\u2212", "-"));
                    return Boolean(top) && (el === top || el.contains(top)) && Math.abs(shown - want) <= 1e-5 * Math.max(1, Math.abs(want));
                });
            }""",
            [selector, float(value)],
        )
    )


def change_where_it_sits(page: Any, url: str, control: str, typed: str) -> None:
    page.goto(url, wait_until="networkidle")
    expect(page.locator("#lab [data-value=w-new]")).to_be_visible()
    page.evaluate("document.fonts.ready")
    page.evaluate(
        "(id) => document.getElementById(id).scrollIntoView({block: 'center', behavior: 'instant'})",
        control,
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
    change_where_it_sits(sized_page, f"{live_server.url}/?{MEANS}#lab", control, typed)
    global_w, rank_w = expected
    sized_page.wait_for_function(
        "(want) => Math.abs(Number(document.querySelector('#lab [data-value=w-new]').textContent.replace('\u2212','-')) - want) < 1e-5",
        arg=float(global_w),
    )
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
    change_where_it_sits(sized_page, f"{live_server.url}/?{ITEMS}#lab", control, typed)
    global_w, rank_w = expected
    sized_page.wait_for_url(lambda url: typed.replace(",", "%2C") in url or typed in url)
    assert in_sight(sized_page, "[data-value=w-new], [data-summary=w-new]", global_w)
    assert in_sight(
        sized_page, "[data-value=w-new-rank-mean], [data-summary=w-new-rank-mean]", rank_w
    )


def test_no_sideways_scrolling(live_server: LiveServer, sized_page: Any) -> None:
    for query in (MEANS, ITEMS, "counts=2,6,3,1,5,7,2,8&means=1,3,-2,4,0,1,2,3&eta=0.1&w=10"):
        sized_page.goto(f"{live_server.url}/?{query}#lab")
        assert sized_page.evaluate("document.documentElement.scrollWidth <= innerWidth"), query
