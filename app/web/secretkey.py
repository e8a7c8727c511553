"""The quiz cookie's signing key when ``ATLAS_SECRET_KEY`` is not set: random, one per server run.

Every web worker of one server must sign with the same key, or a score signed by one worker
reads as forged on the next. The key is therefore kept in the runtime folder (private to this
user), in a file named after the server process: uvicorn's supervisor when it runs workers
(``--workers N``), else the one serving process. The first worker to start writes it (atomically:
a complete file appears under its name or none does), the others read it. A new server run has
a new process, hence a new key: scores signed before a restart no longer verify.
"""

import contextlib
import logging
import multiprocessing
import os
import secrets
import stat
import tempfile
from pathlib import Path

log = logging.getLogger("atlas")
PREFIX = "secret-key-"


class SecretKeyError(RuntimeError):
    """The runtime folder cannot hold a private key (wrong owner, open permissions)."""


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks (Linux), so a reused pid makes another name."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return "0"
    return fields[19] if len(fields) > 19 else "0"


def server_identity() -> str:
    """``<pid>-<start time>`` of the process that owns this server's workers."""
    parent = multiprocessing.parent_process()
    pid = parent.pid if parent is not None and parent.pid is not None else os.getpid()
    return f"{pid}-{_start_time(pid)}"


def private_folder(folder: Path) -> Path:
    """``folder``, created 0700 if missing; refused unless this user owns it and no one else
    may read or write it (a folder another user made first could hand us their key)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise SecretKeyError(
            f"{folder} (ATLAS_CONFIRM_RUNTIME_DIR) must belong to this user with mode 0700"
            " to hold the generated signing key; fix it or set ATLAS_SECRET_KEY"
        )
    return folder


def _forget_stale(folder: Path, keep: str) -> None:
    """Remove keys of server runs whose process is gone (best effort)."""
    for path in folder.glob(f"{PREFIX}*"):
        identity = path.name.removeprefix(PREFIX)
        if identity == keep:
            continue
        pid, _, started = identity.partition("-")
        if pid.isdigit() and _start_time(int(pid)) != started:
            path.unlink(missing_ok=True)


def server_secret(folder: Path) -> str:
    """The key of this server run, made by whichever worker comes first."""
    folder = private_folder(folder)
    identity = server_identity()
    target = folder / f"{PREFIX}{identity}"
    if not target.exists():
        descriptor, draft = tempfile.mkstemp(dir=folder, prefix=".draft-")  # mode 0600
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(32))
            # Atomic: the name appears with the whole key, or not at all if another worker
            # was first (then its key is the one every worker reads).
            with contextlib.suppress(FileExistsError):
                os.link(draft, target)
        finally:
            os.unlink(draft)
        _forget_stale(folder, identity)
        log.warning(
            "ATLAS_SECRET_KEY is not set: quiz scores are signed with a random key made for this"
            " server run and shared by its workers; scores reset when the server restarts"
        )
    key = target.read_text()
    if not key:
        raise SecretKeyError(f"{target} is empty; remove it or set ATLAS_SECRET_KEY")
    return key


def signing_key(folder: Path) -> str:
    """``server_secret``, or, if the runtime folder cannot hold it, a key for this process
    alone (logged: with several workers, scores then hold only on the worker that signed them).
    The server still starts: only the shared key is lost, not the lesson."""
    try:
        return server_secret(folder)
    except (OSError, SecretKeyError) as error:
        log.error(
            "cannot share a generated signing key through %s (%s): this worker signs with its"
            " own key; set ATLAS_SECRET_KEY so every worker shares one",
            folder,
            error,
        )
        return secrets.token_urlsafe(32)
