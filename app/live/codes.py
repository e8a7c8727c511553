"""Join codes: six characters a student can read off a wall and type on a phone.

The alphabet leaves out the characters that look alike (0/O, 1/I/L), and a typed code is read
case-insensitively with spaces and dashes ignored, so ``abc-def`` finds ``ABCDEF``.
"""

import secrets

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
LENGTH = 6
_TYPED_SEPARATORS = str.maketrans("", "", " -\t")


def new_code() -> str:
    """A random code (31⁶ ≈ 887 million of them; the store retries on the rare repeat)."""
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def read_code(typed: str) -> str | None:
    """The code a student typed, as stored; None if it cannot be one."""
    code = typed.translate(_TYPED_SEPARATORS).upper()
    if len(code) != LENGTH or any(char not in ALPHABET for char in code):
        return None
    return code
