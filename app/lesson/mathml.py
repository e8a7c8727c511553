"""LaTeX from the lesson to MathML on the server, with a spoken text alternative."""

import re

from latex2mathml.converter import convert
from markupsafe import Markup, escape

from app.lesson.speech import spoken

_UPRIGHT_LETTER = r'<mi mathvariant="normal">([A-Za-z])</mi>'
# latex2mathml spells \mathrm{new} as three one-letter <mi>; one multi-letter <mi> is the word
# (upright by default in MathML Core, and read as a word by screen readers).
_UPRIGHT_WORD = re.compile(f"(?:{_UPRIGHT_LETTER}){{2,}}")


def to_mathml(latex: str, *, display: bool) -> Markup:
    """MathML for ``latex``: ``<math display="block">`` or inline, named by its spoken form.

    ``aria-label`` carries an English reading (what a screen reader announces) and ``alttext``
    the LaTeX source. Over-bars are marked ``accent="true"`` so the bar sits on its letter, and
    an upright word (``\\mathrm{new}``) is one ``<mi>``. A formula latex2mathml cannot parse
    is shown as its LaTeX source, in ``<code class="math-source">``.
    """
    try:
        mathml = convert(latex, display="block" if display else "inline")
    # latex2mathml raises a dozen unrelated exception types (and IndexError) on malformed input.
    except Exception:
        return Markup('<code class="math-source">{}</code>').format(latex.strip())
    mathml = mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    mathml = mathml.replace("<mover>", '<mover accent="true">')
    mathml = _UPRIGHT_WORD.sub(_word, mathml)
    label = f' aria-label="{escape(spoken(latex))}" alttext="{escape(latex.strip())}"'
    return Markup(mathml.replace("<math", "<math" + label, 1))


def _word(match: re.Match[str]) -> str:
    letters = re.findall(_UPRIGHT_LETTER, match.group())
    return f"<mi>{''.join(letters)}</mi>"
