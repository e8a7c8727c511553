"""A classroom server as the image runs it, and what a class does to it (shared with the tests)."""

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._http import TLS
from bench._procs import descendants, holds_torch
from bench._servers import ROOT, Server, free_port, launch

ENTRYPOINT = ROOT / "scripts" / "docker-entrypoint"
VENV_BIN = str(Path(sys.executable).parent)


def own_pool(runtime_dir: Path) -> dict[str, str]:
    """A private runtime folder: the server owns its pool instead of joining another's."""
    return {"ATLAS_CONFIRM_RUNTIME_DIR": str(runtime_dir)}


def start_like_the_image(runtime_dir: Path, workers: int = 2) -> Server:
    """scripts/docker-entrypoint with the image's two workers and no signing key given; its
    data folder (the image's /data) is ``runtime_dir/data``."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name != "ATLAS_SECRET_KEY"}
    env |= {
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "WEB_CONCURRENCY": str(workers),
        "ATLAS_DATA_DIR": str(runtime_dir / "data"),
        **own_pool(runtime_dir),
    }
    command = [str(ENTRYPOINT), "--host", "127.0.0.1", "--port", str(port)]
    return launch([*command, "--log-level", "warning"], port=port, ready_path="/healthz", env=env)


# Seconds within which a pool, new or rebuilt after a kill, is ready.
POOL_READY_S = 120.0


def wait_pool_ready(url: str, timeout: float = POOL_READY_S) -> int:
    """Wait until the confirmation pool is ready; returns its world size (the bound)."""
    deadline = time.monotonic() + timeout
    status: dict[str, object] = {}
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/api/confirm/status", timeout=10, verify=TLS).json()
        if status["state"] == "ready":
            return int(str(status["world_size"]))
        time.sleep(0.5)
    raise RuntimeError(f"the confirmation pool was not ready within {timeout} s: {status}")


def confirm_body(n: int) -> dict[str, object]:
    """Distinct requests, so none is answered from the cache of identical ones."""
    return {"counts": [2, 6, n % 5 + 1], "means": [1, 3, n], "eta": 0.1, "w": 10 + n}


def post_all_at_once(url: str, bodies: list[dict[str, object]]) -> list[httpx.Response]:
    """POST every body to /api/confirm at the same time, one thread each, each from a student's
    own address (127.0.0.10, .11, …: any of 127/8 reaches the server), as a class's laptops
    would: the pool's queue serves each address in turn, at most two jobs each."""

    def post(student: int, body: dict[str, object]) -> httpx.Response:
        transport = httpx.HTTPTransport(local_address=f"127.0.0.{10 + student}", verify=TLS)
        with httpx.Client(transport=transport, timeout=120) as client:
            return client.post(f"{url}/api/confirm", json=body)

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        return list(pool.map(post, range(len(bodies)), bodies))


@dataclass
class TorchSampler:
    """Counts the torch processes below a server every few milliseconds while a block runs."""

    root: int
    counts: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def run(self) -> None:
        # A process that holds torch keeps holding it: read the maps of new processes only.
        known: set[int] = set()
        while not self._stop.is_set():
            alive = descendants(self.root)
            known = {pid for pid in known if pid in alive}
            known |= {pid for pid in alive if pid not in known and holds_torch(pid)}
            self.counts.append(len(known))
            time.sleep(0.01)

    def __enter__(self) -> "TorchSampler":
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
