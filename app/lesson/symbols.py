"""The lesson's flat symbols ("nr", "QRS", "C(r)ij") given back their sub- and superscripts.

The published "Symbols and units" lists spell each symbol flat: the subscript of ``n_r`` is run
into ``nr``. Which letters are the subscript is never guessed from the letters themselves
(``fl``, the rounding function, is not f with subscript l): a flat symbol is marked up only when
the record's own formulas define it, i.e. when exactly one script form in its LaTeX
(``n_r``, ``Q_{\\mathrm{RS}}``, ``C^{(r)}_{ij}``, ``w_{\\mathrm{new}}``, ``\\bar g_r``) flattens
to that text. A symbol the formulas do not define, or define two ways, stays as written.
"""

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from latex2mathml.symbols_parser import convert_symbol
from markupsafe import Markup

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.DOTALL)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?=\S)([^$\n]+?)(?<=\S)\$(?!\$)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Combining marks for the accents a base letter may carry: \bar g is "ḡ" in the flat text.
_ACCENTS = {r"\bar": "\u0304", r"\overline": "\u0305", r"\hat": "\u0302", r"\tilde": "\u0303",
            r"\dot": "\u0307", r"\ddot": "\u0308", r"\vec": "\u20d7"}  # fmt: skip
_WORDS = {r"\mathrm", r"\text", r"\operatorname", r"\mathit", r"\textrm"}


@dataclass(frozen=True, slots=True)
class Symbol:
    """A symbol as published flat (``text``) and as its formula writes it."""

    text: str
    base: str
    sub: str = ""
    sup: str = ""

    @property
    def markup(self) -> Markup:
        html = Markup("{}").format(self.base)
        if self.sup:
            html += Markup("<sup>{}</sup>").format(self.sup)
        if self.sub:
            html += Markup("<sub>{}</sub>").format(self.sub)
        return html


def unescaped(text: str) -> str:
    """``text`` with its Markdown backslash escapes resolved (``shard\\_map`` → ``shard_map``)."""
    return _ESCAPE.sub(r"\1", text)


def formulas(markdown: str) -> list[str]:
    """The LaTeX of every ``$$…$$`` and ``$…$`` formula in ``markdown``."""
    found = [m.group(1) for m in _DISPLAY.finditer(markdown)]
    rest = _DISPLAY.sub(" ", markdown)
    return found + [m.group(1) for m in _INLINE.finditer(rest)]


def defined_forms(latex_sources: Iterable[str]) -> dict[str, Symbol | None]:
    """Each flat spelling of a symbol in the formulas, and its form (None: two forms differ).

    A symbol without scripts is a form too (``\\mathrm{fl}`` is "fl" and stays "fl").
    """
    forms: dict[str, Symbol | None] = {}
    for latex in latex_sources:
        for symbol in _scripted(latex):
            for flat in _flat_spellings(symbol):
                known = forms.get(flat, symbol)
                forms[flat] = symbol if known == symbol else None
    return {
        flat: s if s is None else Symbol(flat, s.base, s.sub, s.sup) for flat, s in forms.items()
    }


def _flat_spellings(symbol: Symbol) -> set[str]:
    # A flattened C^{(r)}_{ij} may read "C(r)ij" or "Cij(r)": either order names it.
    return {
        unicodedata.normalize("NFC", symbol.base + symbol.sup + symbol.sub),
        unicodedata.normalize("NFC", symbol.base + symbol.sub + symbol.sup),
    }


def _scripted(latex: str) -> Iterator[Symbol]:
    tokens = [t for t in _TOKEN.findall(latex) if not t.isspace()]
    pos = 0
    while pos < len(tokens):
        base, after = _base(tokens, pos)
        if base is None:
            pos += 1
            continue
        sub = sup = ""
        while after < len(tokens) and tokens[after] in ("_", "^"):
            text, end = _flat_argument(tokens, after + 1)
            if text is None:  # a script that does not flatten: no symbol here
                break
            if tokens[after] == "_":
                sub = text
            else:
                sup = text
            after = end
        else:
            yield Symbol(text="", base=base, sub=sub, sup=sup)
        pos = max(after, pos + 1)


def _base(tokens: list[str], pos: int) -> tuple[str | None, int]:
    """The base symbol at ``pos`` as flat text, and the position after it."""
    token = tokens[pos]
    if len(token) == 1 and token.isalpha():
        return token, pos + 1
    if token in _ACCENTS and pos + 1 < len(tokens):
        inner, end = _flat_argument(tokens, pos + 1)
        if inner is not None and len(inner) == 1:
            return unicodedata.normalize("NFC", inner + _ACCENTS[token]), end
        return None, pos + 1
    if token in _WORDS:
        return _flat_argument(tokens, pos + 1)
    if (letter := _letter(token)) is not None:
        return letter, pos + 1
    return None, pos + 1


def symbol_char(command: str) -> str | None:
    """The character latex2mathml writes for a symbol command (``\\oplus`` → ⊕), else None."""
    code = convert_symbol(command)
    return None if code is None else chr(int(code, 16))


def _letter(command: str) -> str | None:
    """The character a letter command stands for (``\\eta`` → η), else None."""
    char = symbol_char(command) if command.startswith("\\") else None
    return char if char and char.isalpha() else None


def braced(tokens: Sequence[str], pos: int) -> tuple[Sequence[str], int] | None:
    """The tokens inside the group that opens at ``pos`` (nested braces among them) and the
    position after it; None if it never closes."""
    depth = 0
    for end in range(pos, len(tokens)):
        depth += (tokens[end] == "{") - (tokens[end] == "}")
        if depth == 0:
            return tokens[pos + 1 : end], end + 1
    return None


def _flat_argument(tokens: list[str], pos: int) -> tuple[str | None, int]:
    """A script or word argument flattened to its letters, and the position after it."""
    if pos >= len(tokens):
        return None, pos
    if tokens[pos] != "{":
        token = tokens[pos]
        flat = token if not token.startswith("\\") else _letter(token)
        return flat, pos + 1
    group = braced(tokens, pos)
    if group is None:
        return None, len(tokens)
    inner, end = group
    out: list[str] = []
    for token in inner:
        if token in ("{", "}") or token in _WORDS:
            continue  # \mathrm{RS} flattens to its letters
        letter = _letter(token) if token.startswith("\\") else token
        if letter is None or token in ("_", "^"):
            return None, end
        out.append(letter)
    return "".join(out), end


def symbol_forms(text: str, forms: Mapping[str, Symbol | None]) -> list[Symbol | str]:
    """The comma-separated symbols of a "Symbols and units" cell: each its form, or as written."""
    return [forms.get(unescaped(part)) or part for part in text.split(", ")]
