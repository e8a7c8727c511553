"""What a student types to join: the class code and a nickname, checked with a reason per field.

A nickname is read as NFKC (full-width, mathematical and other compatibility forms become the
plain letters they look like) and must show what it is: no control, format or invisible
character (zero-width, U+034F, variation selectors, the blank Braille pattern, Hangul fillers),
at least one visible letter or digit, at most two combining marks on a character (zalgo text
spills over the rows around it). Two nicknames that look alike are one: their confusable
skeleton (Unicode's UTS #39, with Unicode's current tables, from ``disarm``) is the same.
"""

import unicodedata
from dataclasses import dataclass

import disarm

from app.live.codes import read_code
from app.live.store import SKELETON_MAX

NICKNAME_MAX = 24
MARKS_MAX = 2  # combining marks on one character
# Not letters one can see, whatever their category says: Unicode's Default_Ignorable_Code_Point
# characters that are not format characters (Cf is refused by category) and blank symbols.
INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
    "\ufe00\ufe01\ufe02\ufe03\ufe04\ufe05\ufe06\ufe07\ufe08\ufe09\ufe0a\ufe0b\ufe0c\ufe0d\ufe0e\ufe0f"
) | frozenset(map(chr, range(0xE0100, 0xE01F0)))  # the supplementary variation selectors
# Control, format, unassigned, private-use and surrogate code points, line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})


@dataclass
class JoinError(Exception):  # not frozen: raising sets its traceback
    """A join that cannot go ahead: ``field`` names the form field, ``status`` the HTTP answer."""

    field: str
    message: str
    status: int = 422


def _hidden(char: str, normalised: bool) -> bool:
    category = unicodedata.category(char)
    return (
        category in HIDDEN_CATEGORIES
        or char in INVISIBLE
        # NFKC makes the visible-width spaces a plain space; what is left is not one.
        or (normalised and category == "Zs" and char != " ")
    )


def _most_marks(nickname: str) -> int:
    """The most combining marks in a row: on one character."""
    most = run = 0
    for char in nickname:
        run = run + 1 if unicodedata.category(char).startswith("M") else 0
        most = max(most, run)
    return most


def read_nickname(typed: str) -> str:
    """The nickname as shown: NFKC, trimmed, 1 to 24 characters that can all be seen (see the
    module doc); a :class:`JoinError` on the ``nickname`` field says what is wrong."""
    nickname = unicodedata.normalize("NFKC", typed).strip()
    if not nickname:
        raise JoinError("nickname", "Choose a nickname (1 to 24 characters).")
    if len(nickname) > NICKNAME_MAX:
        raise JoinError(
            "nickname",
            f"That nickname has {len(nickname)} characters; use at most {NICKNAME_MAX}.",
        )
    # The typed character named if it is one (NFKC turns U+3164 into U+1160, both blank).
    hidden = next((char for char in typed if _hidden(char, False)), None) or next(
        (char for char in nickname if _hidden(char, True)), None
    )
    if hidden is not None:
        raise JoinError(
            "nickname",
            f"A nickname cannot hold control or invisible characters; this one holds"
            f" U+{ord(hidden):04X}.",
        )
    if not any(unicodedata.category(char)[0] in "LN" for char in nickname):
        raise JoinError("nickname", "A nickname needs at least one letter or digit.")
    if _most_marks(nickname) > MARKS_MAX:
        raise JoinError(
            "nickname",
            f"A nickname can put at most {MARKS_MAX} accents or other combining marks on a letter.",
        )
    skeleton = nickname_skeleton(nickname)
    if not skeleton or len(skeleton) > SKELETON_MAX:  # no table maps 24 characters so far
        raise JoinError("nickname", "A nickname needs at least one letter or digit.")
    return nickname


def nickname_key(nickname: str) -> str:
    """Two nicknames are the same in one class when they differ only in case and spacing."""
    return " ".join(nickname.casefold().split())


def nickname_skeleton(nickname: str) -> str:
    """What a nickname looks like: two that look alike ("Alice", "Alice" with a Cyrillic A,
    "AIice" with a capital I) have one skeleton: UTS #39's (digits folded too: 1 and l, 0 and
    O), lower-cased."""
    return disarm.skeleton_key(nickname, digit_policy="tr39")


def read_join_code(typed: str) -> str:
    """The class code as stored, or a :class:`JoinError` on the ``code`` field."""
    code = read_code(typed)
    if code is None:
        raise JoinError(
            "code", "A class code has 6 letters and digits, as shown on the instructor's screen."
        )
    return code
