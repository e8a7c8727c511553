"""Any Atlas lesson renders faithfully: one Markdown renderer for every piece of text.

A synthetic record puts Markdown escapes, emphasis, code and links in every place the record
has text (intro, objective, prose, lists, table cells, quiz question, options, answer,
reasoning), symbols the record defines and symbols it does not, and formulas. The development
record (tests/fixtures/lessons) is rendered and served as a real fixture.
"""

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient

from app.lesson.loader import load_lesson
from app.lesson.render import RenderedLesson, Table, render_lesson
from app.main import create_app
from app.settings import Settings
from tests.records import SHARDED, SHARDED_FILE_SHA256, make_record, write_record
from tests.soup import page_soup, section_element, text

# A Markdown backslash escape left on the page: what the hand-parsed parts used to show.
ESCAPE_LEFT = re.compile(r"\\[!-/:-@\[-`{-~]")

CONTENT = r"""Executable software · Atlas v1.3.0

# Rounding and \*residuals\*

An intro with the residual \[1,0,0\] and *emphasis*.

[Explore in Atlas](https://semiaifoundry.com/ai-atlas/#rounding)Scope note with \[z\]+

Learning objectiveExplain why `fl` is not f with subscript l, and \[x\].

## The mechanism

Rounding with fl(a+b) is not associative; the function fl rounds. A value xi=2, the Greek
letter xi, and the flat QRS.

1.  Compute \[14,16\] first.
2.  Then *add* `b`.

## Science and assumptions

### Rounding is not associative

$$
\mathrm{fl}(a+b)\ne a+b\ \text{in general},\quad x_{i}=2^{24}\,\mathbb{E}[u]
$$

Each $x_{i}$ is rounded.

Symbols and units

fl

Rounding to the nearest float32 \[RN\]

function

xi, QRS

Input value and an undefined \*flat\* symbol

value

ε\_mach

Machine epsilon

1

The note after the table.

## Specifications and interfaces

Reduction order

\[z\]+ left to right

Requires `fixed` order.

Format

float32

Has *24* significand bits.

### Interfaces

Reduction plan Input

Order \[0,1,2\]

## Check your understanding

### Which residual does `fl` leave after \[a,b\]?

1.  \[14,16\]
2.  The residual \[1,0,0\]
3.  \[z\]+

Answer and reasoning

The residual \[1,0,0\]

Because \[1,0,0\] is *exact* and `fl` keeps it.

### Is \*this\* a second question?

1.  Yes
2.  No

Answer and reasoning

Yes

It is.

## Continue exploring

### Related lessons

-   [Shard\_map lesson](https://semiaifoundry.com/learn/atlas/sharded-matmul-ownership/)
"""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("synthetic")
    record = make_record(
        CONTENT,
        "rounding",
        description=r"Why \[a+b\]+c may differ from a+\[b+c\] in *float32*.",
        evidenceScope=r"Synthetic values \[1,0,0\]; no `NCCL` run.",
    )
    return write_record(folder, record)


@pytest.fixture(scope="module")
def rendered(synthetic: Path) -> RenderedLesson:
    return render_lesson(load_lesson(synthetic))


@pytest.fixture(scope="module")
def client(synthetic: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(lesson_path=synthetic, confirm_enabled=False))) as c:
        yield c


@pytest.fixture(scope="module")
def soup(client: TestClient) -> BeautifulSoup:
    return page_soup(client)


def test_no_markdown_escape_is_left_anywhere_on_the_page(soup: BeautifulSoup) -> None:
    for tag in soup.select("header, nav.toc, main"):
        assert not ESCAPE_LEFT.search(tag.get_text()), ESCAPE_LEFT.findall(tag.get_text())
    assert soup.title is not None
    assert soup.title.get_text() == "Rounding and *residuals* · Atlas lesson"


def test_record_fields_are_markdown_too(soup: BeautifulSoup) -> None:
    footer = soup.find("footer")
    assert isinstance(footer, Tag)
    assert "Synthetic values [1,0,0]; no NCCL run." in text(footer)
    assert footer.find("code", string="NCCL") is not None
    meta = soup.find("meta", attrs={"name": "description"})
    assert isinstance(meta, Tag)
    assert meta["content"] == "Why [a+b]+c may differ from a+[b+c] in float32."


def test_header_lines_are_markdown(soup: BeautifulSoup) -> None:
    header = soup.find("header", class_="lesson-header")
    assert isinstance(header, Tag)
    assert text(header.find("h1")) == "Rounding and *residuals*"
    assert "the residual [1,0,0] and emphasis" in text(header)
    assert header.find("em") is not None
    assert text(header.find(class_="scope-note")) == "Scope note with [z]+"
    objective = header.find(class_="objective")
    assert isinstance(objective, Tag)
    assert objective.find("code") is not None
    assert text(objective).endswith("and [x].")


def test_table_cells_are_markdown(soup: BeautifulSoup) -> None:
    specs = section_element(soup, "section-5").find("table")
    assert isinstance(specs, Tag)
    cells = specs.find_all(["th", "td"])
    assert [text(c) for c in cells][3:6] == ["Reduction order", "[z]+ left to right",
                                             "Requires fixed order."]  # fmt: skip
    assert cells[5].find("code") is not None
    assert cells[8].find("em") is not None
    interfaces = section_element(soup, "section-6").find("table")
    assert isinstance(interfaces, Tag)
    assert "Order [0,1,2]" in text(interfaces)


def test_symbols_get_scripts_only_where_the_formulas_define_them(soup: BeautifulSoup) -> None:
    table = section_element(soup, "section-4").find("table")
    assert isinstance(table, Tag)
    symbols = [th.decode_contents() for th in table.find_all("th", scope="row")]
    # fl is \mathrm{fl} in the formula: a function name, never f with subscript l.
    # xi is x_{i} in the formula; QRS appears in no formula and stays as written.
    assert symbols == ["fl", "x<sub>i</sub>, QRS", "ε_mach"]
    meanings = [text(row.find_all("td")[0]) for row in table.find("tbody").find_all("tr")]
    assert meanings[0] == "Rounding to the nearest float32 [RN]"
    assert meanings[1] == "Input value and an undefined *flat* symbol"
    prose = section_element(soup, "section-2").find("p")
    assert isinstance(prose, Tag)
    html = prose.decode_contents()
    assert "fl(a+b)" in html
    assert "the function fl rounds" in html
    assert "x<sub>i</sub>=2" in html
    assert "letter xi," in html  # a word-shaped symbol stays a word outside a formula
    assert "the flat QRS" in html
    assert prose.find_all("sub") == prose.find_all("sub", string="i")


def test_formula_reads_relations_text_numbers_and_double_struck(soup: BeautifulSoup) -> None:
    math = section_element(soup, "section-4").find("math", attrs={"display": "block"})
    assert isinstance(math, Tag)
    assert str(math["aria-label"]) == (
        "fl (a plus b) is not equal to a plus b in general, x sub i equals 2 to the power 24"
        " double-struck E [u]"
    )


def test_quiz_text_is_markdown_and_the_verdict_uses_the_source(
    client: TestClient, soup: BeautifulSoup, rendered: RenderedLesson
) -> None:
    question = rendered.question("section-8")
    assert question is not None
    assert question.question.options[1] == r"The residual \[1,0,0\]"
    assert question.question.answer_number == 2
    quiz = section_element(soup, "section-8")
    assert text(quiz.find("h3")) == "Which residual does fl leave after [a,b]?"
    assert quiz.find("h3").find("code") is not None
    options = [text(label) for label in quiz.find_all("label", class_="quiz-option")]
    assert options == ["[14,16]", "The residual [1,0,0]", "[z]+"]
    toc = soup.find("nav", class_="toc")
    assert isinstance(toc, Tag)
    assert "Which residual does fl leave after [a,b]?" in text(toc)
    # Right at once; wrong, then "Not quite" (a second try), then "Show the answer".
    for choice, verdict in (("2", "Correct."), ("1", "The answer is")):
        client.cookies.clear()
        answer = client.post(
            "/quiz", data={"question": "section-8", "choice": choice},
            headers={"HX-Request": "true"},
        )  # fmt: skip
        assert answer.status_code == 200
        if choice == "1":
            retry = text(BeautifulSoup(answer.text, "html.parser").find(class_="verdict"))
            assert retry.startswith("Not quite. “[14,16]” is not the answer.")
            answer = client.post(
                "/quiz", data={"question": "section-8", "reveal": "1"},
                headers={"HX-Request": "true"},
            )  # fmt: skip
        feedback = BeautifulSoup(answer.text, "html.parser")
        said = text(feedback.find(class_="verdict"))
        assert said.startswith(verdict)
        assert "“The residual [1,0,0]”" in said
        reasoning = feedback.find(class_="reasoning")
        assert isinstance(reasoning, Tag)
        assert text(reasoning) == "Because [1,0,0] is exact and fl keeps it."
        assert reasoning.find("em") is not None
        assert reasoning.find("code") is not None
        assert not ESCAPE_LEFT.search(feedback.get_text())


def test_the_development_record_is_the_file_it_came_as() -> None:
    assert hashlib.sha256(SHARDED.read_bytes()).hexdigest() == SHARDED_FILE_SHA256


@pytest.fixture(scope="module")
def sharded() -> RenderedLesson:
    return render_lesson(load_lesson(SHARDED))


def all_tables(sections: tuple[object, ...]) -> Iterator[Table]:
    for node in sections:
        yield from (b for b in node.blocks if isinstance(b, Table))  # type: ignore[attr-defined]
        yield from all_tables(node.children)  # type: ignore[attr-defined]


def test_development_record_symbols_follow_its_formulas(sharded: RenderedLesson) -> None:
    symbols = [str(row[0]) for t in all_tables(sharded.sections) if t.name == "symbols"
               for row in t.rows]  # fmt: skip
    assert symbols == [
        "C<sub>ij</sub>",
        "C<sup>(r)</sup><sub>ij</sub>",
        "A<sub>ik</sub>, B<sub>kj</sub>",
        "K<sub>r</sub>",
        "P",
        "Q<sub>RS</sub>",
        "Q<sub>AG</sub>",
        "Q<sub>sent</sub>",
    ]


def test_development_record_quiz_options_lose_their_escapes(sharded: RenderedLesson) -> None:
    question = sharded.question("section-12")
    assert question is not None
    assert [str(o) for o in question.options_html] == ["[14,16]", "[43,50]", "[19,22]"]
    assert question.question.options == (r"\[14,16\]", r"\[43,50\]", r"\[19,22\]")
    assert str(question.answer_html) == "[43,50]"


def test_development_record_page_has_no_escapes_and_every_verdict(tmp_path: Path) -> None:
    settings = Settings(lesson_path=SHARDED, confirm_enabled=False)
    with TestClient(create_app(settings)) as c:
        page = BeautifulSoup(c.get("/").text, "html.parser")
        main = page.find("main")
        assert isinstance(main, Tag)
        assert not ESCAPE_LEFT.search(main.get_text())
        assert "Engineering example" in text(main)
        assert "Use A = [[1,2],[3,4]] and B = [[5,6],[7,8]]." in text(main)
        lesson = c.app.state.lessons[""].rendered  # type: ignore[attr-defined]
        for item in lesson.questions:
            q = item.question
            for number in range(1, len(q.options) + 1):
                c.cookies.clear()  # each option as a first answer (a wrong one gets a retry)
                answer = c.post("/quiz", data={"question": q.id, "choice": str(number)},
                                headers={"HX-Request": "true"})  # fmt: skip
                verdict = BeautifulSoup(answer.text, "html.parser").find(class_="verdict")
                assert isinstance(verdict, Tag)
                expected = "Correct." if number == q.answer_number else "Not quite."
                assert text(verdict).startswith(expected), (q.id, number)
