"""Private PostgreSQL servers from Debian's binaries, for the tests and the benchmarks.

Each server runs in a temporary folder on a free loopback port: a cluster made by ``initdb`` with
trust authentication (run as ``postgres`` when we are root). :func:`running` starts one and,
whatever happens, stops it and removes its folder; ``stop()`` and ``start()`` stop and restart
one on the same port and data (fault tests).
"""

import ctypes
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._servers import free_port

POSTGRES_ROOT = Path(os.environ.get("ATLAS_TEST_POSTGRES_ROOT", "/usr/lib/postgresql"))
POSTGRES_MIN_VERSION = 15
# Runs as this user when the tests run as root (PostgreSQL refuses to run as root).
POSTGRES_USER = "postgres"
START_TIMEOUT_S = 30.0
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_TIMEOUT_S = 15.0


def postgres_bin(root: Path = POSTGRES_ROOT) -> Path | None:
    """The newest ``bin`` folder of Debian's PostgreSQL at ``root`` (15 or later), if any."""
    versions = [
        int(child.name)
        for child in root.glob("*")
        if child.name.isdigit() and (child / "bin" / "postgres").exists()
    ]
    usable = [version for version in versions if version >= POSTGRES_MIN_VERSION]
    return root / str(max(usable)) / "bin" if usable else None


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send ``sig`` and wait; a server that does not stop in time is killed."""
    if process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _end_with_parent() -> None:
    """In the child: SIGTERM it when the process that started it dies (a test run killed by a
    timeout leaves no server behind). Set after Popen drops to the server's user, which would
    clear it."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before it accepted")
        if ready():
            return
        time.sleep(0.05)
    _stop(process, signal.SIGKILL)
    raise RuntimeError(f"{what} did not accept connections within {START_TIMEOUT_S} s")


@dataclass(kw_only=True)
class Postgres:
    """A private PostgreSQL cluster in ``folder`` (its log too) on a loopback ``port``: trust
    authentication, loopback only, no fsync (test data)."""

    bin_dir: Path
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{POSTGRES_USER}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self) -> dict[str, Any]:
        """Popen arguments that run a command as the cluster's owner: ``postgres`` when we are
        root (with root's groups dropped), else ourselves."""
        if os.geteuid() != 0:
            return {}
        return {"user": POSTGRES_USER, "group": POSTGRES_USER, "extra_groups": []}

    def initdb(self) -> None:
        self.data_dir.mkdir(mode=0o700)
        if os.geteuid() == 0:
            owner = pwd.getpwnam(POSTGRES_USER)
            for path in (self.folder, self.data_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-A", "trust",
             "-U", POSTGRES_USER, "-E", "UTF8", "--no-sync", "--no-instructions"],
            check=True, capture_output=True, **self._as_owner(),
        )  # fmt: skip

    def start(self) -> None:
        """Start (or start again, on the same port and data) and wait until it accepts."""
        with (self.folder / "postgres.log").open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                 "-k", str(self.folder), "-h", "127.0.0.1", "-c", "fsync=off",
                 "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent,
                **self._as_owner(),
            )  # fmt: skip
        _wait_until(self.ready, self.process, f"PostgreSQL on port {self.port}")

    def stop(self) -> None:
        """A fast shutdown (SIGINT): every client disconnected, the data kept."""
        if self.process is not None:
            _stop(self.process, signal.SIGINT)

    def ready(self) -> bool:
        done = subprocess.run(
            [str(self.bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
            check=False,
        )
        return done.returncode == 0

    def psql(self, sql: str, database: str = "postgres") -> str:
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", POSTGRES_USER, "-d", database,
             "-c", sql],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        return done.stdout.strip()

    def create_database(self) -> str:
        """A new empty database; its URL."""
        name = f"atlas_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        if not re.fullmatch(r"atlas_[0-9a-f]{12}", name):
            raise ValueError(f"not a test database: {name!r}")
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def new_postgres(bin_dir: Path) -> Postgres:
    """A cluster made by ``bin_dir``'s initdb in a new temporary folder, not yet started."""
    folder = Path(tempfile.mkdtemp(prefix="atlas-postgres-"))
    os.chmod(folder, 0o700)
    server = Postgres(bin_dir=bin_dir, folder=folder)
    try:
        server.initdb()
    except BaseException:
        _remove(folder)
        raise
    return server


@contextmanager
def running(server: Postgres) -> Iterator[Postgres]:
    """Start ``server``; stop it and remove its folder afterwards, whatever the test did."""
    try:
        server.start()
        yield server
    finally:
        server.stop()
        _remove(server.folder)
