"""Spoken readings of formulas, construct by construct, and the fallback to the LaTeX source."""

import pytest
from latex2mathml.converter import convert
from latex2mathml.symbols_parser import SYMBOLS

from app.lesson.speech import WORDS, UnreadableError, reading, spoken

CONSTRUCTS = [
    # numbers are read as numbers
    ("24", "24"),
    ("2^{24}", "2 to the power 24"),
    ("0.5+1.25", "0.5 plus 1.25"),
    ("1{,}000{,}000", "1,000,000"),
    ("x^2", "x squared"),
    ("x^3", "x cubed"),
    ("y^{n+1}", "y to the power n plus 1, end power"),
    # relations
    (r"a \ne b", "a is not equal to b"),
    (r"a \neq b", "a is not equal to b"),
    (r"a \le b", "a is less than or equal to b"),
    (r"a \leq b", "a is less than or equal to b"),
    (r"a \ge b", "a is greater than or equal to b"),
    (r"a \approx b", "a is approximately equal to b"),
    (r"a < b", "a is less than b"),
    (r"a \equiv b", "a is equivalent to b"),
    (r"a \propto b", "a is proportional to b"),
    (r"f: A \to B", "f: A to B"),
    (r"k \in K", "k in K"),
    (r"k \notin K", "k not in K"),
    # symbols with more than one meaning are read as what they look like
    (r"x \sim q", "x tilde q"),
    (r"p(x \mid y)", "p (x vertical bar y)"),
    (r"f \circ g", "f circle g"),
    # operators
    (r"a \times b", "a times b"),
    (r"a \cdot b", "a times b"),
    (r"a \pm b", "a plus or minus b"),
    (r"a - b", "a minus b"),
    # text and styles
    (r"\text{in general}", "in general"),
    (r"x\ \text{for all rows}", "x for all rows"),
    (r"\mathrm{new}", "new"),
    (r"\mathrm{bytes/rank}", "bytes/rank"),
    (r"\operatorname{fl}(x)", "fl (x)"),
    (r"\mathbb{E}", "double-struck E"),
    (r"\mathbb{R}^n", "double-struck R to the power n"),
    (r"\mathcal{L}", "script L"),
    (r"\mathbf{x}", "bold x"),
    # fractions, roots, binomials
    (r"\frac{1}{N}", "1 over N"),
    (r"\dfrac{a}{b}", "a over b"),
    (r"\frac{P n_r}{N}", "the fraction P n sub r over N, end fraction"),
    (r"\sqrt{2}", "the square root of 2"),
    (r"\sqrt{a+b}", "the square root of a plus b, end root"),
    (r"\sqrt[3]{x}", "the root of order 3 of x"),
    (r"\binom{n}{k}", "n choose k"),
    # big operators and limits
    (r"\sum_{r=0}^{P-1} n_r", "the sum for r equals 0 to P minus 1 of n sub r"),
    (r"\prod_{i} x_i", "the product for i of x sub i"),
    (r"\int_0^1 f", "the integral for 0 to 1 of f"),
    (r"\lim_{n\to\infty} a_n", "the limit as n approaches infinity of a sub n"),
    (r"\max_{i} x_i", "the maximum over i of x sub i"),
    (r"\log x", "log x"),
    (r"\exp(x)", "exp (x)"),
    # sub- and superscripts, primes, indices
    (r"w_{\mathrm{new}}", "w sub new"),
    (r"C^{(r)}_{ij}", "C superscript (r) sub i j"),
    (r"x'", "x prime"),
    (r"A^\top", "A transpose"),
    # Greek and accents
    (r"\eta g", "eta g"),
    (r"\Delta t", "capital delta t"),
    (r"\varepsilon", "epsilon"),
    (r"\bar g_r", "g bar sub r"),
    (r"\hat\theta", "theta hat"),
    (r"\tilde{x}", "x tilde"),
    (r"\vec{v}", "v vector"),
    # delimiters and spacing
    (r"\left(\frac{a}{b}\right)", "(a over b)"),
    (r"a,\qquad b", "a, b"),
    (r"a\,b", "a b"),
    (r"\infty", "infinity"),
    # a symbol latex2mathml knows, read by its Unicode name
    (r"a \oplus b", "a circled plus b"),
    (r"a \boxtimes b", "a squared times b"),
]


@pytest.mark.parametrize(("latex", "expected"), CONSTRUCTS)
def test_each_construct_has_its_reading(latex: str, expected: str) -> None:
    convert(latex)  # latex2mathml accepts it
    assert spoken(latex) == expected


@pytest.mark.parametrize(
    "latex",
    [
        r"\begin{matrix}a & b\\c & d\end{matrix}",  # an environment
        r"\foo x",  # an unknown command
        r"\frac{1}{",  # unbalanced
        r"x}",
        r"\text{a \textbf{b}}",  # a command inside text
    ],
)
def test_no_reading_falls_back_to_the_source(latex: str) -> None:
    with pytest.raises(UnreadableError):
        reading(latex)
    assert spoken(latex) == " ".join(latex.split())


def test_every_symbol_command_with_a_word_reading_is_latex2mathml_syntax() -> None:
    for command, words in WORDS.items():
        if not command.startswith("\\"):
            continue
        convert(f"a {command} b")
        assert spoken(f"a {command} b") == f"a {words} b".replace(" ,", ","), command


def test_no_reading_spells_a_command_name() -> None:
    for latex, _ in CONSTRUCTS:
        assert "\\" not in spoken(latex)
        assert "mathbb" not in spoken(latex)


def test_every_symbol_command_latex2mathml_accepts_has_a_reading() -> None:
    checked = 0
    for command in SYMBOLS:
        if not command.startswith("\\") or not command[1:].isalpha():
            continue
        latex = f"a {command}{{b}} c"
        try:
            convert(latex)
        except Exception:  # latex2mathml refuses it here: not a construct it accepts
            continue
        said = spoken(latex)
        assert "\\" not in said, (command, said)
        assert "combining" not in said, (command, said)
        checked += 1
    assert checked > 2000


@pytest.mark.parametrize(
    ("latex", "expected"),
    [(r"\acute{e}", "e acute accent"), (r"\check{x}", "x caron"), (r"a \not= b", "a not equals b")],
)
def test_accents_follow_their_letter(latex: str, expected: str) -> None:
    assert spoken(latex) == expected
