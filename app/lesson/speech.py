"""An English reading of a LaTeX formula, for ``aria-label``: what a screen reader announces.

Each construct has its own reading: numbers as numbers ("24"), Greek letters by name,
relations and operators as words ("is not equal to"), ``\\text{}`` and ``\\mathrm{}`` as the
words they hold (spaces kept), ``\\mathbb{E}`` as "double-struck E", fractions, roots, sums,
products, integrals, limits, accents, sub- and superscripts. A symbol latex2mathml knows but
this table does not is read by its Unicode name. Anything else (an environment, an alignment,
an unknown command) has no reading here: :func:`spoken` then returns the LaTeX source itself,
never a guess.
"""

import re
import unicodedata
from collections.abc import Iterator

from app.lesson.symbols import braced, symbol_char

# A number is one token: "24", "0.5", and "1{,}000" (TeX's thousands separator).
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\d+(?:\{,\}\d{3})*(?:\.\d+)?|\s+|.", re.DOTALL)

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega"}  # fmt: skip
_VARIANTS = {"varepsilon": "epsilon", "vartheta": "theta", "varpi": "pi", "varrho": "rho",
             "varsigma": "sigma", "varphi": "phi", "varkappa": "kappa"}  # fmt: skip

# Single characters and symbol commands, read as words.
WORDS = {
    "=": "equals", "+": "plus", "-": "minus", "\u2212": "minus", "<": "is less than",
    ">": "is greater than", "/": "divided by", "*": "star", "!": "factorial", "'": "prime",
    "|": "vertical bar", "(": "(", ")": ")", "[": "[", "]": "]", ",": ",", ";": ";", ":": ":",
    ".": ".", "\u00d7": "times", "\u00b7": "times", "≤": "is less than or equal to",
    "≥": "is greater than or equal to", "≠": "is not equal to", "≈": "is approximately equal to",
    r"\ne": "is not equal to", r"\neq": "is not equal to", r"\le": "is less than or equal to",
    r"\leq": "is less than or equal to", r"\ge": "is greater than or equal to",
    r"\geq": "is greater than or equal to", r"\lt": "is less than", r"\gt": "is greater than",
    r"\ll": "is much less than", r"\gg": "is much greater than",
    r"\approx": "is approximately equal to", r"\simeq": "is asymptotically equal to",
    r"\sim": "tilde", r"\equiv": "is equivalent to", r"\cong": "is congruent to",
    r"\propto": "is proportional to", r"\coloneqq": "is defined as", r"\triangleq": "is defined as",
    r"\to": "to", r"\rightarrow": "to", r"\gets": "gets", r"\leftarrow": "gets",
    r"\mapsto": "maps to", r"\Rightarrow": "implies", r"\implies": "implies",
    r"\iff": "if and only if", r"\Leftrightarrow": "if and only if",
    r"\in": "in", r"\notin": "not in", r"\ni": "contains", r"\subset": "is a subset of",
    r"\subseteq": "is a subset of or equal to", r"\supset": "is a superset of",
    r"\supseteq": "is a superset of or equal to", r"\cup": "union", r"\cap": "intersection",
    r"\setminus": "minus", r"\emptyset": "the empty set", r"\varnothing": "the empty set",
    r"\forall": "for all", r"\exists": "there exists", r"\neg": "not", r"\lnot": "not",
    r"\land": "and", r"\wedge": "and", r"\lor": "or", r"\vee": "or",
    r"\times": "times", r"\cdot": "times", r"\div": "divided by", r"\pm": "plus or minus",
    r"\mp": "minus or plus", r"\ast": "star", r"\star": "star", r"\circ": "circle",
    r"\oplus": "circled plus", r"\otimes": "circled times", r"\mid": "vertical bar",
    r"\parallel": "is parallel to", r"\perp": "is perpendicular to", r"\infty": "infinity",
    r"\partial": "partial", r"\nabla": "nabla", r"\ell": "ell", r"\hbar": "h bar",
    r"\ldots": "dot dot dot", r"\cdots": "dot dot dot", r"\dots": "dot dot dot",
    r"\vdots": "dot dot dot", r"\prime": "prime", r"\top": "transpose", r"\dagger": "dagger",
    r"\%": "percent", r"\{": "{", r"\}": "}", r"\langle": "left angle bracket",
    r"\rangle": "right angle bracket", r"\lfloor": "floor of", r"\rfloor": "end floor",
    r"\lceil": "ceiling of", r"\rceil": "end ceiling", r"\vert": "vertical bar",
    r"\lvert": "vertical bar", r"\rvert": "vertical bar", r"\|": "double vertical bar",
    r"\Vert": "double vertical bar", r"\#": "number sign", r"\&": "and", r"\_": "underscore",
}  # fmt: skip

# Spacing commands: a wide space separates parts of a formula (read as a pause), a thin one not.
_SPACES = {r"\qquad": ",", r"\quad": ",", r"\,": "", r"\;": "", r"\:": "", r"\!": "",
           r"\ ": "", "~": "", r"\enspace": "", r"\thinspace": ""}  # fmt: skip
# Operators that take limits below and above: "the sum for r equals 0 to P minus 1 of".
_BIG = {r"\sum": "the sum", r"\prod": "the product", r"\int": "the integral",
        r"\bigcup": "the union", r"\bigcap": "the intersection"}  # fmt: skip
_LIMITS = {r"\max": "the maximum", r"\min": "the minimum",
           r"\sup": "the supremum", r"\inf": "the infimum", r"\argmax": "the arg max",
           r"\argmin": "the arg min", r"\limsup": "the limit superior",
           r"\liminf": "the limit inferior"}  # fmt: skip
_FUNCTIONS = {r"\log": "log", r"\ln": "natural log", r"\exp": "exp", r"\sin": "sine",
              r"\cos": "cosine", r"\tan": "tangent", r"\sinh": "hyperbolic sine",
              r"\cosh": "hyperbolic cosine", r"\tanh": "hyperbolic tangent", r"\det": "det",
              r"\dim": "dimension", r"\gcd": "gcd", r"\Pr": "probability",
              r"\deg": "degree", r"\ker": "kernel"}  # fmt: skip
_ACCENTS = {r"\bar": "bar", r"\overline": "bar", r"\hat": "hat", r"\widehat": "hat",
            r"\tilde": "tilde", r"\widetilde": "tilde", r"\vec": "vector", r"\dot": "dot",
            r"\ddot": "double dot", r"\underline": "underlined"}  # fmt: skip
# Commands whose argument is read as the words it holds, spaces kept.
_TEXTUAL = {r"\text", r"\textrm", r"\textit", r"\textbf", r"\textsf", r"\texttt", r"\textup",
            r"\textnormal", r"\mathrm", r"\operatorname", r"\mbox"}  # fmt: skip
# Letter styles: the letters they hold, named by the style that changes their meaning.
_STYLES = {r"\mathbb": "double-struck", r"\Bbb": "double-struck", r"\mathcal": "script",
           r"\mathscr": "script", r"\mathfrak": "fraktur", r"\mathbf": "bold",
           r"\boldsymbol": "bold", r"\bm": "bold", r"\mathsf": "sans-serif"}  # fmt: skip
_PLAIN_STYLES = {r"\mathit", r"\mathnormal", r"\displaystyle", r"\textstyle"}
_FRACTIONS = {r"\frac", r"\dfrac", r"\tfrac", r"\cfrac"}
_POWERS = {"2": "squared", "3": "cubed"}


class UnreadableError(ValueError):
    """The formula holds a construct with no reading here."""


def spoken(latex: str) -> str:
    """An English reading of ``latex``, or the LaTeX source itself where there is none.

    ``\\frac{1}{N}`` → "1 over N"; ``x \\ne y`` → "x is not equal to y"; ``2^{24}`` →
    "2 to the power 24"; ``\\text{in general}`` → "in general".
    """
    try:
        return reading(latex)
    except UnreadableError:
        return " ".join(latex.split())


def reading(latex: str) -> str:
    """The reading of ``latex``; raise :class:`UnreadableError` if a construct has none."""
    reader = _Reader(_TOKEN.findall(latex))
    words = reader.sequence()
    if reader.pos < len(reader.tokens):
        raise UnreadableError(f"unbalanced braces in {latex!r}")
    text = " ".join(w for w in words if w)
    text = re.sub(r"\s+([,;:.)\]])", r"\1", text)
    text = re.sub(r"([,;])(?:\s*[,;])+", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    return text.strip(" ,;")


def _greek(name: str) -> str | None:
    name = _VARIANTS.get(name, name)
    if name in GREEK:
        return name
    if name.lower() in GREEK and name[0].isupper():
        return f"capital {name.lower()}"
    return None


def _symbol_name(command: str) -> str | None:
    """The Unicode name of a symbol command latex2mathml knows, e.g. ``\\oplus``."""
    char = symbol_char(command)
    return (unicodedata.name(char, "").lower() or None) if char else None


def _accent_name(command: str) -> str | None:
    """An accent latex2mathml knows (a combining mark, e.g. ``\\acute``), named without
    "combining": it is read after the letter it sits on."""
    char = symbol_char(command)
    if char is None or unicodedata.category(char) not in ("Mn", "Me"):
        return None
    return unicodedata.name(char, "").lower().removeprefix("combining ") or None


class _Reader:
    """A recursive reading of a LaTeX token list, one group at a time."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        # Inside a limit's subscript, an arrow reads "approaches".
        self.approaching = False

    def _skip_space(self) -> None:
        while self.pos < len(self.tokens) and self.tokens[self.pos].isspace():
            self.pos += 1

    def _peek(self) -> str | None:
        self._skip_space()
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> str | None:
        token = self._peek()
        if token is not None:
            self.pos += 1
        return token

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
            if self._next() != "}":
                raise UnreadableError("a group is not closed")
            return words
        if self._peek() in (None, "}"):
            raise UnreadableError("an argument is missing")
        return list(self._atom_words())

    def raw_argument(self) -> str:
        """A braced argument as written, spaces kept (the words of ``\\text{…}``)."""
        if self._peek() != "{":
            token = self._next()
            if token is None or token.startswith("\\"):
                raise UnreadableError("a text argument is missing")
            return token
        group = braced(self.tokens, self.pos)
        if group is None:
            raise UnreadableError("a text argument is not closed")
        inner, self.pos = group
        if any(token.startswith("\\") and token != r"\ " for token in inner):
            raise UnreadableError(f"a command inside text: {''.join(inner)!r}")
        text = "".join(
            " " if token == r"\ " else token for token in inner if token not in ("{", "}")
        )
        return " ".join(text.split())

    def atom(self) -> list[str]:
        words = list(self._atom_words())
        while self._peek() in ("_", "^", "'"):
            mark = self._next()
            if mark == "'":
                words.append("prime")
            elif mark == "_":
                words += ["sub", *self.argument()]
            else:
                words += self._superscript()
        return words

    def _superscript(self) -> list[str]:
        start = self.pos
        exponent = self.argument()
        written = "".join(t for t in self.tokens[start : self.pos] if not t.isspace())
        if written.strip("{}") in _POWERS:
            return [_POWERS[written.strip("{}")]]
        if exponent in (["prime"], ["transpose"]):
            return exponent
        if exponent[:1] == ["("] and exponent[-1:] == [")"]:
            # C^{(r)}: an index in parentheses, not a power.
            return ["superscript", *exponent]
        if len(exponent) == 1:
            return ["to the power", *exponent]
        return ["to the power", *exponent, ", end power"]

    def _atom_words(self) -> Iterator[str]:
        token = self._next()
        if token is None:
            return
        if token in (r"\to", r"\rightarrow") and self.approaching:
            yield "approaches"
        elif token == "{":
            self.pos -= 1
            yield from self.argument()
        elif token[0].isdigit():
            yield token.replace("{,}", ",")
        elif token.isalpha():
            yield token
        elif token in _BIG:
            yield from self._big_operator(_BIG[token])
        elif token == r"\lim":
            yield from self._big_operator("the limit", below="as")
        elif token in _LIMITS:
            yield from self._big_operator(_LIMITS[token], below="over")
        elif token in _FUNCTIONS:
            yield _FUNCTIONS[token]
        elif token in _FRACTIONS:
            numerator, denominator = self.argument(), self.argument()
            if len(numerator) == 1 and len(denominator) == 1:
                yield from [*numerator, "over", *denominator]
            else:
                yield from ["the fraction", *numerator, "over", *denominator, ", end fraction"]
        elif token == r"\sqrt":
            yield from self._root()
        elif token == r"\binom":
            top, bottom = self.argument(), self.argument()
            yield from [*top, "choose", *bottom]
        elif token in _ACCENTS:
            yield from [*self.argument(), _ACCENTS[token]]
        elif token in _TEXTUAL:
            yield self.raw_argument()
        elif token in _STYLES:
            yield from [_STYLES[token], *self.argument()]
        elif token in _PLAIN_STYLES:
            if token.endswith("style"):
                return
            yield from self.argument()
        elif token in (r"\left", r"\right", r"\big", r"\Big", r"\bigl", r"\bigr", r"\Bigl",
                       r"\Bigr"):  # fmt: skip
            delimiter = self._next()
            if delimiter is None:
                raise UnreadableError(f"{token} without a delimiter")
            if delimiter != ".":
                yield WORDS.get(delimiter) or _unknown(delimiter)
        elif token in _SPACES:
            yield _SPACES[token]
        elif token.startswith("\\") and (name := _greek(token[1:])):
            yield name
        elif token in WORDS:
            yield WORDS[token]
        elif token == r"\not":
            yield "not"
        elif token.startswith("\\") and (mark := _accent_name(token)):
            yield from [*self.argument(), mark]
        elif token.startswith("\\") and (name := _symbol_name(token)):
            yield name
        else:
            yield _unknown(token)

    def _root(self) -> Iterator[str]:
        index: list[str] = []
        if self._peek() == "[":
            self._next()
            while self._peek() not in ("]", None):
                index += self.atom()
            self._next()
        radicand = self.argument()
        if not index:
            yield from ["the square root of", *radicand]
        else:
            yield from ["the root of order", *index, "of", *radicand]
        if len(radicand) > 1:
            yield ", end root"

    def _big_operator(self, name: str, below: str = "for") -> Iterator[str]:
        lower: list[str] = []
        upper: list[str] = []
        while self._peek() in ("_", "^", r"\limits", r"\nolimits"):
            mark = self._next()
            if mark == "_":
                self.approaching = below == "as"
                try:
                    lower = self.argument()
                finally:
                    self.approaching = False
            elif mark == "^":
                upper = self.argument()
        yield name
        if lower:
            yield from [below, *lower]
        if upper:
            yield from ["to", *upper]
        yield "of"


def _unknown(token: str) -> str:
    raise UnreadableError(f"no reading for {token!r}")
