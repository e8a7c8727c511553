"""What a student types to join: the class code and a nickname, checked with a reason per field."""

import unicodedata
from dataclasses import dataclass

from app.live.codes import read_code

NICKNAME_MAX = 24


@dataclass
class JoinError(Exception):  # not frozen: raising sets its traceback
    """A join that cannot go ahead: ``field`` names the form field, ``status`` the HTTP answer."""

    field: str
    message: str
    status: int = 422


def read_nickname(typed: str) -> str:
    """The nickname as shown: NFC, trimmed, 1 to 24 characters, no control characters."""
    nickname = unicodedata.normalize("NFC", typed).strip()
    if not nickname:
        raise JoinError("nickname", "Choose a nickname (1 to 24 characters).")
    if len(nickname) > NICKNAME_MAX:
        raise JoinError(
            "nickname",
            f"That nickname has {len(nickname)} characters; use at most {NICKNAME_MAX}.",
        )
    if any(unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"} for char in nickname):
        raise JoinError("nickname", "A nickname cannot hold control or invisible characters.")
    return nickname


def nickname_key(nickname: str) -> str:
    """Two nicknames are the same in one class when they differ only in case and spacing."""
    return " ".join(nickname.casefold().split())


def read_join_code(typed: str) -> str:
    """The class code as stored, or a :class:`JoinError` on the ``code`` field."""
    code = read_code(typed)
    if code is None:
        raise JoinError(
            "code", "A class code has 6 letters and digits, as shown on the instructor's screen."
        )
    return code
