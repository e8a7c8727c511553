"""LaTeX from the lesson to MathML on the server, with a spoken text alternative."""

import re
from collections.abc import Iterator

from latex2mathml.converter import convert
from markupsafe import Markup, escape

_UPRIGHT_LETTER = r'<mi mathvariant="normal">([A-Za-z])</mi>'
# latex2mathml spells \mathrm{new} as three one-letter <mi>; one multi-letter <mi> is the word
# (upright by default in MathML Core, and read as a word by screen readers).
_UPRIGHT_WORD = re.compile(f"(?:{_UPRIGHT_LETTER}){{2,}}")
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.DOTALL)

_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega",
}  # fmt: skip
_WORDS = {"=": "equals", "+": "plus", "-": "minus", "<": "is less than", ">": "is greater than"}
_SPACES = {"\\qquad": ",", "\\quad": ",", "\\,": "", "\\;": "", "\\!": ""}
_BIG_OPERATORS = {"\\sum": "the sum", "\\prod": "the product"}
_ACCENTS = {"\\bar": "bar", "\\hat": "hat", "\\tilde": "tilde", "\\vec": "vector"}


def to_mathml(latex: str, *, display: bool) -> Markup:
    """MathML for ``latex``: ``<math display="block">`` or inline, named by its spoken form.

    ``aria-label`` carries an English reading (what a screen reader announces) and ``alttext``
    the LaTeX source. Over-bars are marked ``accent="true"`` so the bar sits on its letter, and
    an upright word (``\\mathrm{new}``) is one ``<mi>``.
    """
    mathml = convert(latex, display="block" if display else "inline")
    mathml = mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    mathml = mathml.replace("<mover>", '<mover accent="true">')
    mathml = _UPRIGHT_WORD.sub(_word, mathml)
    label = f' aria-label="{escape(spoken(latex))}" alttext="{escape(latex.strip())}"'
    return Markup(mathml.replace("<math", "<math" + label, 1))


def _word(match: re.Match[str]) -> str:
    letters = re.findall(_UPRIGHT_LETTER, match.group())
    return f"<mi>{''.join(letters)}</mi>"


def spoken(latex: str) -> str:
    """An English reading of ``latex``, e.g. ``\\frac{1}{N}`` → "1 over N".

    Covers the notation the lesson uses (sums, fractions, sub- and superscripts, accents,
    Greek letters, ``\\mathrm``); an unknown command is read as its name.
    """
    tokens = [t for t in _TOKEN.findall(latex) if not t.isspace()]
    words = _Reader(tokens).sequence()
    text = " ".join(w for w in words if w)
    text = re.sub(r"\s+([,;.)])", r"\1", text)
    text = re.sub(r"([,;])(?:[,;])+", r"\1", text)
    return re.sub(r"\(\s+", "(", text).strip()


class _Reader:
    """A recursive reading of a LaTeX token list, one group at a time."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _next(self) -> str | None:
        if self.pos >= len(self.tokens):
            return None
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def sequence(self) -> list[str]:
        words: list[str] = []
        while (token := self._peek()) is not None and token != "}":
            words.extend(self.atom())
        return words

    def argument(self) -> list[str]:
        """One argument: a braced group, or the single atom that follows."""
        if self._peek() == "{":
            self._next()
            words = self.sequence()
            self._next()  # the closing brace
            return words
        return list(self._atom_words())

    def atom(self) -> list[str]:
        words = list(self._atom_words())
        while self._peek() in ("_", "^"):
            mark = self._next()
            words += ["sub" if mark == "_" else "to the power", *self.argument()]
        return words

    def _atom_words(self) -> Iterator[str]:
        token = self._next()
        if token is None:
            return
        if token == "{":
            self.pos -= 1
            yield from self.argument()
        elif token in _BIG_OPERATORS:
            yield from self._big_operator(_BIG_OPERATORS[token])
        elif token == "\\frac":
            numerator, denominator = self.argument(), self.argument()
            if len(numerator) == 1 and len(denominator) == 1:
                yield from [*numerator, "over", *denominator]
            else:
                yield from ["the fraction", *numerator, "over", *denominator, ", end fraction"]
        elif token in _ACCENTS:
            yield from [*self.argument(), _ACCENTS[token]]
        elif token in ("\\mathrm", "\\text", "\\mathit", "\\operatorname"):
            yield "".join(self.argument())
        elif token in ("\\left", "\\right"):
            delimiter = self._next()
            if delimiter not in (None, "."):
                yield delimiter
        elif token in _SPACES:
            yield _SPACES[token]
        elif (token.startswith("\\") and token[1:] in _GREEK) or token.startswith("\\"):
            yield token[1:]
        else:
            yield _WORDS.get(token, token)

    def _big_operator(self, name: str) -> Iterator[str]:
        lower: list[str] = []
        upper: list[str] = []
        while self._peek() in ("_", "^"):
            if self._next() == "_":
                lower = self.argument()
            else:
                upper = self.argument()
        yield name
        if lower:
            yield from ["for", *lower]
        if upper:
            yield from ["to", *upper]
        yield "of"
