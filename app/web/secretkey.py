"""The signing key when ``ATLAS_SECRET_KEY`` is not set: random, made once, kept in the data folder.

Every web worker, and every later run of the server on the same data folder, must sign with the
same key: a quiz score, a class's host cookie or a student's cookie signed before a restart must
still verify after it (a student whose laptop lid closed comes back as themselves). The key is
therefore kept in ``<data folder>/secret-key`` (mode 0600, the folder private to this user). The
first worker ever to start writes it (atomically: a complete file appears under its name or none
does); everyone after reads it.
"""

import contextlib
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path

log = logging.getLogger("atlas")
KEY_FILE = "secret-key"


class SecretKeyError(RuntimeError):
    """The data folder cannot hold a private key (wrong owner, open permissions)."""


def _refuse_unless_private(path: Path, message: str) -> None:
    """Refuse ``path`` unless this user owns it and no one else may read or write it (a folder
    or key file another user made first could hand us their key)."""
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise SecretKeyError(message)


def kept_secret(folder: Path) -> str:
    """The key kept in ``folder`` (created 0700 if missing), made by whichever worker first
    finds none."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _refuse_unless_private(
        folder,
        f"{folder} (ATLAS_DATA_DIR) must belong to this user with mode 0700 to hold the"
        " generated signing key; fix it or set ATLAS_SECRET_KEY",
    )
    target = folder / KEY_FILE
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
        log.warning(
            "ATLAS_SECRET_KEY is not set: cookies are signed with a random key made now and kept"
            " in %s; keep that folder to keep scores and classes across restarts",
            target,
        )
    _refuse_unless_private(target, f"{target} must belong to this user with mode 0600")
    key = target.read_text()
    if not key:
        raise SecretKeyError(f"{target} is empty; remove it or set ATLAS_SECRET_KEY")
    return key


def signing_key(folder: Path) -> str:
    """``kept_secret``, or, if the data folder cannot hold it, a key for this process alone
    (logged: with several workers, or after a restart, cookies then hold only on the process
    that signed them). The server still starts: only the kept key is lost, not the lesson."""
    try:
        return kept_secret(folder)
    except (OSError, SecretKeyError) as error:
        log.error(
            "cannot keep a generated signing key in %s (%s): this process signs with its own"
            " key; set ATLAS_SECRET_KEY so every worker and restart shares one",
            folder,
            error,
        )
        return secrets.token_urlsafe(32)
