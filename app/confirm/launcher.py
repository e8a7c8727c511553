"""The pool's owner as a child of one web worker: every web worker runs a launcher, the one that
takes the owner's lock starts ``python -m app.confirm.host`` and hands it the lock, the others
wait for the lock and take over when its holder dies. A host that dies is started again after
1 s, then 2, 4 … at most 30 s (if the lock is still free then).

So there is one way to own the pool, under plain uvicorn, ``python -m app`` and a test's
TestClient alike: no web worker imports torch or holds the lock itself, and the owner never
outlives the web worker that started it (it stops when that worker stops, or notices within a
second that it is gone). No torch.
"""

import logging
import os
import subprocess
import sys
import threading
import time

from app import PROJECT_DIR
from app.confirm.host import NO_POOL_EXIT, take_lock
from app.settings import Settings

log = logging.getLogger("atlas.confirm")

LOCK_POLL_SECONDS = 1.0
# A host that dies at once is started again after 1 s, then 2, 4 … at most 30 s; one that ran a
# minute or more counts as healthy and is restarted after 1 s again.
FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 30.0
HEALTHY_AFTER_S = 60.0
STOP_GRACE_S = 20.0


class Launcher:
    """Takes the owner's lock when it is free, runs the host with it, restarts it, stops it."""

    def __init__(self, settings: Settings) -> None:
        confirm = {name for name in Settings.model_fields if name.startswith("confirm_")}
        self._settings = settings
        self._command = [
            *(sys.executable, "-m", "app.confirm.host", "--parent", str(os.getpid())),
            *("--settings", settings.model_dump_json(include=confirm)),
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name="pool-launcher", daemon=True)

    @property
    def owns(self) -> bool:
        """Whether the pool's owner is this web worker's child now."""
        process = self.process
        return process is not None and process.poll() is None

    def start(self) -> None:
        self._thread.start()

    def _supervise(self) -> None:
        pause = FIRST_PAUSE_S
        while not self._stop.is_set():
            try:
                lock = take_lock(self._settings)
            except OSError as exc:
                log.error("cannot use the runtime folder (ATLAS_CONFIRM_RUNTIME_DIR): %s", exc)
                return
            if lock is None:  # another web worker's host owns the pool
                self._stop.wait(LOCK_POLL_SECONDS)
                continue
            with self._lock:
                if self._stop.is_set():
                    os.close(lock)
                    return
                self.process = subprocess.Popen(
                    [*self._command, "--lock-fd", str(lock)],
                    pass_fds=[lock],
                    cwd=PROJECT_DIR,
                    # Its own session: a Ctrl-C on the terminal reaches only the server, which
                    # then stops the host; the host never takes it for a crash.
                    start_new_session=True,
                )
            os.close(lock)  # the host alone holds it now: the lock lives exactly as long as it
            started = time.monotonic()
            code = self.process.wait()
            if self._stop.is_set() or code == NO_POOL_EXIT:
                return  # stopping, or the host cannot use the runtime folder
            if time.monotonic() - started >= HEALTHY_AFTER_S:
                pause = FIRST_PAUSE_S
            log.error("the confirm pool's owner exited with %s; restarting in %g s", code, pause)
            if self._stop.wait(pause):
                return
            pause = min(2 * pause, LONGEST_PAUSE_S)

    def stop(self) -> None:
        """Stop taking the lock, end the host (SIGTERM, then SIGKILL after a grace period)."""
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
