"""Start a real uvicorn (the app or the floor) on a loopback port, and stop it."""

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from bench._http import TLS

ROOT = Path(__file__).resolve().parent.parent
# The app, built by its factory as each worker starts (uvicorn --factory).
APP = "app.main:create_app"


@dataclass(frozen=True)
class Server:
    url: str
    process: subprocess.Popen[bytes]
    startup_s: float = 0.0  # wall time from launch to the first 200 on the ready path


# Where servers started here listen: below the range the kernel gives outgoing connections, so
# no client socket can take a port between its pick and the server's bind (a port from bind(0)
# comes from that range, and the tests open thousands of client connections beside each other).
LOWEST_PORT = 10_000
OUTGOING_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")


def server_ports() -> range:
    """The ports :func:`free_port` picks from: from ``LOWEST_PORT`` up to the kernel's outgoing
    range (Linux's ``ip_local_port_range``; elsewhere 32768, below BSD's and Windows' 49152)."""
    try:
        outgoing_low = int(OUTGOING_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        outgoing_low = 32_768
    return range(LOWEST_PORT, max(LOWEST_PORT, outgoing_low))


def free_port(ports: range | None = None) -> int:
    """A loopback port no socket is bound to, for a server about to start, from ``ports`` (by
    default :func:`server_ports`), picked at random so processes starting servers at once rarely
    try the same one. With no such range (the outgoing range starts at ``LOWEST_PORT`` or
    below), the kernel's pick."""
    candidates = server_ports() if ports is None else ports
    for port in random.sample(candidates, min(len(candidates), 1000)):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # bound, listening, or closing (TIME_WAIT) there: another one
                continue
            return port
    if candidates:
        raise RuntimeError(f"no free loopback port in {candidates.start}-{candidates.stop - 1}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def uvicorn_command(app: str, port: int, workers: int) -> list[str]:
    """The same settings for the app and its floor, so only the app's own work differs: served
    as ``python -m app`` serves the lesson (``bench/_serve.py``), from the working directory.
    ``APP`` is built by its factory; any other import string names an app."""
    factory = ["--factory"] if app == APP else []
    return [
        sys.executable,
        str(ROOT / "bench" / "_serve.py"),
        app,
        str(port),
        str(workers),
        *factory,
    ]


def launch(
    command: Sequence[str],
    *,
    port: int,
    ready_path: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
    log: IO[bytes] | None = None,
    timeout: float = 60.0,
    poll_s: float = 0.05,
) -> Server:
    """Start ``command`` (a server on ``port``, environment ``env`` or this process's, in
    ``cwd``, its output in ``log`` or this process's) and return once ``ready_path`` answers 200,
    asked every ``poll_s`` seconds (stopped, and an error, if it does not within ``timeout``)."""
    environment = dict(os.environ if env is None else env)
    started = time.monotonic()
    process = subprocess.Popen(list(command), cwd=cwd, env=environment, stdout=log, stderr=log)
    server = Server(url=f"http://127.0.0.1:{port}", process=process)
    try:
        wait_ready(server, ready_path, timeout, poll_s)
    except BaseException:
        stop(server)
        raise
    return Server(server.url, process, startup_s=time.monotonic() - started)


def stop(server: Server) -> None:
    """SIGTERM, as a container runtime sends it; SIGKILL only if it overstays 30 s."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@contextmanager
def serve(
    app: str,
    *,
    workers: int,
    ready_path: str,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
) -> Iterator[Server]:
    """A uvicorn for ``app`` (imported from ``cwd``) that answers 200 on ``ready_path``;
    stopped when the block ends."""
    port = free_port()
    command = uvicorn_command(app, port, workers)
    environment = {**os.environ, **(env or {})}
    server = launch(command, port=port, ready_path=ready_path, env=environment, cwd=cwd)
    try:
        yield server
    finally:
        stop(server)


def wait_ready(server: Server, path: str, timeout: float = 60.0, poll_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode} before serving")
        try:
            if httpx.get(server.url + path, timeout=2.0, verify=TLS).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(poll_s)
    raise RuntimeError(f"{server.url}{path} did not answer 200 within {timeout} s")
