"""Render the lesson once: CommonMark to HTML, LaTeX to MathML, the flat blocks to tables.

The published Markdown flattens some structure into one short line per paragraph; this module
gives it back: "Symbols and units" runs of symbol / meaning / unit, a section made only of
name / value / note triples, "<name> Input|Output" / description pairs, and the run-together
lines of the first section (the link with its scope note, "Learning objective…").
Raw HTML in the content is escaped, never passed through.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Literal, TypeVar

from markupsafe import Markup

from app.lesson.loader import Lesson, Section
from app.lesson.markdown import LessonMarkdown
from app.lesson.mathml import to_mathml
from app.lesson.model import LessonRecord
from app.lesson.quiz import Question, is_question, paragraphs, parse_question
from app.lesson.symbols import Symbol, defined_forms, formulas, symbol_forms

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


Cell = TypeVar("Cell", bound=str)


@dataclass(frozen=True, slots=True)
class Table(Generic[Cell]):
    """A table recovered from flat lines: as found, its cells are Markdown (``Table[str]``);
    as shown, rendered Markdown, symbols with scripts (``Table[Markup]``)."""

    name: Literal["symbols", "specifications", "interfaces"]
    caption: Cell
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption_visible: bool = True
    kind: Literal["table"] = "table"


Block = HtmlBlock | Table[Markup]
# A section's chunks before Markdown is rendered: Markdown runs, display math, tables as found.
Part = str | Markup | Table[str]


@dataclass(frozen=True, slots=True)
class RenderedQuestion:
    """A question as the page shows it; ``reasoning_html`` only ever appears after an answer.

    The verdict is decided on ``question`` (the source text); the ``*_html`` fields are what the
    page shows, rendered by the same Markdown renderer as the rest of the lesson.
    """

    question: Question
    prompt_html: Markup
    options_html: tuple[Markup, ...]
    reasoning_html: Markup

    @property
    def choices(self) -> tuple[tuple[int, Markup], ...]:
        """``(number, html)`` of each option, numbered from 1."""
        return tuple(enumerate(self.options_html, start=1))

    @property
    def answer_html(self) -> Markup:
        return self.options_html[self.question.answer_number - 1]

    def option_html(self, number: int) -> Markup:
        return self.options_html[number - 1]


@dataclass(frozen=True, slots=True)
class RenderedSection:
    """A section; ``title`` is its heading rendered inline (escapes resolved, code, math)."""

    id: str
    title: Markup
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
    label: Markup
    url: str


@dataclass(frozen=True, slots=True)
class LessonHeader:
    """The first (h1) section, with its run-together lines given their own structure."""

    id: str
    kicker: Markup
    title: Markup
    intro: tuple[Markup, ...]
    links: tuple[Link, ...]
    scope_note: Markup | None
    objective: Markup | None


@dataclass(frozen=True, slots=True)
class RenderedLesson:
    """The lesson as pages show it; the record's own text fields rendered like the content."""

    record: LessonRecord
    header: LessonHeader
    sections: tuple[RenderedSection, ...]
    questions: tuple[RenderedQuestion, ...]
    description_html: Markup
    evidence_scope_html: Markup

    def question(self, question_id: str) -> RenderedQuestion | None:
        return next((q for q in self.questions if q.question.id == question_id), None)


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
        and _label_like(symbol, 24)
        and _label_like(meaning, 160)
        and _label_like(unit, 40)
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


def _draft(section: Section) -> list[Part]:
    """The section's chunks (all but its heading) sorted into Markdown runs and tables: cells
    are rendered once the symbols of every table are known."""
    chunks = paragraphs(section.markdown)[1:]
    if _spec_rows(chunks):
        rows = tuple(tuple(chunks[i : i + 3]) for i in range(0, len(chunks), 3))
        columns = ("Specification", "Value", "Note")
        return [Table("specifications", section.title, columns, rows, caption_visible=False)]
    parts: list[Part] = []
    i = 0
    while i < len(chunks):
        chunk = chunks[i]
        if math := _DISPLAY_MATH.match(chunk):
            parts.append(_display_math(math.group("latex")))
            i += 1
        elif chunk == SYMBOLS_LINE and _symbol_row(chunks, i + 1):
            i += 1
            symbol_rows = []
            while _symbol_row(chunks, i):
                symbol_rows.append(tuple(chunks[i : i + 3]))
                i += 3
            columns = ("Symbol", "Meaning", "Unit")
            parts.append(Table("symbols", SYMBOLS_LINE, columns, tuple(symbol_rows)))
        elif _INTERFACE.match(chunk) and i + 1 < len(chunks) and _one_line(chunk):
            interface_rows = []
            while i + 1 < len(chunks) and (head := _INTERFACE.match(chunks[i])):
                interface_rows.append((head["name"], head["direction"], chunks[i + 1]))
                i += 2
            columns = ("Interface", "Direction", "Carries")
            rows = tuple(interface_rows)
            parts.append(Table("interfaces", section.title, columns, rows, caption_visible=False))
        else:
            last = parts[-1] if parts else None
            if type(last) is str:  # Markup is a str too: display math stays apart
                parts[-1] = last + "\n\n" + chunk
            else:
                parts.append(chunk)
            i += 1
    return parts


def _display_math(latex: str) -> Markup:
    # The box scrolls sideways on narrow screens; tabindex lets a keyboard scroll it too.
    return Markup('<div class="math-display" tabindex="0">{}</div>').format(
        to_mathml(latex, display=True)
    )


def _listed_symbols(
    drafts: Iterable[list[Part]], forms: Mapping[str, Symbol | None]
) -> dict[str, Symbol]:
    """The symbols of the "Symbols and units" lists that the record's formulas define."""
    found: dict[str, Symbol] = {}
    for draft in drafts:
        for part in draft:
            if isinstance(part, Table) and part.name == "symbols":
                for row in part.rows:
                    for symbol in symbol_forms(row[0], forms):
                        if isinstance(symbol, Symbol):
                            found[symbol.text] = symbol
    return found


def _table(
    raw: Table[str], md: LessonMarkdown, forms: Mapping[str, Symbol | None]
) -> Table[Markup]:
    rows = []
    for row in raw.rows:
        cells = [md.inline(cell) for cell in row]
        if raw.name == "symbols":
            parts = symbol_forms(row[0], forms)
            cells[0] = Markup(", ").join(
                p.markup if isinstance(p, Symbol) else md.inline(p) for p in parts
            )
        rows.append(tuple(cells))
    return Table(raw.name, md.inline(raw.caption), raw.columns, tuple(rows), raw.caption_visible)


def _header(lesson: Lesson, section: Section, md: LessonMarkdown) -> LessonHeader:
    intro: list[Markup] = []
    links: list[Link] = []
    note: Markup | None = None
    objective: Markup | None = None
    for chunk in paragraphs(section.markdown)[1:]:
        if (link := _LINK_THEN_NOTE.match(chunk)) and _one_line(chunk):
            links.append(Link(label=md.inline(link["label"]), url=link["url"]))
            note = md.inline(link["note"].strip())
        elif (goal := _OBJECTIVE.match(chunk)) and _one_line(chunk):
            objective = md.inline(goal["text"].strip())
        else:
            intro.append(md.block(chunk))
    return LessonHeader(
        id=section.id,
        kicker=md.inline(lesson.preamble),
        title=md.inline(section.title),
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
        nested.append(replace(head, children=_nest(flat[i + 1 : j])))
        i = j
    return tuple(nested)


def _question(section: Section, number: int, md: LessonMarkdown) -> RenderedQuestion:
    parsed = parse_question(section, number)
    return RenderedQuestion(
        question=parsed,
        prompt_html=md.inline(parsed.prompt),
        options_html=tuple(md.inline(option) for option in parsed.options),
        reasoning_html=md.block(parsed.reasoning),
    )


def render_lesson(lesson: Lesson, local_links: Mapping[str, str] | None = None) -> RenderedLesson:
    """The whole lesson rendered once: header, nested sections with blocks, the questions.

    Every piece of text goes through one Markdown renderer. The first section (the h1) becomes
    the header; questions are parsed, not rendered from their Markdown, so the page never
    carries an answer before one is submitted. ``local_links`` maps a lesson's URL (as
    :func:`~app.lesson.markdown.link_key` spells it) to the address of its local copy.
    """
    first, *rest = lesson.sections
    drafts = {s.id: _draft(s) for s in rest if not is_question(s)}
    forms = defined_forms(formulas(lesson.record.content))
    md = LessonMarkdown(_listed_symbols(drafts.values(), forms), local_links)
    flat: list[RenderedSection] = []
    questions: list[RenderedQuestion] = []
    for section in rest:
        question = None
        blocks: list[Block] = []
        if section.id in drafts:
            for part in drafts[section.id]:
                if isinstance(part, Table):
                    blocks.append(_table(part, md, forms))
                elif isinstance(part, Markup):
                    blocks.append(HtmlBlock(part))
                else:
                    blocks.append(HtmlBlock(md.block(part)))
        else:
            question = _question(section, len(questions) + 1, md)
            questions.append(question)
        title = md.inline(section.title)
        flat.append(RenderedSection(section.id, title, section.level, tuple(blocks), (), question))
    return RenderedLesson(
        record=lesson.record,
        header=_header(lesson, first, md),
        sections=_nest(flat),
        questions=tuple(questions),
        description_html=md.inline(lesson.record.description),
        evidence_scope_html=md.inline(lesson.record.evidence_scope),
    )
