"""README and docs/ as a newcomer uses them: every example runs as written against a live server.

The fence convention is documented in docs/testing.md ("Examples that run"): ``bash`` blocks run,
a ``json`` or ``text`` block right after one is its expected output, every ``json`` block parses,
and ``console`` blocks hold only commands covered elsewhere. The README's screenshot is taken
here too, with real Chromium against a live server.
"""

import json
import math
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from app.settings import Settings
from bench._http import TLS
from tests.conftest import ROOT, LiveServer, OffHostLog, new_page

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
KNOWN_LANGS = {"bash", "json", "text", "console", ""}
# Fields whose values differ from one run to the next: only their presence is checked.
VARYING = {"elapsed_ms", "cached", "runs"}
# Commands a console block may show, each proven by something other than this module.
COVERED_ELSEWHERE = {
    "make run": "tests/test_makefile.py",
    "make test": "this suite",
    "make lock": "tests/test_makefile.py (the lock's torch pin) and scripts/verify-image",
    "make verify-image": ".ci/run",
    "docker build -t atlas-lesson .": "scripts/verify-image (podman build)",
    "docker run": "scripts/verify-image (podman run, also --read-only --tmpfs /tmp)",
}
SCREENSHOT = ROOT / "docs" / "screenshot.png"
LESSON_STATE = "counts=2,6&means=1,3&eta=0.1&w=10"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str
    follows: "Block | None"  # the block right before it, with only blank lines between

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index, last_end = 0, -2
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        body: list[str] = []
        end = index + 1
        while not re.match(r"^ *```\s*$", lines[end]):
            body.append(lines[end][indent:])
            end += 1
        between = lines[last_end + 1 : index]
        adjacent = found and last_end >= 0 and all(not line.strip() for line in between)
        found.append(
            Block(
                path=path,
                line=index + 1,
                lang=opening["lang"],
                text="\n".join(body) + "\n",
                follows=found[-1] if adjacent else None,
            )
        )
        last_end, index = end, end + 1
    return found


ALL_BLOCKS = [block for path in [README, *DOCS] for block in blocks(path)]
BASH = [block for block in ALL_BLOCKS if block.lang == "bash"]


def expectation(command: Block) -> Block | None:
    return next((block for block in ALL_BLOCKS if block.follows == command), None)


def test_docs_hold_examples_of_every_kind() -> None:
    assert len(DOCS) >= 4
    langs = {block.lang for block in ALL_BLOCKS}
    assert {"bash", "json", "text", "console"} <= langs
    assert len(BASH) >= 8


def test_readme_fits_a_newcomer() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for must in ("make run", "make test", "docker build", "docs/screenshot.png", "MB", "minutes"):
        assert must in text


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda block: block.where)
def test_every_fence_is_marked_with_a_known_kind(block: Block) -> None:
    assert block.lang in KNOWN_LANGS, f"{block.where}: unknown fence {block.lang!r}"
    if block.lang == "":
        assert not re.search(r"^\s*(\$ |curl |make |docker |\.venv/)", block.text, re.M), (
            f"{block.where}: a command in an unmarked fence; mark it bash or console"
        )


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.lang == "json"], ids=lambda block: block.where
)
def test_every_json_block_parses(block: Block) -> None:
    assert "…" not in block.text, f"{block.where}: an ellipsis is not JSON"
    json.loads(block.text)


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.lang == "console"], ids=lambda block: block.where
)
def test_console_commands_are_covered_elsewhere(block: Block) -> None:
    commands = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    assert commands, f"{block.where}: a console block shows its commands after '$ '"
    for command in commands:
        command = command.split("  #", 1)[0].strip()
        assert any(command.startswith(known) for known in COVERED_ELSEWHERE), (
            f"{block.where}: {command!r} is neither run by this test nor covered elsewhere"
        )


def test_every_bash_block_states_its_output() -> None:
    missing = [block.where for block in BASH if expectation(block) is None]
    assert missing == [], f"bash blocks without an expected output block: {missing}"


def test_settings_table_lists_every_setting() -> None:
    documented = set(re.findall(r"^\| `(ATLAS_[A-Z0-9_]+)` \|", README.read_text(), re.M))
    fields = {f"ATLAS_{name.upper()}" for name in Settings.model_fields}
    assert documented == fields


def test_relative_links_resolve() -> None:
    for path in [README, *DOCS]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
            assert (path.parent / target).exists(), f"{path.relative_to(ROOT)} links {target}"


# --- the examples against a live server -------------------------------------------------------


def same(expected: Any, actual: Any, where: str = "$") -> None:
    """Equal as JSON values; numbers to a relative 1e-9; VARYING fields only present."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: {actual!r}"
        assert set(actual) == set(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key, value in expected.items():
            if key not in VARYING:
                same(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: {actual!r}"
        assert len(actual) == len(expected), f"{where}: {actual!r}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            same(want, got, f"{where}[{index}]")
    elif isinstance(expected, (int, float)) and not isinstance(expected, bool):
        assert isinstance(actual, (int, float)), where
        assert not isinstance(actual, bool), where
        assert math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-12), (
            f"{where}: {actual} != {expected}"
        )
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.fixture(scope="module")
def ready_server(live_server: LiveServer) -> LiveServer:
    """The session's live uvicorn once its confirmation pool answers."""
    deadline = time.monotonic() + 120
    while httpx.get(f"{live_server.url}/api/confirm/status", verify=TLS).json()["state"] != "ready":
        assert time.monotonic() < deadline, "the confirmation pool did not become ready"
        time.sleep(0.3)
    return live_server


@pytest.mark.distributed
@pytest.mark.parametrize("block", BASH, ids=lambda block: block.where)
def test_bash_example_runs_as_written(block: Block, ready_server: LiveServer) -> None:
    host_port = ready_server.url.removeprefix("http://")
    script = re.sub(r"\b(localhost|127\.0\.0\.1):8000\b", host_port, block.text)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stderr[-2000:]}"
    expected = expectation(block)
    assert expected is not None
    if expected.lang == "json":
        same(json.loads(expected.text), json.loads(done.stdout))
    else:
        for line in filter(None, (line.strip() for line in expected.text.splitlines())):
            assert line in done.stdout, f"{block.where}: {line!r} not in output:\n{done.stdout}"


def test_comparison_refuses_a_wrong_number() -> None:
    """The check above can fail: the lesson's 2.5 is not the rank mean's 2.0."""
    with pytest.raises(AssertionError):
        same({"global_gradient": 2.5}, {"global_gradient": 2.0})
    with pytest.raises(AssertionError):
        same({"w_new": 9.75}, {"w_new": 9.75, "extra": 1})
    same({"elapsed_ms": 17.3, "g": 2.5}, {"elapsed_ms": 9.1, "g": 2.5 * (1 + 1e-12)})


# --- the screenshot ----------------------------------------------------------------------------


@pytest.mark.browser
def test_readme_screenshot_shows_the_lab_at_the_lessons_example(
    live_server: LiveServer, browser: Any, off_host: OffHostLog
) -> None:
    page = new_page(browser, off_host, viewport={"width": 1280, "height": 1100})
    try:
        page.emulate_media(reduced_motion="reduce", color_scheme="light")
        page.goto(f"{live_server.url}/?{LESSON_STATE}#lab")
        expect(page.locator('#lab [data-value="g"]')).to_have_text("2.5")
        expect(page.locator('#lab [data-value="rank-mean"]')).to_have_text("2")
        expect(page.locator('#lab [data-value="w-new"]')).to_have_text("9.75")
        expect(page.locator('#lab-charts [data-value="fixed-global"]')).to_have_text("7.5")
        page.evaluate("document.fonts.ready")
        # The results pane: the figures, the verdict and the pictures under them.
        page.locator(".lab-pane").screenshot(path=str(SCREENSHOT))
    finally:
        page.context.close()
    assert off_host.urls == []
    header = SCREENSHOT.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    assert 400 <= width <= 1280, width
    assert height >= 600, height  # the number line and the SGD paths, not the figures alone


def test_test_files_the_docs_name_exist() -> None:
    tests = ROOT / "tests"
    for path in [README, *DOCS]:
        for name in re.findall(r"\b(test_\w+\.py)\b", path.read_text()):
            assert list(tests.rglob(name)), f"{path.relative_to(ROOT)} names {name}, not in tests/"
