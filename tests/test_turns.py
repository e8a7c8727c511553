"""tests/turns.py under a real pytest with real xdist workers: while the lock that `make test`
holds for the alone tests is held, the parallel run collects at idle priority, prints nothing and
runs no test; once it is let go, every test runs under the normal policy (every thread of its
worker and of the controller) and the held header comes out first. A user who could not take the
normal policy back gets the two parts one after the other: no worker even starts before the turn.
"""

import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.turns import TURN, may_idle

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="scheduling policies are Linux's"),
]

EVENT_WAIT_S = 60

# Run by the pytest under test: where each test ran, the policy of every thread of its worker
# and of the worker's parent, the controller.
RECORDING_TESTS = """
import json, os

def policies(pid):
    tasks = os.listdir(f"/proc/{pid}/task")
    return sorted({os.sched_getscheduler(int(task)) for task in tasks})

def record():
    ran = {"worker": policies(os.getpid()), "controller": policies(os.getppid())}
    with open(os.environ["RECORD"], "a") as out:
        out.write(json.dumps(ran) + "\\n")

def test_one():
    record()

def test_two():
    record()
"""


def blocked_on(lock: Path) -> set[int]:
    """The processes waiting for a flock of ``lock`` (the kernel's own list, /proc/locks)."""
    inode = os.stat(lock).st_ino
    waiting = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and fields[fields.index("->") + 1] == "FLOCK":
            pid, where = fields[fields.index("->") + 4 : fields.index("->") + 6]
            if int(where.rsplit(":", 1)[1]) == inode:
                waiting.add(int(pid))
    return waiting


def policy_of(pid: int) -> int:
    return os.sched_getscheduler(pid)


def descendants(pid: int) -> set[int]:
    children = {
        int(child)
        for task in os.listdir(f"/proc/{pid}/task")
        for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
    }
    return children.union(*(descendants(child) for child in children))


class Turn:
    """The lock held exclusively, as `make test` holds it while the alone tests run, until
    ``release`` (as the recipe's ``exec 9>&-``) or the end of the ``with``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "turn.lock"
        self._file = open(self.path, "wb")  # noqa: SIM115 (closed by release)
        fcntl.flock(self._file, fcntl.LOCK_EX)

    def release(self) -> None:
        self._file.close()

    def __enter__(self) -> "Turn":
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


@contextmanager
def parallel_run(folder: Path, lock: Path, user: list[str]) -> Iterator[subprocess.Popen[str]]:
    """A pytest on two xdist workers with the turn's variable set, in a session of its own: a
    test that fails half-way leaves no process behind (the run's whole group is killed and the
    controller reaped)."""
    (folder / "test_recording.py").write_text(RECORDING_TESTS)
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {
        **os.environ,
        TURN: str(lock),
        "RECORD": str(folder / "record"),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.Popen(
        [
            *user,
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(folder / "pytest.ini"),
            "--rootdir",
            str(folder),
            "--disable-plugin-autoload",
            "-p",
            "no:cacheprovider",
            "-p",
            "xdist.plugin",
            "-p",
            "tests.turns",
            "-n",
            "2",
            str(folder / "test_recording.py"),
        ],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as on a terminal: an xdist worker running this test ignores SIGINT, and a
        # Python started with SIGINT ignored never turns it into KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,
    )
    try:
        yield run
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        if run.stdout is not None:
            run.stdout.close()


def wait_for(run: subprocess.Popen[str], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + EVENT_WAIT_S
    while not condition():
        if run.poll() is not None:
            raise AssertionError(f"pytest ended (exit {run.returncode}): {run.communicate()[0]}")
        assert time.monotonic() < deadline, f"still not {what} after {EVENT_WAIT_S} s"
        time.sleep(0.01)


def all_three_waiting(run: subprocess.Popen[str], lock: Path) -> set[int]:
    """The controller and its two workers, once all three wait for the turn."""
    wait_for(run, lambda: len(blocked_on(lock)) == 3, "three processes waiting for the turn")
    return blocked_on(lock)


def finish(run: subprocess.Popen[str]) -> str:
    out, _ = run.communicate(timeout=EVENT_WAIT_S)
    assert run.returncode == 0, out
    return out


def recorded(folder: Path) -> list[dict[str, list[int]]]:
    return [json.loads(line) for line in (folder / "record").read_text().splitlines()]


def test_the_parallel_run_collects_at_idle_priority_and_runs_its_tests_after_the_turn(
    tmp_path: Path,
) -> None:
    if not may_idle():
        pytest.skip("this user may not leave idle priority: the parts run one after the other")
    with Turn(tmp_path) as turn, parallel_run(tmp_path, turn.path, []) as run:
        # The controller and its two workers, each waiting for the turn (the workers have
        # collected: a worker waits at the start of its test loop).
        waiting = all_three_waiting(run, turn.path)
        assert run.pid in waiting
        assert waiting - {run.pid} <= descendants(run.pid)
        assert {policy_of(pid) for pid in waiting} == {os.SCHED_IDLE}
        assert not (tmp_path / "record").exists(), "a test ran before the turn"
        assert run.stdout is not None
        assert select.select([run.stdout], [], [], 0)[0] == [], "it printed before the turn"
        turn.release()
        out = finish(run)
    # The held header first, then the run: nothing of it came out while the turn was held.
    assert out.startswith("=" * 10), out
    assert re.search(r"created: 2/2 workers\n2 workers \[2 items\]", out), out
    assert recorded(tmp_path) == [{"worker": [os.SCHED_OTHER], "controller": [os.SCHED_OTHER]}] * 2


def test_a_run_interrupted_as_it_waits_for_its_turn_still_prints_what_it_held(
    tmp_path: Path,
) -> None:
    if not may_idle():
        pytest.skip("this user may not leave idle priority: nothing is held")
    with Turn(tmp_path) as turn, parallel_run(tmp_path, turn.path, []) as run:
        all_three_waiting(run, turn.path)
        run.send_signal(signal.SIGINT)  # Ctrl-C, as the turn is still held
        out, _ = run.communicate(timeout=EVENT_WAIT_S)
    assert "test session starts" in out, out  # the held header
    assert "KeyboardInterrupt" in out, out
    assert not (tmp_path / "record").exists(), "a test ran before the turn"


def test_a_user_who_could_not_leave_idle_priority_runs_the_parts_one_after_the_other(
    tmp_path: Path,
) -> None:
    """Without the right to raise a priority (here root's CAP_SYS_NICE taken away, as a container
    may; RLIMIT_NICE stays 0), the controller waits for the turn before it starts any worker, at
    normal priority."""
    if may_idle():
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv (util-linux) to take the right to raise a priority away")
        user = ["setpriv", "--bounding-set", "-sys_nice", "--"]
    else:
        user = []
    with Turn(tmp_path) as turn, parallel_run(tmp_path, turn.path, user) as run:
        wait_for(run, lambda: blocked_on(turn.path) != set(), "the controller waiting for the turn")
        (controller,) = blocked_on(turn.path)
        assert controller == run.pid
        assert policy_of(controller) == os.SCHED_OTHER
        assert descendants(controller) == set(), "a worker started before the turn"
        turn.release()
        out = finish(run)
    assert recorded(tmp_path) == [{"worker": [os.SCHED_OTHER], "controller": [os.SCHED_OTHER]}] * 2
    assert "2 passed" in out
