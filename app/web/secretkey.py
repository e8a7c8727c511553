"""The secrets the server makes itself when they are not set: the signing key
(``ATLAS_SECRET_KEY``) and the instructor password (``ATLAS_INSTRUCTOR_PASSWORD``), each random,
made once and kept in the data folder.

Every web worker, and every later run of the server on the same data folder, must use the same
ones: a quiz score, a class's host cookie or a student's cookie signed before a restart must
still verify after it (a student whose laptop lid closed comes back as themselves), and the
password printed at start must be the one every worker asks for. Each is therefore kept in
``<data folder>/<its file>`` (mode 0600, the folder private to this user). ``python -m app`` makes
them before its workers start (:func:`kept_secrets`); a server started otherwise makes them in
whichever worker first finds none (atomically: a complete file appears under its name or none
does), and everyone after reads them. A data folder that cannot hold them privately stops the
server from starting, with how to fix it: a key or password of each worker's own would make
every second request a stranger's.
"""

import contextlib
import logging
import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from app.settings import Settings

log = logging.getLogger("atlas")
KEY_FILE = "secret-key"
PASSWORD_FILE = "instructor-password"
# The generated password: three groups of four characters a person reads off a terminal and
# types, without look-alikes (no 0/O, 1/I/L: the join codes' alphabet), 31¹² ≈ 2⁵⁹ of them.
PASSWORD_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
PASSWORD_GROUPS, PASSWORD_GROUP = 3, 4


class SecretKeyError(RuntimeError):
    """The data folder cannot hold a private secret (wrong owner, open permissions)."""


def _refuse_unless_private(path: Path, message: str) -> None:
    """Refuse ``path`` unless this user owns it and no one else may read or write it (a folder
    or file another user made first could hand us their key)."""
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise SecretKeyError(message)


def new_key() -> str:
    return secrets.token_urlsafe(32)


def new_password() -> str:
    """A random instructor password such as ``K7QM-2XRD-HP4W``."""
    groups = (
        "".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(PASSWORD_GROUP))
        for _ in range(PASSWORD_GROUPS)
    )
    return "-".join(groups)


def kept(folder: Path, name: str, make: Callable[[], str], setting: str) -> tuple[str, bool]:
    """The secret kept in ``folder/name`` (the folder created 0700 if missing), made by
    ``make`` if none is there yet; and whether it was made now. ``setting`` is the variable
    that would replace it (named in the refusals)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        _refuse_unless_private(
            folder,
            f"{folder} (ATLAS_DATA_DIR) must belong to this user with mode 0700 to hold the"
            f" generated {name}: run `chmod 700 {folder}` (or chown it to this user), or set"
            f" {setting}",
        )
        target = folder / name
        made = False
        if not target.exists():
            descriptor, draft = tempfile.mkstemp(dir=folder, prefix=".draft-")  # mode 0600
            try:
                with os.fdopen(descriptor, "w") as file:
                    file.write(make())
                # Atomic: the name appears with the whole secret, or not at all if another
                # worker was first (then its secret is the one every worker reads).
                with contextlib.suppress(FileExistsError):
                    os.link(draft, target)
                    made = True
            finally:
                os.unlink(draft)
        _refuse_unless_private(
            target, f"{target} must belong to this user with mode 0600 (chmod 600 {target})"
        )
        value = target.read_text().strip()
    except OSError as error:
        raise SecretKeyError(
            f"cannot keep the generated {name} in {folder} ({error}); fix the folder or set"
            f" {setting}"
        ) from None
    if not value:
        raise SecretKeyError(f"{target} is empty; remove it or set {setting}")
    return value, made


def _kept_and_said(
    folder: Path, name: str, make: Callable[[], str], setting: str, note: str
) -> str:
    """``kept``, logging ``note`` (with its ``{value}`` and ``{path}``) when made now."""
    value, made = kept(folder, name, make, setting)
    if made:
        log.warning("%s", note.format(value=value, path=folder / name))
    return value


def kept_secret(folder: Path) -> str:
    """The signing key kept in ``folder``."""
    note = (
        "ATLAS_SECRET_KEY is not set: cookies are signed with a random key made now and kept"
        " in {path}; keep that folder to keep scores and classes across restarts"
    )
    return _kept_and_said(folder, KEY_FILE, new_key, "ATLAS_SECRET_KEY", note)


def kept_password(folder: Path) -> str:
    """The instructor password kept in ``folder``."""
    note = (
        "ATLAS_INSTRUCTOR_PASSWORD is not set: starting a class asks for {value}, made now and"
        " kept in {path}"
    )
    return _kept_and_said(folder, PASSWORD_FILE, new_password, "ATLAS_INSTRUCTOR_PASSWORD", note)


def kept_secrets(settings: Settings) -> Settings:
    """``settings`` with the signing key and instructor password filled in from the data
    folder where they are not set (made there if missing); raises :class:`SecretKeyError` when
    the folder cannot hold them."""
    filled: dict[str, str] = {}
    if not settings.secret_key:
        filled["secret_key"] = kept_secret(settings.data_dir)
    if not settings.instructor_password:
        filled["instructor_password"] = kept_password(settings.data_dir)
    return settings.model_copy(update=filled) if filled else settings
