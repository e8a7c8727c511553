"""Flat symbols get scripts only from the record's own formulas."""

import pytest

from app.lesson.markdown import LessonMarkdown
from app.lesson.symbols import Symbol, defined_forms, formulas, symbol_forms, unescaped


def form(latex: str, flat: str) -> Symbol | None:
    return defined_forms([latex]).get(flat)


@pytest.mark.parametrize(
    ("latex", "flat", "base", "sub", "sup"),
    [
        (r"N=\sum_{r=0}^{P-1}n_r", "nr", "n", "r", ""),
        (r"g=\frac{1}{N}\sum n_r\bar g_r", "ḡr", "ḡ", "r", ""),
        (r"w_{\mathrm{new}}=w-\eta g", "wnew", "w", "new", ""),
        (r"Q_{\mathrm{RS}}=8", "QRS", "Q", "RS", ""),
        (r"C^{(r)}_{ij}=\sum A_{ik}B_{kj}", "C(r)ij", "C", "ij", "(r)"),
        (r"C^{(r)}_{ij}", "Cij(r)", "C", "ij", "(r)"),
        (r"\sum_{k\in K_r}", "Kr", "K", "r", ""),
        (r"\eta_t", "ηt", "η", "t", ""),
    ],
)
def test_a_formula_defines_the_flat_spelling(
    latex: str, flat: str, base: str, sub: str, sup: str
) -> None:
    assert form(latex, flat) == Symbol(flat, base, sub, sup)


def test_a_function_name_stays_a_word() -> None:
    # fl, the rounding function, is \mathrm{fl}: no subscript.
    fl = form(r"\mathrm{fl}(a+b)\ne a+b", "fl")
    assert fl == Symbol("fl", "fl")
    assert str(fl.markup) == "fl"
    assert form(r"\operatorname{fl}(x)", "fl") == Symbol("fl", "fl")


def test_two_forms_of_one_spelling_define_neither() -> None:
    forms = defined_forms([r"f_l = 1", r"\mathrm{fl}(x)"])
    assert forms["fl"] is None


def test_a_spelling_no_formula_defines_is_absent() -> None:
    forms = defined_forms([r"x_i = 1"])
    assert "fl" not in forms
    assert "QRS" not in forms
    assert symbol_forms("xi, QRS, fl", forms) == [Symbol("xi", "x", "i"), "QRS", "fl"]


def test_markup_escapes_and_orders_scripts() -> None:
    assert str(Symbol("C(r)ij", "C", "ij", "(r)").markup) == "C<sup>(r)</sup><sub>ij</sub>"
    assert str(Symbol("x<y", "<", "y").markup) == "&lt;<sub>y</sub>"


def test_formulas_finds_display_and_inline_math() -> None:
    markdown = "Text $$\na_b\n$$ and $K_{r}$ here, not $ 5 or 10$ dollars."
    assert formulas(markdown) == ["\na_b\n", "K_{r}"]


def test_unescaped_resolves_markdown_escapes() -> None:
    assert unescaped(r"\[14,16\] shard\_map") == "[14,16] shard_map"


def test_word_shaped_symbols_get_scripts_in_prose_only_beside_an_operator() -> None:
    symbols = {
        flat: Symbol(flat, base, sub, sup)
        for flat, base, sub, sup in [
            ("wnew", "w", "new", ""),
            ("an", "a", "n", ""),
            ("As", "A", "s", ""),
            ("QRS", "Q", "RS", ""),
            ("C(r)ij", "C", "ij", "(r)"),
        ]
    }
    md = LessonMarkdown(symbols)
    html = str(md.inline("As an example (an aside), As-is: an=3, 2\u00d7an, wnew=9.75 and x = an."))
    assert html == (
        "As an example (an aside), As-is: a<sub>n</sub>=3, 2\u00d7a<sub>n</sub>,"
        " w<sub>new</sub>=9.75 and x = a<sub>n</sub>."
    )
    # Spellings no word has get their scripts wherever they stand (not inside code).
    assert str(md.inline("QRS and C(r)ij, not `QRS`")) == (
        "Q<sub>RS</sub> and C<sup>(r)</sup><sub>ij</sub>, not <code>QRS</code>"
    )
