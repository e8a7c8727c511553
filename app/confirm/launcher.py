"""``python -m app``'s pool: the owner (``python -m app.confirm.host``) as a process of its own
beside the web workers, restarted with a growing pause if it dies.

The web workers get ``ATLAS_CONFIRM_POOL_PROCESS=true`` and only ask it, so no web worker owns
torch processes, a web worker that restarts loses no pool, and every worker asks the same way.
No torch.
"""

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from app import PROJECT_DIR
from app.confirm.host import NO_POOL_EXIT

log = logging.getLogger("uvicorn.error")

POOL_PROCESS_ENV = "ATLAS_CONFIRM_POOL_PROCESS"
# A host that dies at once is started again after 1 s, then 2, 4 … at most 30 s; one that ran a
# minute or more counts as healthy and is restarted after 1 s again.
FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 30.0
HEALTHY_AFTER_S = 60.0
STOP_GRACE_S = 20.0


class Launcher:
    """Starts the host, restarts it when it exits (unless it says no pool is wanted), stops it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name="pool-launcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _supervise(self) -> None:
        pause = FIRST_PAUSE_S
        while True:
            with self._lock:
                if self._stop.is_set():
                    return
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "app.confirm.host"],
                    cwd=PROJECT_DIR,
                    # Its own session: a Ctrl-C on the terminal stops the web workers, whose
                    # launcher then stops the host; the host never takes it for a crash.
                    start_new_session=True,
                )
            started = time.monotonic()
            code = self.process.wait()
            if self._stop.is_set() or code == NO_POOL_EXIT:
                return  # stopping, or the host found no pool wanted (turned off, no torch)
            if time.monotonic() - started >= HEALTHY_AFTER_S:
                pause = FIRST_PAUSE_S
            log.error("the confirm pool's owner exited with %s; restarting in %g s", code, pause)
            if self._stop.wait(pause):
                return
            pause = min(2 * pause, LONGEST_PAUSE_S)

    def stop(self) -> None:
        """Stop restarting, end the host (SIGTERM, then SIGKILL after a grace period)."""
        with self._lock:
            self._stop.set()
            process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._thread.join(timeout=STOP_GRACE_S)


@contextlib.contextmanager
def pool_process() -> Iterator[Launcher]:
    """The pool's owner runs while the block does; web workers started inside it ask it."""
    os.environ[POOL_PROCESS_ENV] = "true"
    launcher = Launcher()
    launcher.start()
    try:
        yield launcher
    finally:
        launcher.stop()
