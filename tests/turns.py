"""`make test`'s parallel run waits its turn (registered as a plugin by ``tests/conftest.py``).

`make test` runs the tests bound by wall time first, by themselves, holding an exclusive lock on
the file ``ATLAS_TESTS_TURN`` names while they run, and starts the parallel run beside them with
that variable set. Its controller takes idle priority (SCHED_IDLE: a core only when nothing else
wants it), so its workers start and collect (about 9 s of CPU each, with the bytecode cold) on
the cores the alone tests leave idle; then every process of it, the controller and each worker,
waits for the lock before its first test and takes the normal policy back, every thread of it.
The controller's output (its header) is held in a file until then, so that it does not run into
the alone tests' lines. Where the normal policy could not be taken back (not Linux, or a user
without the right to raise a priority), the controller waits for the lock before it starts any
worker: the two parts then run one after the other. Without the variable nothing here does
anything.
"""

import contextlib
import fcntl
import os
import sys
import tempfile
import threading
from typing import IO

import pytest

TURN = "ATLAS_TESTS_TURN"
HELD = pytest.StashKey[tuple[IO[bytes], int]]()


def turn_file() -> str | None:
    return os.environ.get(TURN) or None


def wait_for_turn(path: str) -> None:
    with open(path, "rb") as turn:
        fcntl.flock(turn, fcntl.LOCK_SH)  # blocks while the alone tests hold it exclusively


def may_idle() -> bool:
    """Whether this process may go idle and come back, tried on a thread of its own: leaving
    SCHED_IDLE for the normal policy at nice 0 takes CAP_SYS_NICE (root's, unless a container
    dropped it) or an RLIMIT_NICE of 20."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    came_back: list[bool] = []

    def go_idle_and_back() -> None:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except PermissionError:
            came_back.append(False)
        else:
            came_back.append(True)

    probe = threading.Thread(target=go_idle_and_back)
    probe.start()
    probe.join()
    return came_back == [True]


def set_policy(policy: int) -> None:
    """Every thread of this process (a policy is a thread's) under ``policy``."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):  # the thread ended meanwhile
            os.sched_setscheduler(int(task), policy, os.sched_param(0))


# trylast: after the terminal reporter has asked whether its output is a terminal (colours), and
# before the controller starts its workers (at the session's start).
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = turn_file()
    if path is None or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not may_idle():
        wait_for_turn(path)
        return
    set_policy(os.SCHED_IDLE)
    sys.stdout.flush()
    held = tempfile.TemporaryFile()  # noqa: SIM115 (closed when the turn comes)
    config.stash[HELD] = (held, os.dup(1))
    os.dup2(held.fileno(), 1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    path = turn_file()
    if path is None:
        return
    wait_for_turn(path)
    del os.environ[TURN]  # the tests' own processes (a pytest a test runs) have no turn to wait for
    if hasattr(os, "SCHED_IDLE") and os.sched_getscheduler(0) == os.SCHED_IDLE:
        set_policy(os.SCHED_OTHER)
    print_held_output(session.config)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A run that ends before its turn (interrupted as it waits) still prints what it held."""
    print_held_output(config)


def print_held_output(config: pytest.Config) -> None:
    """What the controller held back, printed, and its output the terminal again (once)."""
    held = config.stash.get(HELD, None)
    if held is None:
        return
    del config.stash[HELD]
    file, terminal = held
    sys.stdout.flush()
    os.dup2(terminal, 1)
    os.close(terminal)
    file.seek(0)
    sys.stdout.buffer.write(file.read())
    sys.stdout.flush()
    file.close()
