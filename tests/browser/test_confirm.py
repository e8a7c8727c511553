"""The confirmation panel in real Chromium on the live server's gloo pool, with and without JS."""

from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.conftest import LiveServer, OffHostLog, new_page

pytestmark = [pytest.mark.browser, pytest.mark.distributed]

LESSON = "counts=2,6&means=1,3&eta=0.1&w=10"
# The first run may wait for the pool to load torch on a busy machine.
RUN_TIMEOUT_MS = 120_000


def cell(page: Any, run: str, rank: int, part: str) -> Any:
    return page.locator(f'#confirm tr[data-rank="{rank}"] td[data-run="{run}"] .confirm-{part}')


def test_run_shows_every_replica_beside_the_engine(
    live_server: LiveServer, page: Any, artifacts: Path
) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/?{LESSON}#lab")
    progress = page.locator("#confirm .confirm-progress")
    expect(progress).to_be_hidden()
    page.get_by_role("button", name="Run on real torch.distributed").click()
    expect(cell(page, "ddp_default", 1, "grad")).to_have_text("g 2", timeout=RUN_TIMEOUT_MS)
    expect(cell(page, "ddp_default", 0, "w")).to_have_text("w 9.8")
    for run in ("compensated", "comm_hook"):
        for rank in (0, 1):
            expect(cell(page, run, rank, "grad")).to_have_text("g 2.5")
            expect(cell(page, run, rank, "w")).to_have_text("w 9.75")
    reference = page.locator('#confirm tr[data-row="matches-reference"] td[data-run="ddp_default"]')
    expect(reference).to_have_text("no")
    expect(page.locator("#confirm .confirm-verdict")).to_contain_text(
        "only the compensated and comm-hook runs match"
    )
    # The lab page stays where it was: the panel alone was swapped in.
    assert page.url.endswith(f"/?{LESSON}#lab")
    page.locator("#confirm").screenshot(path=str(artifacts / "confirm-panel.png"))
    results = Axe().run(page, context="#confirm")
    serious = [
        (v["id"], [node["target"] for node in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []
    assert errors == []
    # Other inputs than the run's: the result says so, and says it no more once they are back.
    stale = page.locator("#confirm .confirm-stale-note")
    expect(stale).to_be_hidden()
    page.get_by_role("spinbutton", name="rank 1 count", exact=True).fill("4")
    expect(stale).to_be_visible()
    expect(stale).to_contain_text("Inputs changed: run again")
    page.get_by_role("spinbutton", name="rank 1 count", exact=True).fill("-1")
    expect(stale).to_be_visible()
    page.get_by_role("spinbutton", name="rank 1 count", exact=True).fill("6")
    expect(stale).to_be_hidden()


def test_progress_shows_while_htmx_runs_the_job(live_server: LiveServer, page: Any) -> None:
    page.goto(f"{live_server.url}/?{LESSON}#lab")
    progress = page.locator("#confirm .confirm-progress")
    expect(progress).to_be_hidden()
    # hx-indicator puts this class on the panel for the time of the request.
    page.locator("#confirm").evaluate("panel => panel.classList.add('htmx-request')")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Running on one gloo process per rank")


def test_run_takes_the_lab_state_as_typed_not_as_first_rendered(
    live_server: LiveServer, page: Any
) -> None:
    page.goto(f"{live_server.url}/?{LESSON}#lab")
    count = page.locator("#lab-count-1")
    count.fill("2")
    expect(page.locator('#lab [data-value="g"]')).to_have_text("2")
    page.get_by_role("button", name="Run on real torch.distributed").click()
    # Equal counts: the plain rank mean is the global item mean, so all three runs agree.
    expect(cell(page, "comm_hook", 1, "grad")).to_have_text("g 2", timeout=RUN_TIMEOUT_MS)
    expect(cell(page, "ddp_default", 1, "grad")).to_have_text("g 2")
    expect(page.locator("#confirm .confirm-verdict")).to_contain_text("all three runs match")


def test_without_javascript_the_button_posts_and_the_page_shows_the_result(
    live_server: LiveServer, browser: Any, off_host: OffHostLog, artifacts: Path
) -> None:
    page = new_page(browser, off_host, java_script_enabled=False)
    try:
        page.goto(f"{live_server.url}/?targets=9,9;7,7,7,7,7,7;&eta=0.1&w=10&steps=30#lab")
        page.get_by_role("button", name="Run on real torch.distributed").click()
        page.wait_for_load_state()
        assert page.url.endswith("/lab/confirm#confirm")
        expect(cell(page, "ddp_default", 2, "grad")).to_have_text("g 1.33333")
        expect(cell(page, "comm_hook", 2, "w")).to_have_text("w 9.75")
        expect(page.locator("#lab-targets-1")).to_have_value("7,7,7,7,7,7")
        # The address's fragment brings the result into view.
        expect(page.locator("#confirm")).to_be_in_viewport()
        page.screenshot(path=str(artifacts / "confirm-no-js.png"), full_page=False)
    finally:
        page.context.close()
    assert off_host.urls == []
