"""Render the lesson once: CommonMark to HTML, LaTeX to MathML, the flat blocks to tables.

The published Markdown flattens some structure into one short line per paragraph; this module
gives it back: "Symbols and units" runs of symbol / meaning / unit, a section made only of
name / value / note triples, "<name> Input|Output" / description pairs, and the run-together
lines of the first section (the link with its scope note, "Learning objective…").
Raw HTML in the content is escaped, never passed through.
"""

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

from app.lesson.loader import Lesson, Section
from app.lesson.mathml import to_mathml
from app.lesson.model import LessonRecord
from app.lesson.quiz import Question, is_question, paragraphs, parse_question

SYMBOLS_LINE = "Symbols and units"
_LINK_THEN_NOTE = re.compile(r"^\[(?P<label>[^\]]+)\]\((?P<url>https?://[^)\s]+)\)(?P<note>\S.*)$")
_OBJECTIVE = re.compile(r"^Learning objective(?P<text>\S.*)$")
_INTERFACE = re.compile(r"^(?P<name>\S.*) (?P<direction>Input|Output)$")
_DISPLAY_MATH = re.compile(r"^\$\$(?P<latex>.+)\$\$$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class HtmlBlock:
    """HTML the app produced from the lesson text (escaped Markdown, MathML)."""

    html: Markup
    kind: Literal["html"] = "html"


@dataclass(frozen=True, slots=True)
class Table:
    """A table recovered from flat lines; cells are escaped text, symbols with ``<sub>``."""

    name: Literal["symbols", "specifications", "interfaces"]
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Markup, ...], ...]
    caption_visible: bool = True
    kind: Literal["table"] = "table"


Block = HtmlBlock | Table


@dataclass(frozen=True, slots=True)
class RenderedQuestion:
    """A question as the page shows it; ``reasoning_html`` only ever appears after an answer."""

    question: Question
    reasoning_html: Markup


@dataclass(frozen=True, slots=True)
class RenderedSection:
    id: str
    title: str
    level: int
    blocks: tuple[Block, ...]
    children: tuple["RenderedSection", ...] = ()
    question: RenderedQuestion | None = None

    @property
    def holds_quiz(self) -> bool:
        """A section whose subsections are all questions ("Check your understanding")."""
        return bool(self.children) and all(c.question for c in self.children)


@dataclass(frozen=True, slots=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True, slots=True)
class LessonHeader:
    """The first (h1) section, with its run-together lines given their own structure."""

    id: str
    kicker: str
    title: str
    intro: tuple[Markup, ...]
    links: tuple[Link, ...]
    scope_note: str | None
    objective: str | None


@dataclass(frozen=True, slots=True)
class RenderedLesson:
    record: LessonRecord
    header: LessonHeader
    sections: tuple[RenderedSection, ...]
    questions: tuple[RenderedQuestion, ...]

    def question(self, question_id: str) -> RenderedQuestion | None:
        return next((q for q in self.questions if q.question.id == question_id), None)


@dataclass(frozen=True, slots=True)
class Symbol:
    """A symbol as published flat ("nr", "wnew") and its base and subscript ("n", "r")."""

    text: str
    base: str
    sub: str

    @property
    def markup(self) -> Markup:
        return Markup("{}<sub>{}</sub>").format(self.base, self.sub)


def split_symbol(text: str) -> Symbol | None:
    """``"nr"`` → n with subscript r, ``"ḡr"`` → ḡ with r, ``"wnew"`` → w with new; else None.

    A symbol is one letter (with its combining marks) followed by a lower-case ASCII subscript.
    """
    decomposed = unicodedata.normalize("NFD", text)
    if not decomposed or not decomposed[0].isalpha():
        return None
    end = 1
    while end < len(decomposed) and unicodedata.combining(decomposed[end]):
        end += 1
    base, sub = decomposed[:end], decomposed[end:]
    if not sub or not (sub.isascii() and sub.isalpha() and sub.islower()):
        return None
    return Symbol(text=text, base=unicodedata.normalize("NFC", base), sub=sub)


def symbol_cell(text: str) -> Markup:
    """A symbols-table cell: comma-separated symbols, each with its subscript marked up."""
    parts = []
    for part in text.split(", "):
        symbol = split_symbol(part)
        parts.append(symbol.markup if symbol else escape(part))
    return Markup(", ").join(parts)


def _one_line(*chunks: str) -> bool:
    return all("\n" not in c for c in chunks)


def _label_like(text: str, limit: int) -> bool:
    return len(text) <= limit and not text.endswith((".", ":", ";"))


def _symbol_row(chunks: Sequence[str], i: int) -> bool:
    if i + 3 > len(chunks):
        return False
    symbol, meaning, unit = chunks[i : i + 3]
    return (
        _one_line(symbol, meaning, unit)
        and _label_like(symbol, 16)
        and _label_like(meaning, 80)
        and _label_like(unit, 24)
    )


def _spec_rows(chunks: Sequence[str]) -> bool:
    """Whether ``chunks`` are all name / value / note triples (a specifications section)."""
    if not chunks or len(chunks) % 3:
        return False
    return all(
        _one_line(*chunks[i : i + 3])
        and _label_like(chunks[i], 40)
        and _label_like(chunks[i + 1], 60)
        and "$" not in "".join(chunks[i : i + 3])
        for i in range(0, len(chunks), 3)
    )


@dataclass
class _Draft:
    """A section's chunks sorted into Markdown runs and tables, before Markdown is rendered."""

    parts: list[str | Table | Markup] = field(default_factory=list)

    def text(self, chunk: str) -> None:
        if self.parts and type(self.parts[-1]) is str:  # Markup is a str too: keep it apart
            self.parts[-1] += "\n\n" + chunk
        else:
            self.parts.append(chunk)


def _draft(section: Section) -> _Draft:
    chunks = paragraphs(section.markdown)[1:]  # the first chunk is the heading
    draft = _Draft()
    if _spec_rows(chunks):
        rows = tuple(tuple(escape(c) for c in chunks[i : i + 3]) for i in range(0, len(chunks), 3))
        draft.parts.append(
            Table(
                "specifications",
                section.title,
                ("Specification", "Value", "Note"),
                rows,
                caption_visible=False,
            )
        )
        return draft
    i = 0
    while i < len(chunks):
        chunk = chunks[i]
        if math := _DISPLAY_MATH.match(chunk):
            draft.parts.append(_display_math(math.group("latex")))
            i += 1
        elif chunk == SYMBOLS_LINE and _symbol_row(chunks, i + 1):
            i += 1
            symbol_rows = []
            while _symbol_row(chunks, i):
                symbol, meaning, unit = chunks[i : i + 3]
                symbol_rows.append((symbol_cell(symbol), escape(meaning), escape(unit)))
                i += 3
            columns = ("Symbol", "Meaning", "Unit")
            draft.parts.append(Table("symbols", SYMBOLS_LINE, columns, tuple(symbol_rows)))
        elif (head := _INTERFACE.match(chunk)) and i + 1 < len(chunks) and _one_line(chunk):
            interface_rows = []
            while i + 1 < len(chunks) and (head := _INTERFACE.match(chunks[i])):
                interface_rows.append(
                    (escape(head["name"]), escape(head["direction"]), escape(chunks[i + 1]))
                )
                i += 2
            columns = ("Interface", "Direction", "Carries")
            draft.parts.append(
                Table(
                    "interfaces",
                    section.title,
                    columns,
                    tuple(interface_rows),
                    caption_visible=False,
                )
            )
        else:
            draft.text(chunk)
            i += 1
    return draft


def _display_math(latex: str) -> Markup:
    # The box scrolls sideways on narrow screens; tabindex lets a keyboard scroll it too.
    return Markup('<div class="math-display" tabindex="0">{}</div>').format(
        to_mathml(latex, display=True)
    )


def _symbols_of(tables: Iterable[Table]) -> dict[str, Symbol]:
    found: dict[str, Symbol] = {}
    for table in tables:
        if table.name != "symbols":
            continue
        for row in table.rows:
            for part in str(row[0].striptags()).split(", "):
                if symbol := split_symbol(part):
                    found[symbol.base + symbol.sub] = symbol
    return found


class _Markdown:
    """CommonMark with raw HTML off, ``$…$`` inline math, and the lesson's flat symbols."""

    def __init__(self, symbols: Mapping[str, Symbol]) -> None:
        self.md = MarkdownIt("commonmark", {"html": False})
        self.md.inline.ruler.before("escape", "math_inline", _math_inline)
        self.md.add_render_rule("math_inline", _render_math_inline)
        self.symbols = dict(symbols)
        if self.symbols:
            words = "|".join(re.escape(s) for s in sorted(self.symbols, key=len, reverse=True))
            pattern = re.compile(rf"(?<!\w)(?:{words})(?!\w)")
            self.md.core.ruler.push("flat_symbols", _subscript_symbols(pattern, self.symbols))

    def block(self, text: str) -> Markup:
        return Markup(self.md.render(text))

    def inline(self, text: str) -> Markup:
        return Markup(self.md.renderInline(text))


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
    """A core rule: in text (not code, not URLs) a flat symbol becomes base + ``<sub>``."""

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
                    symbol = symbols[match.group()]
                    children += [
                        _text(token.content[pos : match.start()]),
                        _text(symbol.base),
                        Token("sub_open", "sub", 1),
                        _text(symbol.sub),
                        Token("sub_close", "sub", -1),
                    ]
                    pos = match.end()
                children.append(_text(token.content[pos:]))
            block.children = [c for c in children if c.type != "text" or c.content]

    return rule


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)


def _header(lesson: Lesson, section: Section, md: _Markdown) -> LessonHeader:
    intro: list[Markup] = []
    links: list[Link] = []
    note: str | None = None
    objective: str | None = None
    for chunk in paragraphs(section.markdown)[1:]:
        if (link := _LINK_THEN_NOTE.match(chunk)) and _one_line(chunk):
            links.append(Link(label=link["label"], url=link["url"]))
            note = link["note"].strip()
        elif (goal := _OBJECTIVE.match(chunk)) and _one_line(chunk):
            objective = goal["text"].strip()
        else:
            intro.append(md.block(chunk))
    return LessonHeader(
        id=section.id,
        kicker=lesson.preamble,
        title=section.title,
        intro=tuple(intro),
        links=tuple(links),
        scope_note=note,
        objective=objective,
    )


def _nest(flat: Sequence[RenderedSection]) -> tuple[RenderedSection, ...]:
    """Sections as a tree: each takes the following deeper sections as its children."""
    nested: list[RenderedSection] = []
    i = 0
    while i < len(flat):
        head = flat[i]
        j = i + 1
        while j < len(flat) and flat[j].level > head.level:
            j += 1
        children = _nest(flat[i + 1 : j])
        nested.append(
            RenderedSection(
                id=head.id,
                title=head.title,
                level=head.level,
                blocks=head.blocks,
                children=children,
                question=head.question,
            )
        )
        i = j
    return tuple(nested)


def render_lesson(lesson: Lesson) -> RenderedLesson:
    """The whole lesson rendered once: header, nested sections with blocks, the questions.

    The first section (the h1) becomes the header; questions are parsed, not rendered from
    their Markdown, so the page never carries an answer before one is submitted.
    """
    first, *rest = lesson.sections
    drafts = {s.id: _draft(s) for s in rest if not is_question(s)}
    tables = [p for d in drafts.values() for p in d.parts if isinstance(p, Table)]
    md = _Markdown(_symbols_of(tables))
    flat: list[RenderedSection] = []
    questions: list[RenderedQuestion] = []
    for section in rest:
        question = None
        blocks: list[Block] = []
        if section.id in drafts:
            for part in drafts[section.id].parts:
                if isinstance(part, Table):
                    blocks.append(part)
                elif isinstance(part, Markup):
                    blocks.append(HtmlBlock(part))
                else:
                    blocks.append(HtmlBlock(md.block(part)))
        else:
            parsed = parse_question(section, len(questions) + 1)
            question = RenderedQuestion(parsed, md.block(parsed.reasoning))
            questions.append(question)
        flat.append(
            RenderedSection(section.id, section.title, section.level, tuple(blocks), (), question)
        )
    return RenderedLesson(
        record=lesson.record,
        header=_header(lesson, first, md),
        sections=_nest(flat),
        questions=tuple(questions),
    )
