"""The rendered lesson: outline, headings, MathML, the recovered tables, escaping of raw HTML."""

import hashlib
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient

from app.lesson.loader import load_lesson
from app.lesson.mathml import to_mathml
from app.lesson.render import RenderedLesson, Table, render_lesson
from app.lesson.speech import spoken
from app.main import create_app
from app.settings import DEFAULT_LESSON, Settings
from tests.soup import page_soup, section_element, text

LESSON = load_lesson(DEFAULT_LESSON)


@pytest.fixture(scope="module")
def rendered() -> RenderedLesson:
    return render_lesson(LESSON)


@pytest.fixture(scope="module")
def soup(client: TestClient) -> BeautifulSoup:
    return page_soup(client)


def test_every_section_heading_keeps_its_level_and_title(soup: BeautifulSoup) -> None:
    assert len(LESSON.sections) == 18
    for section in LESSON.sections:
        heading = soup.find(id=section.id)
        assert isinstance(heading, Tag), section.id
        assert heading.name == f"h{section.level}", section.id
        assert text(heading) == section.title


def test_outline_is_the_lesson_outline(soup: BeautifulSoup) -> None:
    headings = [h for h in soup.find_all(["h1", "h2", "h3", "h4"]) if h.get("id", "")]
    lesson_headings = [h for h in headings if str(h["id"]).startswith("section-")]
    assert [h["id"] for h in lesson_headings] == [s.id for s in LESSON.sections]
    assert len(soup.find_all("h1")) == 1
    # The only heading that is not the lesson's is the lab's own, placed after section 6.
    others = [h for h in soup.find_all(["h1", "h2", "h3"]) if h not in lesson_headings]
    for heading in others:
        assert heading.find_parent(id="lab") is not None, heading


def test_sections_nest_under_their_parent_heading(soup: BeautifulSoup) -> None:
    science = section_element(soup, "section-3")
    assert science.find(id="section-4") is not None
    assert science.find(id="section-5") is not None
    assert science.find(id="section-6") is None
    quiz = section_element(soup, "section-10")
    assert [q["id"] for q in quiz.find_all("h3")] == ["section-11", "section-12", "section-13"]


def test_header_gives_the_first_section_its_structure(soup: BeautifulSoup) -> None:
    header = soup.find("header", class_="lesson-header")
    assert isinstance(header, Tag)
    h1 = header.find("h1")
    assert isinstance(h1, Tag)
    assert h1["id"] == "section-1"
    assert text(h1) == "Uneven batches and the global gradient"
    assert LESSON.record.description in text(header)
    objective = header.find(class_="objective")
    assert isinstance(objective, Tag)
    assert text(objective).startswith("Learning objective Derive and test a globally normalized")
    link = header.find("a", string="Explore in Atlas")
    assert isinstance(link, Tag)
    assert link["href"] == "https://semiaifoundry.com/ai-atlas/#distributed-gradient-weighting"
    note = header.find(class_="scope-note")
    assert isinstance(note, Tag)
    assert (
        text(note) == "Logical values and distributed ownership; no physical scale or vendor timing"
    )
    assert "Executable software · Atlas v1.3.0" in text(header)
    # The published order: the description, then the link with its scope note, then the objective.
    lead = header.find(class_="lead")
    assert isinstance(lead, Tag)
    order = [lead, link, note, objective]
    positions = [element.sourceline * 10_000 + element.sourcepos for element in order]
    assert positions == sorted(positions)


def test_table_of_contents_links_every_section_and_the_lab(soup: BeautifulSoup) -> None:
    toc = soup.find("nav", class_="toc")
    assert isinstance(toc, Tag)
    targets = [str(a["href"]) for a in toc.find_all("a")]
    expected = [f"#{s.id}" for s in LESSON.sections[1:]]
    assert [t for t in targets if t != "#lab"] == expected
    assert targets.index("#lab") == targets.index("#section-6") + 1
    assert text(toc.find("a", href="#lab")) == "Gradient lab"
    for target in targets:
        assert soup.find(id=target[1:]) is not None, target


def test_lab_follows_the_engineering_example(soup: BeautifulSoup) -> None:
    example = section_element(soup, "section-6")
    lab = example.find_next_sibling()
    assert isinstance(lab, Tag)
    assert lab.get("id") == "lab"


def test_display_formulas_are_block_mathml_with_spoken_names(soup: BeautifulSoup) -> None:
    blocks = soup.find_all("math", attrs={"display": "block"})
    assert len(blocks) == 2
    first, second = blocks
    assert section_element(soup, "section-4").find("math") is first
    assert section_element(soup, "section-5").find("math") is second
    for math in blocks:
        assert math.find("munderover") is not None
        assert math.find("mfrac") is not None
        assert "the sum for r equals 0 to P minus 1" in str(math["aria-label"])
        assert "\\sum" in str(math["alttext"])
    assert "1 over N" in str(first["aria-label"])
    assert "w sub new equals w minus eta g" in str(second["aria-label"])
    # The bar over g is an accent and the subscript of w is the word "new".
    assert first.find("mover", attrs={"accent": "true"}) is not None
    assert "new" in text(second.find_all("msub")[-1])
    # No "$$" delimiters survive.
    assert "$$" not in text(section_element(soup, "section-4"))


def test_inline_math_is_inline_mathml(soup: BeautifulSoup) -> None:
    paragraph = section_element(soup, "section-5").find("p")
    assert isinstance(paragraph, Tag)
    math = paragraph.find("math")
    assert isinstance(math, Tag)
    assert math["display"] == "inline"
    sub = math.find("msub")
    assert isinstance(sub, Tag)
    assert [mi.get_text() for mi in sub.find_all("mi")] == ["n", "r"]
    assert "$" not in text(paragraph)


def table_rows(table: Tag) -> list[list[str]]:
    return [[text(cell) for cell in row.find_all(["th", "td"])] for row in table.find_all("tr")]


def test_symbol_blocks_become_tables(soup: BeautifulSoup) -> None:
    for section_id, symbols in [
        ("section-4", ["N", "nr", "P", "ḡr", "g"]),
        ("section-5", ["P", "nr, N", "ḡr, g", "w, wnew", "η"]),
    ]:
        section = section_element(soup, section_id)
        table = section.find("table")
        assert isinstance(table, Tag)
        assert text(table.caption) == "Symbols and units"
        head = table.find("thead")
        assert isinstance(head, Tag)
        assert [(th["scope"], text(th)) for th in head.find_all("th")] == [
            ("col", "Symbol"),
            ("col", "Meaning"),
            ("col", "Unit"),
        ]
        body = table.find("tbody")
        assert isinstance(body, Tag)
        assert [th.get_text("") for th in body.find_all("th", scope="row")] == symbols
        rows = table_rows(table)[1:]
        assert all(len(row) == 3 for row in rows)
        # The flat "Symbols and units" lines are gone from the prose.
        assert all(text(p) != "Symbols and units" for p in section.find_all("p"))
    section4 = section_element(soup, "section-4")
    rows = table_rows(section4.find("table"))
    assert rows[2] == ["n r", "Valid items at rank r", "count"]
    subs = [str(th) for th in section4.find("table").find_all("th", scope="row")]
    assert "n<sub>r</sub>" in subs[1]
    assert "ḡ<sub>r</sub>" in subs[3]
    section5 = section_element(soup, "section-5")
    assert "w, w<sub>new</sub>" in str(section5.find("table"))
    assert table_rows(section5.find("table"))[-1] == [
        "η",
        "Learning rate for the declared objective scaling",
        "parameter²/loss",
    ]


def test_notes_after_symbol_tables_stay_paragraphs(soup: BeautifulSoup) -> None:
    section = section_element(soup, "section-4")
    table_box = section.find("table").parent
    notes = [text(p) for p in table_box.find_next_siblings("p")]
    assert notes[0].startswith("Each local ḡᵣ is the mean of gradients")
    assert notes[1].startswith("Assumptions N>0, same parameters")


def test_specifications_and_interfaces_become_tables(soup: BeautifulSoup) -> None:
    specs = section_element(soup, "section-8").find("table")
    assert isinstance(specs, Tag)
    assert table_rows(specs) == [
        ["Specification", "Value", "Note"],
        [
            "Normalization unit",
            "Valid examples or tokens",
            "Choose the intended loss denominator explicitly.",
        ],
        [
            "Replica consistency",
            "Equal synchronized gradients",
            "Does not establish agreement with the desired global objective.",
        ],
        [
            "Runtime scope",
            "Default mean reduction",
            "Custom hooks, joined ranks or summed losses can change the scale.",
        ],
    ]
    interfaces = section_element(soup, "section-9").find("table")
    assert isinstance(interfaces, Tag)
    assert table_rows(interfaces) == [
        ["Interface", "Direction", "Carries"],
        [
            "Per-rank loss contributions",
            "Input",
            "Local sums or means, valid counts, shared parameter state",
        ],
        [
            "Global optimizer update",
            "Output",
            "One correctly normalized gradient applied consistently",
        ],
    ]
    for table in (specs, interfaces):
        assert table.caption is not None
        assert table.find("th", scope="row") is not None


def test_mechanism_steps_are_an_ordered_list(soup: BeautifulSoup) -> None:
    steps = section_element(soup, "section-2").find("ol")
    assert isinstance(steps, Tag)
    items = [text(li) for li in steps.find_all("li")]
    assert len(items) == 6
    assert items[0].startswith("Define which items count in the loss")
    assert items[5].startswith("Handle empty local contributions")


def test_sources_and_related_lessons_are_link_lists(soup: BeautifulSoup) -> None:
    for section_id, count in [("section-15", 2), ("section-17", 4), ("section-18", 3)]:
        items = section_element(soup, section_id).find("ul").find_all("li")
        assert len(items) == count
        assert all(str(li.a["href"]).startswith("https://") for li in items)


def test_flat_symbol_in_prose_gets_its_subscript(soup: BeautifulSoup) -> None:
    example = section_element(soup, "section-6").find("p")
    assert isinstance(example, Tag)
    assert "w<sub>new</sub>=9.75" in str(example)
    assert "the unweighted rank mean gives 9.8" in text(example)
    # Other text is untouched: "[9,9]" loses only its Markdown escapes.
    assert "Rank 0 has targets [9,9], producing gradients [1,1]" in text(example)


def test_footer_carries_provenance_and_rights(soup: BeautifulSoup) -> None:
    footer = soup.find("footer")
    assert isinstance(footer, Tag)
    record = LESSON.record
    body = text(footer)
    assert record.version in body
    assert "2026-10-07" in body
    assert record.evidence_scope in body
    assert record.content_hash in body
    hrefs = [a["href"] for a in footer.find_all("a")]
    assert record.canonical_url in hrefs
    assert record.rights_url in hrefs
    assert record.license is None
    assert "names no license" in body


def test_lesson_renders_once_at_startup(client: TestClient) -> None:
    first = client.app.state.lessons[""].rendered  # type: ignore[attr-defined]
    assert isinstance(first, RenderedLesson)
    client.get("/")
    assert client.app.state.lessons[""].rendered is first  # type: ignore[attr-defined]


def test_rendered_lesson_structure(rendered: RenderedLesson) -> None:
    assert [s.id for s in rendered.sections][:3] == ["section-2", "section-3", "section-6"]
    science = rendered.sections[1]
    assert [c.id for c in science.children] == ["section-4", "section-5"]
    kinds = [b.kind for b in science.children[0].blocks]
    assert kinds == ["html", "html", "table", "html"]
    tables = [b for b in science.children[0].blocks if isinstance(b, Table)]
    assert tables[0].name == "symbols"
    quiz = next(s for s in rendered.sections if s.id == "section-10")
    assert quiz.holds_quiz
    assert [c.question.question.id for c in quiz.children if c.question] == [
        "section-11",
        "section-12",
        "section-13",
    ]


def test_spoken_form_reads_fractions_sums_and_accents() -> None:
    assert spoken(r"\frac{1}{N}") == "1 over N"
    assert spoken(r"\bar g_r") == "g bar sub r"
    assert spoken(r"\sum_{r=0}^{P-1} n_r") == "the sum for r equals 0 to P minus 1 of n sub r"
    assert spoken(r"\frac{P n_r}{N}") == "the fraction P n sub r over N, end fraction"
    assert spoken(r"w_{\mathrm{new}}=w-\eta g") == "w sub new equals w minus eta g"


def test_mathml_attributes_are_escaped() -> None:
    markup = str(to_mathml(r'x<y"', display=False))
    assert 'alttext="x&lt;y&#34;"' in markup
    assert "<math " in markup
    assert 'display="inline"' in markup


# A lesson whose content carries raw HTML: it must reach the page as text, never as markup.
HOSTILE = (
    "Kicker\n\n"
    "# A hostile lesson\n\n"
    "Intro <script>alert('x')</script> and <img src=x onerror=alert(1)>.\n\n"
    "## Body\n\n"
    '<div onclick="steal()">raw block</div>\n\n'
    "A [link](javascript:alert(1)) and $x_1$ math.\n"
)


def hostile_record(tmp_path: Path) -> Path:
    raw = json.loads(DEFAULT_LESSON.read_text(encoding="utf-8"))
    nfd = unicodedata.normalize("NFD", HOSTILE)
    first, second = nfd.index("# A hostile"), nfd.index("## Body")
    raw.update(
        content=HOSTILE,
        contentLength=len(nfd),
        contentHash=hashlib.sha256(nfd.encode()).hexdigest(),
        sections=[
            {"id": "section-1", "title": "A hostile lesson", "start": first, "end": second},
            {"id": "section-2", "title": "Body", "start": second, "end": len(nfd)},
        ],
    )
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def hostile_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(lesson_path=hostile_record(tmp_path), confirm_enabled=False)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_raw_html_in_content_is_escaped(hostile_client: TestClient) -> None:
    response = hostile_client.get("/")
    assert response.status_code == 200
    page = response.text
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;div onclick=&quot;steal()&quot;&gt;raw block&lt;/div&gt;" in page
    soup = BeautifulSoup(page, "html.parser")
    assert all(script.get("src") for script in soup.find_all("script"))
    assert soup.find("img") is None
    assert soup.find(attrs={"onclick": True}) is None
    assert soup.find("a", href="javascript:alert(1)") is None
    assert soup.find("math") is not None
