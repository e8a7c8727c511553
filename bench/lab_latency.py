"""Lab latency in real Chromium: from a slider's input event to the new numbers on the page.

Against a live uvicorn (one worker, as ``make run``), the page moves the rank-1 count slider one
step at a time; each step dispatches an ``input`` event exactly as a drag does and waits, with a
MutationObserver, until the results show the new N. Floors measured in the same run, same page:
``fetch()`` of the same fragment alone (network + server + template, no swap), and ``fetch()`` of
``/healthz`` (the smallest round trip through this stack). Issue 30's goal: median ≤ 20 ms.

Run: ``.venv/bin/python -m bench.lab_latency [--events 200]``.
"""

import argparse
import os
import statistics
from dataclasses import dataclass
from typing import Any

from bench._servers import APP, serve

CHROMIUM = os.environ.get("ATLAS_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
START = "/?counts=2,6&means=1,3&eta=0.1&w=10"
GOAL_MS = 20.0

# Runs in the page (through the DevTools protocol, so the page's CSP does not apply to it).
SLIDER_STEP = """
async (count) => {
  const slider = document.querySelector('input.lab-slider[data-sync="lab-count-1"]');
  const expected = String(2 + count);
  const lab = document.getElementById("lab");
  return await new Promise((resolve) => {
    const done = () => {
      const n = document.querySelector('#lab-results [data-value="N"]');
      if (n && n.textContent === expected) {
        observer.disconnect();
        resolve(performance.now() - start);
      }
    };
    const observer = new MutationObserver(done);
    observer.observe(lab, { childList: true, subtree: true, characterData: true });
    slider.value = String(count);
    const start = performance.now();
    slider.dispatchEvent(new Event("input", { bubbles: true }));
  });
}
"""

FETCH = """
async ([url, hx]) => {
  const start = performance.now();
  const response = await fetch(url, { headers: hx ? { "HX-Request": "true" } : {} });
  await response.text();
  return performance.now() - start;
}
"""


@dataclass(frozen=True)
class Stats:
    name: str
    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return statistics.quantiles(self.samples, n=20)[-1]


def measure(page: Any, events: int) -> tuple[Stats, Stats, Stats]:
    """Alternate the rank-1 count between two values; interleave the floors with the updates."""
    update, fragment, health = [], [], []
    warm = 10
    for i in range(events + warm):
        count = 5 + (i % 2)  # 5, 6, 5, 6 …: every step changes N
        elapsed = page.evaluate(SLIDER_STEP, count)
        query = f"counts=2,{count}&means=1,3&eta=0.1&w=10"
        fetched = page.evaluate(FETCH, [f"/lab?{query}", True])
        healthz = page.evaluate(FETCH, ["/healthz", False])
        if i >= warm:
            update.append(elapsed)
            fragment.append(fetched)
            health.append(healthz)
    return (
        Stats("slider input → new numbers in the page", update),
        Stats("floor: fetch() of the /lab fragment", fragment),
        Stats("floor: fetch() of /healthz", health),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="measured input events")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with serve(APP, workers=1, ready_path="/healthz") as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server.url + START)
            page.wait_for_function(
                "() => window.htmx && document.querySelector('input.lab-slider:not([hidden])')"
            )
            update, fragment, health = measure(page, args.events)
        finally:
            browser.close()

    print(f"lab latency, {args.events} input events, Chromium against uvicorn (1 worker)")
    print(f"{'':42} {'median ms':>10} {'p95 ms':>8}")
    for stats in (update, fragment, health):
        print(f"{stats.name:42} {stats.median:10.2f} {stats.p95:8.2f}")
    print(f"update / fragment fetch (median): {update.median / fragment.median:.2f}x")
    print(f"update / healthz fetch (median):  {update.median / health.median:.2f}x")
    verdict = "meets" if update.median <= GOAL_MS else "misses"
    print(f"goal: median ≤ {GOAL_MS:g} ms — {verdict} ({update.median:.2f} ms)")


if __name__ == "__main__":
    main()
