"""Shared fixtures: the real app through TestClient, a live uvicorn on loopback, real Chromium."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from app.main import create_app
from app.settings import Settings
from bench._servers import Server, free_port, launch, stop

# The suite shares two cores with other work: one example's wall time says nothing about the
# code (a 0.7 ms example took 850 ms under load), so property tests run without a deadline.
hypothesis_settings.register_profile("shared-machine", deadline=None)
# `make test-quick`: at most 10 examples a property, for the inner loop (a test's own
# @settings(max_examples=...) included: see quick_examples); `make test` runs them all.
QUICK_EXAMPLES = 10
hypothesis_settings.register_profile("quick", deadline=None, max_examples=QUICK_EXAMPLES)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "shared-machine")
hypothesis_settings.load_profile(PROFILE)

ROOT = Path(__file__).resolve().parent.parent
# Debian's Chromium headless shell (package chromium-headless-shell): the same Blink and V8 as the
# full browser, without its user interface; Playwright's own default for headless runs. The
# browser tests cost about 40 % less CPU with it (232 CPU-s against 381 here, 118 s against
# 191 s of wall time). The full browser where only it is installed.
CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM = os.environ.get("ATLAS_TEST_CHROMIUM") or next(
    (path for path in CHROMIUMS if Path(path).exists()), CHROMIUMS[0]
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "tests" / "artifacts"

# Private PostgreSQL servers (postgres_server, postgres_url, private_postgres); xdist's groups
# kept under pytest 9.2; under mutmut, a mutant's tests fastest first; `make test`'s parallel run
# collecting beside the alone tests and waiting for their end.
pytest_plugins = ("tests.servers", "tests.xdist_groups", "tests.mutmut_order", "tests.turns")


# What `make test-quick` leaves out (-m "not browser and not distributed and not server and not
# slow"), beyond what a test marks itself: tests that take a real server or a confirmation pool by
# fixture, and the modules (owned elsewhere) whose tests start servers inline.
SERVER_FIXTURES = {
    "live_server",
    "postgres_server",
    "postgres_url",
    "private_postgres",
}
POOL_FIXTURES = {"confirm_client"}
# The xdist group of the modules that use the session's live_server.
LIVE_SERVER_GROUP = "live-server"
SLOW_KINDS = ("browser", "server", "distributed", "slow", "xdist_group")
SERVER_MODULES = {
    "test_classroom.py",
    "test_compression.py",
    "test_confirm_cli.py",
    "test_confirm_groups.py",
    "test_fuzz.py",
    "test_listeners.py",
    "test_live_server.py",
    "test_makefile.py",
    "test_readme.py",
    "test_replicas.py",
    "test_servers.py",
}


# Every test here drives Chromium: pytest_collection_modifyitems marks it `browser`.
BROWSER_TESTS = ROOT / "tests" / "browser"
# `make test-quick` (which sets it) leaves out every `server` and `browser` test: the modules all of
# whose tests are one or the other (marked so below, whatever the module says) are not even
# imported (test_fuzz.py's schemathesis builds its cases at collection, about 2 s a process).
QUICK_RUN = "ATLAS_TESTS_QUICK"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if os.environ.get(QUICK_RUN) and (
        collection_path.name in SERVER_MODULES or collection_path == BROWSER_TESTS
    ):
        return True
    return None


# The instructor password of every app and server the tests start (through the environment,
# which Settings() and each server's process read); a test of the generated one removes it.
INSTRUCTOR_PASSWORD = "test-instructor-password"
os.environ["ATLAS_INSTRUCTOR_PASSWORD"] = INSTRUCTOR_PASSWORD

RUNTIME_DIR = pytest.StashKey[str]()
MADE_RUNTIME_DIR = "ATLAS_TESTS_MADE_RUNTIME_DIR"


def pytest_configure(config: pytest.Config) -> None:
    """The confirmation pool's runtime folder for this test process (each xdist worker its own),
    unless one is set: the default folder is one per user and checkout, so two workers' apps (or
    a ``make run`` beside the tests) would share one pool, the first owning it. A worker
    inherits its controller's environment: a folder made by a test process is never reused."""
    given = os.environ.get("ATLAS_CONFIRM_RUNTIME_DIR")
    if given is None or given == os.environ.get(MADE_RUNTIME_DIR):
        folder = tempfile.mkdtemp(
            prefix=f"atlas-confirm-{os.environ.get('PYTEST_XDIST_WORKER', 'tests')}-"
        )
        config.stash[RUNTIME_DIR] = folder
        os.environ["ATLAS_CONFIRM_RUNTIME_DIR"] = os.environ[MADE_RUNTIME_DIR] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(RUNTIME_DIR, None)
    if folder is not None:
        del os.environ["ATLAS_CONFIRM_RUNTIME_DIR"], os.environ[MADE_RUNTIME_DIR]
        shutil.rmtree(folder, ignore_errors=True)


# tryfirst: before xdist's own hook reads the xdist_group marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The modules of the session's live_server run on one worker, each whole (its other tests
    # may share a module fixture with them): one server and pool, not one on each worker, each
    # pool's eight gloo ranks waking about 100 times a second while they wait.
    on_live_server = {i.path for i in items if "live_server" in getattr(i, "fixturenames", ())}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.path in on_live_server and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(LIVE_SERVER_GROUP))
        # Under `--dist loadgroup` a module's tests that share a module-scoped fixture (a
        # Chromium and its pages, a server, a pool) run on one worker: the fixture starts once,
        # not once on each worker.
        if shares_module_fixture(item) and item.get_closest_marker("xdist_group") is None:
            module = item.path.relative_to(ROOT / "tests").with_suffix("")
            item.add_marker(pytest.mark.xdist_group(f"module-{module.as_posix()}"))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if (
            fixtures & SERVER_FIXTURES
            or item.path.name in SERVER_MODULES
            or "postgresql" in params.values()  # test_live's stores, taken by name
        ):
            item.add_marker(pytest.mark.server)
        if fixtures & POOL_FIXTURES:
            item.add_marker(pytest.mark.distributed)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
        if PROFILE == "quick":
            quick_examples(item)
    refuse_alone_outside_its_files(items)
    # The slow ones first (a browser, a real server, a torch pool, a shared module fixture): xdist
    # hands out tests in this order, so the run ends on in-process tests of a few tenths of a
    # second that fill the workers evenly, not on one worker's minute of replicas while the
    # others wait (a stable sort: each kind keeps its order).
    items.sort(key=lambda item: not any(mark.name in SLOW_KINDS for mark in item.iter_markers()))


# `make test` runs the tests marked `alone` by collecting only the Makefile's ALONE_TESTS (not
# every module again for two tests); it names them here for the parallel run's collection.
ALONE_FILES = "ATLAS_TESTS_ALONE"


def refuse_alone_outside_its_files(items: list[pytest.Item]) -> None:
    """Under `make test`, a test marked `alone` in a file that ALONE_TESTS does not name would
    run in neither of its phases: stop the run and say where to name it."""
    named = os.environ.get(ALONE_FILES)
    if named is None:
        return
    files = {(ROOT / name).resolve() for name in named.split()}
    for item in items:
        if item.get_closest_marker("alone") is not None and item.path.resolve() not in files:
            raise pytest.UsageError(
                f"{item.nodeid} is marked alone, but ALONE_TESTS in the Makefile does not name"
                f" {item.path.relative_to(ROOT)}: `make test` would never run it"
            )


def quick_examples(item: pytest.Item) -> None:
    """Under the quick profile, a property test's own ``@settings(max_examples=...)`` is capped
    too (a test's explicit settings win over any profile). Hypothesis reads the settings from
    the wrapped test each time it runs."""
    test = getattr(item, "obj", None)
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    quick = getattr(test, "is_hypothesis_test", False) and own is not None
    if quick and own.max_examples > QUICK_EXAMPLES:
        test._hypothesis_internal_use_settings = hypothesis_settings(  # type: ignore[union-attr]
            own, max_examples=QUICK_EXAMPLES
        )


def shares_module_fixture(item: pytest.Item) -> bool:
    """Whether the test takes a module-scoped fixture, itself or through another fixture."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope == "module" for defs in definitions for d in defs)


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings()


@pytest.fixture(scope="session")
def client() -> Iterator[TestClient]:
    """The real app with its lifespan run (lesson loaded), shared by a test session, without
    the confirmation's pool (``ATLAS_CONFIRM_ENABLED=false``: eight torch processes that only
    the tests that confirm use, and that take both cores while they start). Tests that confirm
    use ``confirm_client``."""
    with TestClient(create_app(Settings(confirm_enabled=False))) as test_client:
        yield test_client


def require_wrk(module: bool = False) -> None:
    """Skip without ``wrk`` (a whole module when ``module``), with the reason; under CI=true,
    fail instead: CI installs it."""
    if shutil.which("wrk") is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but wrk is not installed: install the 'wrk' package")
    pytest.skip("wrk is not installed (apt-get install -y wrk)", allow_module_level=module)


def run_benchmark(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m bench.<args>`` from the checkout, on a short run, without the confirmation
    pool (a benchmark's test checks what it measures, not torch's start)."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "ATLAS_CONFIRM_ENABLED": "false"},
    )


@dataclass(frozen=True)
class LiveServer(Server):
    """A real uvicorn process on loopback, and the environment it was started with."""

    env: dict[str, str] = field(default_factory=dict)


def start_server(
    extra_env: dict[str, str] | None = None,
    *,
    interpreter: Sequence[str] = (sys.executable,),
    options: Sequence[str] = (),
    timeout: float = 60.0,
) -> LiveServer:
    """``uvicorn --factory app.main:create_app`` on a free loopback port (under ``interpreter``,
    with ``options`` added), once /healthz answers (within ``timeout`` seconds); stopped with
    ``bench._servers.stop``."""
    port = free_port()
    env = {**os.environ, **(extra_env or {})}
    command = [*interpreter, "-m", "uvicorn", "--factory", "app.main:create_app"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *options]
    server = launch(command, port=port, ready_path="/healthz", env=env, timeout=timeout)
    return LiveServer(server.url, server.process, server.startup_s, env)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One uvicorn on a free loopback port for the whole session (its modules run on one xdist
    worker: LIVE_SERVER_GROUP), its confirmation pool in a runtime folder of its own: a server
    started elsewhere on this machine (``make run``, another test's) cannot own the pool it
    would share, so this one's examples hold ("role": "owner")."""
    runtime = tmp_path_factory.mktemp("live-server-runtime")
    server = start_server({"ATLAS_CONFIRM_RUNTIME_DIR": str(runtime)})
    try:
        yield server
    finally:
        stop(server)


INSTALL_CHROMIUM = "apt-get install -y chromium-headless-shell"


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is not None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Real Chromium from Debian (never a downloaded build); skipped only outside CI. One per
    module: Playwright's sync API holds a running event loop in the main thread while it is open,
    and the tests after the browser's (``asyncio.run`` in test_live, test_server, ...) need none."""
    if not chromium_available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but no Chromium at {CHROMIUM}: {INSTALL_CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM} ({INSTALL_CHROMIUM})")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@dataclass
class OffHostLog:
    """Requests the page tried to send anywhere but 127.0.0.1; each one is blocked."""

    urls: list[str] = field(default_factory=list)


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in ("127.0.0.1", "localhost", "::1")


@pytest.fixture
def off_host() -> OffHostLog:
    return OffHostLog()


def new_page(browser: Any, off_host: OffHostLog, **context_args: Any) -> Any:
    """A page in a fresh context whose every non-loopback request is blocked and recorded. It
    prefers reduced motion unless told otherwise: the site's smooth scrolling (site.css) is then
    instant, so an action scrolled to its element and a screenshot wait for no animation (the
    page is the same in every other way)."""
    context = browser.new_context(**{"reduced_motion": "reduce", **context_args})

    def guard(route: Any) -> None:
        url = route.request.url
        if _is_loopback(url):
            route.continue_()
        else:
            off_host.urls.append(url)
            route.abort()

    context.route("**/*", guard)
    return context.new_page()


@pytest.fixture
def page(browser: Any, off_host: OffHostLog) -> Iterator[Any]:
    """A 1280 px wide page with JavaScript on; fails the test if anything left 127.0.0.1."""
    page = new_page(browser, off_host, viewport={"width": 1280, "height": 900})
    try:
        yield page
    finally:
        page.context.close()
    assert off_host.urls == [], f"requests left 127.0.0.1: {off_host.urls}"


class Pages:
    """One page per set of context options (a viewport, JavaScript off, ...), kept for a test
    module: a new context costs Chromium more than a navigation does. Each ``get`` hands the page
    back as a fresh context would have it in every way the app can tell: on about:blank (a new
    document: its scripts, listeners, timers and history state gone), no cookies, no granted
    permission, screen media in the colour scheme asked for (the app keeps nothing in web
    storage). Every non-loopback request is
    blocked and recorded in ``off_host``."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.off_host = OffHostLog()
        self._pages: dict[str, Any] = {}

    def get(self, color_scheme: str = "light", **context_args: Any) -> Any:
        key = repr(sorted(context_args.items()))
        page = self._pages.get(key)
        if page is None:
            page = self._pages[key] = new_page(self.browser, self.off_host, **context_args)
        else:
            page.goto("about:blank")
            page.context.clear_cookies()
            page.context.clear_permissions()
        page.emulate_media(media="screen", color_scheme=color_scheme)
        return page

    def close(self) -> None:
        for page in self._pages.values():
            page.context.close()


@pytest.fixture(scope="module")
def module_pages(browser: Any) -> Iterator[Pages]:
    pages = Pages(browser)
    try:
        yield pages
    finally:
        pages.close()


@pytest.fixture
def pages(module_pages: Pages) -> Iterator[Pages]:
    """The module's pages (``Pages``); fails the test if anything left 127.0.0.1 during it."""
    left = module_pages.off_host.urls
    left.clear()
    yield module_pages
    assert left == [], f"requests left 127.0.0.1: {left}"


@pytest.fixture
def artifacts() -> Path:
    """Folder for screenshots that a person opens and looks at (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def confirm_client() -> Iterator[TestClient]:
    """The real app with its own warm pool (a private runtime folder, not the shared default),
    one per test module."""
    runtime = Path(tempfile.mkdtemp(prefix="atlas-confirm-test-"))
    app = create_app(Settings(confirm_runtime_dir=runtime, confirm_cache_size=4))
    try:
        with TestClient(app) as client:
            yield client
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
