"""The one Markdown renderer for every piece of text from the record.

CommonMark (markdown-it-py) with raw HTML off: backslash escapes resolved, emphasis, code spans,
links; ``$…$`` inline math as MathML; and the flat symbols the record defines (see
:mod:`app.lesson.symbols`) given their scripts in running text. Paragraphs and lists use
:meth:`LessonMarkdown.block`; quiz questions, options, answers, table cells and header lines use
:meth:`LessonMarkdown.inline`, so the same text renders the same wherever it appears.
"""

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

from app.lesson.mathml import to_mathml
from app.lesson.symbols import Symbol


class LessonMarkdown:
    """CommonMark with raw HTML off, ``$…$`` inline math, and the record's scripted symbols."""

    def __init__(
        self,
        symbols: Mapping[str, Symbol] | None = None,
        local_links: Mapping[str, str] | None = None,
    ) -> None:
        self.md = MarkdownIt("commonmark", {"html": False})
        self.md.inline.ruler.before("escape", "math_inline", _math_inline)
        self.md.add_render_rule("math_inline", _render_math_inline)
        self.symbols = {flat: s for flat, s in (symbols or {}).items() if s.sub or s.sup}
        if self.symbols:
            pattern = symbol_pattern(self.symbols)
            self.md.core.ruler.push("flat_symbols", _subscript_symbols(pattern, self.symbols))
        if local_links:
            self.md.core.ruler.push("local_links", _local_links(dict(local_links)))

    def block(self, text: str) -> Markup:
        """Paragraphs, lists and the like."""
        return Markup(self.md.render(text))

    def inline(self, text: str) -> Markup:
        """One line of text (a table cell, an option, a heading): no ``<p>`` around it."""
        return Markup(self.md.renderInline(text).strip())


# A flat symbol spelled like a word ("wnew", "an", "As", "Kr") could be one: in running text it
# gets its scripts only where it stands in a formula, next to a relation or an operator
# ("wnew=9.75"). Other spellings ("QRS", "ḡr", "C(r)ij") are never words.
_WORD_SHAPED = re.compile(r"^[A-Z]?[a-z]+$")
# Not the hyphen ("As-is"), nor parentheses ("(an example)"): words stand beside those.
_OPERATOR = "=<>+\u2212\u00d7/\u00b7\u2264\u2265\u2260\u2248"
_BESIDE_OPERATOR = (
    rf"(?:(?<=[{_OPERATOR}])|(?<=[{_OPERATOR}] ))(?:{{words}})(?!\w)"
    rf"|(?<!\w)(?:{{words}})(?=\s?[{_OPERATOR}])"
)


def symbol_pattern(symbols: Iterable[str]) -> re.Pattern[str]:
    """Where flat symbols stand in running text (see ``_WORD_SHAPED``), longest first."""
    ordered = sorted(symbols, key=len, reverse=True)
    words = "|".join(re.escape(s) for s in ordered if _WORD_SHAPED.match(s))
    others = "|".join(re.escape(s) for s in ordered if not _WORD_SHAPED.match(s))
    alternatives = []
    if others:
        alternatives.append(rf"(?<!\w)(?:{others})(?!\w)")
    if words:
        alternatives.append(_BESIDE_OPERATOR.format(words=words))
    return re.compile("|".join(alternatives))


def _math_inline(state: StateInline, silent: bool) -> bool:
    """``$latex$``: no space inside either dollar, no digit right after the closing one."""
    src, start = state.src, state.pos
    if src[start] != "$" or src.startswith("$$", start):
        return False
    end = src.find("$", start + 1)
    while end != -1 and src[end - 1] == "\\":
        end = src.find("$", end + 1)
    if end == -1:
        return False
    latex = src[start + 1 : end]
    if not latex or latex[0].isspace() or latex[-1].isspace():
        return False
    if end + 1 < len(src) and src[end + 1].isdigit():
        return False
    if not silent:
        token = state.push("math_inline", "math", 0)
        token.content = latex
        token.markup = "$"
    state.pos = end + 1
    return True


def _render_math_inline(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    return str(to_mathml(tokens[idx].content, display=False))


def _subscript_symbols(
    pattern: re.Pattern[str], symbols: Mapping[str, Symbol]
) -> Callable[[StateCore], None]:
    """A core rule: in text (not code, not URLs) a flat symbol gets its scripts back."""

    def rule(state: StateCore) -> None:
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            children: list[Token] = []
            for token in block.children:
                if token.type != "text" or not pattern.search(token.content):
                    children.append(token)
                    continue
                pos = 0
                for match in pattern.finditer(token.content):
                    # The symbol's own markup: its text escaped, its scripts in <sup>, <sub>.
                    html = str(symbols[match.group()].markup)
                    children += [
                        _text(token.content[pos : match.start()]),
                        Token("html_inline", "", 0, content=html),
                    ]
                    pos = match.end()
                children.append(_text(token.content[pos:]))
            block.children = [c for c in children if c.type != "text" or c.content]

    return rule


def link_key(url: str) -> str:
    """A URL as links are matched: without scheme, query, fragment or trailing slash."""
    parts = urlsplit(url)
    return f"{parts.netloc.lower()}{parts.path.rstrip('/')}"


def _local_links(local: Mapping[str, str]) -> Callable[[StateCore], None]:
    """A core rule: a link to a lesson served here goes to its local copy (key → href)."""

    def rule(state: StateCore) -> None:
        for block in state.tokens:
            for token in block.children or ():
                if token.type != "link_open":
                    continue
                href = str(token.attrGet("href") or "")
                if href.startswith(("http://", "https://")) and link_key(href) in local:
                    token.attrSet("href", local[link_key(href)])

    return rule


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)
