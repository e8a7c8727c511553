"""The Makefile on a new machine: where torch comes from, `make run` without torch, and Ctrl-C.

Where torch comes from is decided by scripts/install-torch through `make torch-plan`, which runs
the real decision (pip's real dry-run resolution) against fake pip configurations holding tiny
fake wheels, and installs nothing. `make run` runs for real on a pseudo-terminal, so Ctrl-C is
the terminal's own: the line discipline sends SIGINT to the foreground process group.
"""

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from bench._http import TLS
from tests.conftest import ROOT, free_port

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_PIN = "torch==2.13.0"


def fake_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A wheel with nothing in it but metadata: enough for pip to resolve it."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Dist: {requirement}" for requirement in requires]
    )
    wheel = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{dist}.dist-info/METADATA", metadata + "\n")
        archive.writestr(f"{dist}.dist-info/WHEEL", wheel)
        archive.writestr(f"{dist}.dist-info/RECORD", "")


def pip_env(config: Path | str) -> dict[str, str]:
    """This environment with pip's variables replaced by one configuration file."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = str(config)
    # A fake folder must answer quickly; never wait on a network timeout here.
    env["PIP_DEFAULT_TIMEOUT"] = "10"
    return env


def offline_config(tmp_path: Path, wheels: Path) -> Path:
    """A pip configuration that knows only a folder of wheels (like a company mirror would)."""
    wheels.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nno-index = true\nfind-links = {wheels}\n")
    return config


def torch_plan(env: dict[str, str], *make_args: str) -> str:
    done = subprocess.run(
        ["make", "-s", "torch-plan", *make_args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_plan_takes_the_cpu_build_pip_configuration_supplies(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    fake_wheel(wheels, "torch", "2.13.0+cpu")
    plan = torch_plan(pip_env(offline_config(tmp_path, wheels)))
    assert "source: configuration (torch==2.13.0+cpu, no CUDA package)" in plan
    assert f"command: install --no-deps {TORCH_PIN}" in plan
    assert "--index-url" not in plan


def test_plan_refuses_the_cuda_build_pip_configuration_would_bring(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    fake_wheel(wheels, "torch", "2.13.0", requires=("nvidia-cublas-cu12", "triton"))
    fake_wheel(wheels, "nvidia-cublas-cu12", "12.8.4.1")
    fake_wheel(wheels, "triton", "3.7.1")
    plan = torch_plan(pip_env(offline_config(tmp_path, wheels)))
    assert (
        "resolves torch==2.13.0 to the CUDA build: 2 packages, nvidia-cublas-cu12, triton)" in plan
    )
    assert f"command: install --no-deps --index-url {CPU_INDEX} {TORCH_PIN}" in plan


def test_plan_uses_the_cpu_index_when_configuration_has_no_torch(tmp_path: Path) -> None:
    plan = torch_plan(pip_env(offline_config(tmp_path, tmp_path / "empty")))
    assert "pip's configuration cannot resolve torch==2.13.0" in plan
    assert f"--index-url {CPU_INDEX} {TORCH_PIN}" in plan


def test_plan_uses_the_cpu_index_without_any_pip_configuration() -> None:
    """An ordinary host: pip knows only PyPI, whose Linux torch is the CUDA build."""
    plan = torch_plan(pip_env(os.devnull))
    assert "pip's configuration names no index" in plan
    assert f"--index-url {CPU_INDEX} {TORCH_PIN}" in plan


@pytest.mark.parametrize("how", ["command line", "environment"])
def test_plan_uses_a_torch_index_the_user_chose_without_asking_pip(
    tmp_path: Path, how: str
) -> None:
    """A chosen index wins even over a configuration that supplies a CPU build."""
    wheels = tmp_path / "wheels"
    fake_wheel(wheels, "torch", "2.13.0+cpu")
    env = pip_env(offline_config(tmp_path, wheels))
    cuda = "https://download.pytorch.org/whl/cu128"
    if how == "environment":
        plan = torch_plan({**env, "TORCH_INDEX_URL": cuda})
    else:
        plan = torch_plan(env, f"TORCH_INDEX_URL={cuda}")
    assert f"source: index {cuda} (TORCH_INDEX_URL from the {how})" in plan
    assert f"command: install --no-deps --index-url {cuda} {TORCH_PIN}" in plan


def test_plan_installs_nothing_with_with_torch_no() -> None:
    plan = torch_plan(pip_env(os.devnull), "WITH_TORCH=no")
    assert "source: none (WITH_TORCH=no)" in plan
    assert "command: (none)" in plan


def test_with_torch_no_turns_the_confirmation_off_even_where_torch_is_installed() -> None:
    def run_command(*args: str) -> str:
        return subprocess.run(
            ["make", "-n", "run", "PORT=9999", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    off = run_command("WITH_TORCH=no")
    assert "ATLAS_CONFIRM_ENABLED=false" in off
    assert "install-torch" not in off, "WITH_TORCH=no never installs torch"
    assert "ATLAS_CONFIRM_ENABLED" not in run_command()
    assert "scripts/serve --host 127.0.0.1 --port 9999" in off


def make_variable(name: str) -> str:
    """A variable of the Makefile as make reads it (its database, printed without running)."""
    done = subprocess.run(
        ["make", "-s", "-p", "-n", "torch-plan"], cwd=ROOT, capture_output=True, text=True
    )
    [value] = [
        line.split("=", 1)[1].strip()
        for line in done.stdout.splitlines()
        if line.startswith(f"{name} =") or line.startswith(f"{name} :=")
    ]
    return value


def test_makefile_torch_pin_is_pyprojects() -> None:
    assert make_variable("TORCH_PIN") == TORCH_PIN
    assert f'torch = ["{TORCH_PIN}"]' in (ROOT / "pyproject.toml").read_text()
    assert TORCH_PIN in (ROOT / "requirements" / "constraints.txt").read_text().splitlines()


# --- make run on a terminal -------------------------------------------------------------------


@dataclass
class Terminal:
    """A process on its own pseudo-terminal, everything it writes collected."""

    pid: int
    fd: int
    output: bytearray = field(default_factory=bytearray)
    reader: threading.Thread | None = None

    def text(self) -> str:
        return self.output.decode(errors="replace")

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                if self.reader is not None:
                    self.reader.join(timeout=5)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.1)
        raise AssertionError(f"still running {timeout} s after Ctrl-C:\n{self.text()[-3000:]}")


def _drain(terminal: Terminal) -> None:
    while True:
        ready, _, _ = select.select([terminal.fd], [], [], 0.5)
        if not ready:
            try:
                if os.waitpid(terminal.pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:
                return
            continue
        try:
            chunk = os.read(terminal.fd, 65536)
        except OSError:  # EIO: the terminal's last process is gone
            return
        if not chunk:
            return
        terminal.output += chunk


def on_terminal(command: list[str], env: dict[str, str]) -> Terminal:
    pid, fd = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        try:
            # An interactive shell leaves SIGINT at its default for a foreground command.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.chdir(ROOT)
            os.execvpe(command[0], command, env)
        finally:
            os._exit(127)
    terminal = Terminal(pid=pid, fd=fd)
    terminal.reader = threading.Thread(target=_drain, args=(terminal,), daemon=True)
    terminal.reader.start()
    return terminal


def processes_with(marker: str) -> dict[int, str]:
    """Live processes whose environment or command line holds the marker: pid -> command."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            seen = (proc / "environ").read_bytes() + (proc / "cmdline").read_bytes()
            if marker.encode() in seen and (proc / "stat").read_text().split()[2] != "Z":
                found[int(proc.name)] = (
                    (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                )
        except OSError:
            continue
    return found


def wait_until_none(marker: str, timeout: float = 10.0) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def wait_for(url: str, terminal: Terminal, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.waitpid(terminal.pid, os.WNOHANG)[0]:
            raise AssertionError(f"make run ended before serving:\n{terminal.text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2, verify=TLS).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} not 200 within {timeout} s:\n{terminal.text()[-3000:]}")


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Iterator[Path]:
    """The pool's runtime folder for one server; its path marks every process of that server."""
    path = tmp_path / "atlas-runtime"
    yield path
    for pid in processes_with(str(path)):  # only if the test failed half-way
        os.kill(pid, signal.SIGKILL)


def lesson_example_gradient(url: str) -> dict[str, float]:
    body = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}
    answer: dict[str, float] = httpx.post(
        f"{url}/api/gradient", json=body, timeout=10, verify=TLS
    ).json()
    return answer


@pytest.mark.slow
@pytest.mark.distributed
def test_make_run_prints_the_address_and_ctrl_c_exits_0_leaving_no_rank(runtime_dir: Path) -> None:
    port = free_port()
    env = {**os.environ, "ATLAS_CONFIRM_RUNTIME_DIR": str(runtime_dir), "PORT": str(port)}
    env.pop("MAKEFLAGS", None)
    terminal = on_terminal(["make", "run"], env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/healthz", terminal, timeout=300)
        deadline = time.monotonic() + 120
        while httpx.get(f"{url}/api/confirm/status", verify=TLS).json()["state"] != "ready":
            assert time.monotonic() < deadline, "the pool did not become ready"
            time.sleep(0.3)
        ranks = {pid for pid, cmd in processes_with(str(runtime_dir)).items() if "worker" in cmd}
        assert len(ranks) == 8, "the pool runs its 8 ranks"
        assert lesson_example_gradient(url)["global_gradient"] == 2.5
        deadline = time.monotonic() + 10
        while f"http://127.0.0.1:{port}/" not in terminal.text():
            assert time.monotonic() < deadline, f"no address printed:\n{terminal.text()}"
            time.sleep(0.1)
    finally:
        terminal.ctrl_c()
        code = terminal.wait(timeout=60)
    log = terminal.text()
    assert code == 0, f"make run exited {code} after Ctrl-C:\n{log[-3000:]}"
    assert "make: ***" not in log
    assert "Traceback" not in log
    assert "Application shutdown complete" in log
    assert wait_until_none(str(runtime_dir)) == {}, "processes outlived make run"


@pytest.mark.slow
def test_make_run_without_torch_serves_all_but_the_confirmation(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """A fresh venv whose torch install fails (an index without torch): the server still runs."""
    empty_index = tmp_path / "empty-index"
    empty_index.mkdir()
    venv = tmp_path / "venv"
    port = free_port()
    # pip keeps this machine's indexes for the app's packages, but no wheel folder with torch.
    env = {
        **os.environ,
        "ATLAS_CONFIRM_RUNTIME_DIR": str(runtime_dir),
        "PIP_FIND_LINKS": str(empty_index),
    }
    env.pop("MAKEFLAGS", None)
    command = [
        "make",
        "run",
        f"VENV={venv}",
        f"PORT={port}",
        f"TORCH_INDEX_URL=file://{empty_index}",
        f"PYTHON={shutil.which('python3') or 'python3'}",
    ]
    terminal = on_terminal(command, env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/healthz", terminal, timeout=480)
        assert httpx.get(f"{url}/healthz", verify=TLS).json()["torch_installed"] is False
        assert lesson_example_gradient(url)["rank_mean_gradient"] == 2.0
        confirm = httpx.post(
            f"{url}/api/confirm",
            json={"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10},
            verify=TLS,
        )
        assert confirm.status_code == 503
        assert "PyTorch is not installed on this server" in confirm.json()["detail"]
        assert "PyTorch is not installed on this server" in httpx.get(f"{url}/", verify=TLS).text
    finally:
        terminal.ctrl_c()
        code = terminal.wait(timeout=60)
    log = terminal.text()
    assert "torch: WARNING: torch==2.13.0 could not be installed" in log
    assert "PyTorch is not installed on this server" in log, "the server's log says so too"
    assert f"http://127.0.0.1:{port}/" in log
    assert code == 0, f"make run exited {code} after Ctrl-C:\n{log[-3000:]}"
    assert not (venv / ".torch-installed").exists(), "a failed install leaves no stamp"
    assert wait_until_none(str(runtime_dir)) == {}


def test_constraints_pin_every_requirement_of_pyproject_within_its_range() -> None:
    """requirements/constraints.txt is current: `make lock` ran after pyproject.toml changed."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in project["dependencies"]] + [
        Requirement(text) for extra in project["optional-dependencies"].values() for text in extra
    ]
    pinned = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pinned[canonicalize_name(name)] = version
    for requirement in wanted:
        version = pinned.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not pinned: run make lock"
        assert requirement.specifier.contains(version), f"{requirement} but pinned {version}"
    assert not any(name.startswith("nvidia") for name in pinned), "the CPU build needs no CUDA"


def test_make_test_runs_the_files_of_the_tests_marked_alone_by_themselves() -> None:
    """`make test` deselects the `alone` tests from its parallel run and then collects only the
    files ALONE_TESTS names: those must be every file that marks a test `alone` (read from the
    sources here), and a collection told other files refuses the mark, naming the file."""
    marking = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"\bpytest\.mark\.alone\b", path.read_text())
    }
    named = make_variable("ALONE_TESTS").split()
    assert marking
    assert sorted(marking) == sorted(named)
    elsewhere = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *named],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ATLAS_TESTS_ALONE": "tests/test_makefile.py"},
    )
    assert elsewhere.returncode == pytest.ExitCode.USAGE_ERROR, elsewhere.stdout
    assert f"ALONE_TESTS in the Makefile does not name {named[0]}" in elsewhere.stderr


# Run by the stand-in of the first alone run: the command line of every other child of the
# recipe's shell (its siblings), one a line.
BESIDE = r"""
import os


def parent(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


me = os.getppid()
shell = parent(me)
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) == me:
        continue
    try:
        if parent(int(entry)) == shell:
            with open(f"/proc/{entry}/cmdline", "rb") as line:
                print(line.read().replace(b"\0", b" ").decode().strip())
    except (FileNotFoundError, ProcessLookupError):
        pass
"""


def stand_in_venv(folder: Path, failing: str = "") -> Path:
    """A venv that make takes as installed (its stamps newer than what they are made from)
    whose ruff, mypy and pytest are stand-ins: each records its arguments in ``calls`` (a line a
    call) and exits 0, or 1 for a call whose line begins with ``failing``; pytest also records in
    ``turns`` the turn it was handed (ATLAS_TESTS_TURN) and whether the turn file (``TURN`` of
    make_test) was locked by another process as it ran. `make test`'s order and exit are what is
    tested, not the tools' (the real ones run in this suite itself); its python is the real one.
    The first alone run's stand-in lists in ``beside-first`` every other process its shell has
    started and not reaped (``BESIDE``), and every other call waits for that run's end: a part
    started before it, at whatever speed, is still there to be listed."""
    tools = folder / "bin"
    tools.mkdir(parents=True)
    (tools / "python").symlink_to(sys.executable)
    fails = failing or "no call fails"
    locked = (
        "import fcntl, sys\n"
        "with open(sys.argv[1]) as turn:\n"
        "    try: fcntl.flock(turn, fcntl.LOCK_SH | fcntl.LOCK_NB)\n"
        "    except BlockingIOError: print('locked')\n"
        "    else: print('free')\n"
    )
    (folder / "beside.py").write_text(BESIDE)
    first_done = folder / "first-alone-done"
    for tool in ("ruff", "mypy", "pytest"):
        script = tools / tool
        turns = (
            f'echo "$* | ${{ATLAS_TESTS_TURN:-no turn}} | $("{sys.executable}" -c "{locked}"'
            f' "{folder}/turn.lock")" >> "{folder}/turns"\n'
            if tool == "pytest"
            else ""
        )
        # The first alone run lists what runs beside it; any other call waits for its end, so
        # one started too early is still there to be listed.
        first = (
            f'if [ "{tool} $*" = "{ALONE_FIRST}" ]; then\n'
            f'  "{sys.executable}" "{folder}/beside.py" >> "{folder}/beside-first"\n'
            f'else\n  while [ ! -e "{first_done}" ]; do sleep 0.01; done\nfi\n'
        )
        script.write_text(
            f'#!/bin/sh\necho "{tool} $*" >> "{folder}/calls"\n{first}{turns}'
            f'echo "{tool} says hello"\ntouch "{first_done}"\n'
            f'case "{tool} $*" in "{fails}"*) exit 1;; esac\n'
        )
        script.chmod(0o755)
    later = time.time() + 60
    for stamp in (".torch-installed", ".run-installed", ".test-installed"):
        (folder / stamp).touch()
        os.utime(folder / stamp, (later, later))
        later += 1
    return folder


def make_test(venv: Path, lint_log: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "test", f"VENV={venv}", f"LINT_LOG={lint_log}", f"TURN={venv}/turn.lock"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


ALONE_FIRST = f"pytest -m alone {make_variable('ALONE_BY_ITSELF')}"
ALONE_PHASE = f"pytest -m alone {make_variable('ALONE_BESIDE')}"
OTHER_PHASE = "pytest -n 3 --dist loadgroup -m not alone"


@pytest.mark.parametrize(
    ("failing", "named"),
    [
        ("", ""),
        ("mypy", "make lint (exit 1, its report just above)"),
        (ALONE_FIRST, "the alone tests (the first two pytest summaries)"),
        (ALONE_PHASE, "the alone tests (the first two pytest summaries)"),
        (OTHER_PHASE, "the other tests (exit 1, the last pytest summary)"),
    ],
    ids=["all-pass", "lint-fails", "first-alone-fails", "alone-fail", "others-fail"],
)
def test_make_test_runs_the_others_after_the_alone_tests_and_lint_beside_naming_what_failed(
    tmp_path: Path, failing: str, named: str
) -> None:
    venv = stand_in_venv(tmp_path / "venv", failing)
    done = make_test(venv, tmp_path / "lint.log")
    calls = (venv / "calls").read_text().splitlines()
    # Every part runs, whatever the outcome of another or of lint: the first alone test by
    # itself, before anything else starts; then the other alone tests, while the turn is locked,
    # and beside them the others, handed the turn to wait for (tests/turns.py).
    assert calls[0] == ALONE_FIRST
    beside = (venv / "beside-first").read_text()
    assert beside == "", f"beside the first alone run:\n{beside}"
    assert sorted(call for call in calls[1:] if call.startswith("pytest")) == [
        ALONE_PHASE,
        OTHER_PHASE,
    ]
    turns = dict(line.split(" | ", 1) for line in (venv / "turns").read_text().splitlines())
    assert turns[ALONE_FIRST.removeprefix("pytest ")] == "no turn | locked"
    assert turns[ALONE_PHASE.removeprefix("pytest ")] == "no turn | locked"
    assert turns[OTHER_PHASE.removeprefix("pytest ")].startswith(f"{venv}/turn.lock | ")
    assert any(call.startswith("mypy") for call in calls), "lint ran"
    assert "--- make lint (run beside the alone tests) ---\nruff says hello" in done.stdout
    last = done.stdout.splitlines()[-1]
    if failing:
        assert done.returncode != 0
        assert last == f"make test failed: {named}"
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert last == "make test passed: lint, the alone tests and the other tests"


def test_make_test_lints_at_idle_priority_beside_the_alone_tests(tmp_path: Path) -> None:
    """Lint takes a core only when no alone test wants it: its processes run under SCHED_IDLE
    (read from the kernel by the stand-in mypy itself) where chrt exists."""
    if shutil.which("chrt") is None:
        pytest.skip("no chrt (util-linux) here: lint runs at nice 19 only")
    venv = stand_in_venv(tmp_path / "venv")
    (venv / "bin" / "mypy").write_text(
        f'#!/bin/sh\nchrt -p $$ >> "{venv}/policy"\nnice >> "{venv}/policy"\n'
    )
    done = make_test(venv, tmp_path / "lint.log")
    assert done.returncode == 0, done.stdout + done.stderr
    policy = (venv / "policy").read_text()
    assert "SCHED_IDLE" in policy, policy
    assert policy.splitlines()[-1] == "19"
