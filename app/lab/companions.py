"""The results pane's companions as HTML text: the live region, a carried state, the note past
the sliders and the phone summary.

A drag's answer sends all four out of band beside the pane on every input event, and the whole
lab places them itself. As Jinja macros they were about two thirds of that answer's render (the
pane rendered in 94-111 µs with them and 34 µs without on a slow host; 37 µs with these
functions, bench/README.md): each is one f-string here. Each function writes exactly what the
macro it replaced wrote (tests/test_lab_companions.py renders those macros and compares, for
valid states and invalid ones). The view model's text is free of HTML's special characters
(tests/test_lab_view.py) and is not escaped, as in the macros; what can echo the input (an
error's message, the slider note) and a carried query's names and values are.
"""

import re
from typing import Any, Protocol

from markupsafe import Markup, escape

from app.lab.fields import FieldError
from app.lab.view import LabView
from app.web.templating import templates

# What markupsafe.escape changes.
_SPECIAL = re.compile("[&<>\"']")


class Pane(Protocol):
    """What these parts read of the gradient lab's panel (``app.lab.panel.LabPanel``)."""

    @property
    def view(self) -> LabView | None: ...

    @property
    def errors(self) -> tuple[FieldError, ...]: ...

    @property
    def beyond_sliders(self) -> str: ...


def _oob(flag: Any, swap: str = "true") -> str:
    # A template's oob_* may be undefined (the whole lab, the page): falsy, as in an {% if %}.
    return f' hx-swap-oob="{swap}"' if flag else ""


def status(lab: Pane, oob: Any) -> Markup:
    """One live region that stays in the page, so screen readers hear each new result once
    (refreshed out of band by its inner HTML, which keeps the region itself)."""
    if lab.view is not None:
        text: str = lab.view.summary
    elif lab.errors:
        text = escape(lab.errors[0].message)
    else:
        text = ""
    return Markup(
        f'<p id="lab-status" class="visually-hidden" role="status"{_oob(oob, "innerHTML")}>'
        f"{text}</p>"
    )


def carry(pairs: tuple[tuple[str, str], ...], carry_id: str, oob: Any) -> Markup:
    """Hidden copies of the other panel's state, so a plain form submit keeps both in the
    address."""
    if _SPECIAL.search("".join([n + v for n, v in pairs])):
        pairs = tuple((escape(n), escape(v)) for n, v in pairs)
    # Else the names and values hold nothing to escape (a canonical query's always): one search
    # instead of an escape call (about a µs) per name and value.
    inputs = "".join([f'\n  <input type="hidden" name="{n}" value="{v}">' for n, v in pairs])
    # carry_id: a template's literal.
    return Markup(f'<div id="{carry_id}" class="lab-carry"{_oob(oob)}>{inputs}\n</div>')


def beyond(lab: Pane, oob: Any) -> Markup:
    """Where the state goes past the sliders' reach ("" inside when it does not)."""
    note = lab.beyond_sliders
    if note:
        note = f'\n  <p class="lab-note" data-note="beyond-sliders">{escape(note)}</p>'
    return Markup(f'<div id="lab-beyond" class="lab-beyond"{_oob(oob)}>{note}\n</div>')


def summary(lab: Pane, oob: Any) -> Markup:
    """On a phone, both new w values and the two gradients stay in sight while any control
    is: a compact bar that sticks to the bottom of the screen inside the lab."""
    v = lab.view
    if v is None:
        inner = '<p class="lab-summary-invalid">No result: fix the marked input.</p>'
    else:
        inner = (
            '<p><span class="lab-summary-item lab-summary-global"><span class="sym">w<sub'
            ' class="lab-upright">new</sub></span>\n    <span class="lab-num lab-summary-w"'
            f' data-summary="w-new">{v.w_new}</span>\n    <span class="lab-summary-by">with'
            ' <span class="sym">g</span> = <span class="lab-num">'
            f"{v.global_gradient}</span></span></span>\n"
            '    <span class="lab-summary-item lab-summary-rank"><span class="lab-num'
            f' lab-summary-w" data-summary="w-new-rank-mean">{v.w_new_rank_mean}</span>\n'
            '    <span class="lab-summary-by">with the rank mean <span class="lab-num">'
            f"{v.rank_mean_gradient}</span></span></span></p>"
        )
    return Markup(f'<div id="lab-summary" class="lab-summary"{_oob(oob)}>\n  {inner}\n</div>')


templates.env.filters.update(
    lab_status=status, lab_carry=carry, lab_beyond=beyond, lab_summary=summary
)
