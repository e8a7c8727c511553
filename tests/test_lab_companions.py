"""The results pane's companions written in Python (app.lab.companions) against the Jinja
macros they replaced, rendered here from the same panels: the same text, byte for byte, for
valid states, invalid and hostile input, and each out-of-band flag set, unset or undefined."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

from app.lab import companions
from app.lab.panel import lab_panel, ring_panel
from app.web.templating import templates

# The macros as templates/_lab_parts.html wrote them (whitespace control included).
MACROS = """{#- One live region that stays in the page, so screen readers hear each new result once.
    htmx refreshes its text out of band (innerHTML keeps the region itself). -#}
{%- macro status(lab, oob_status) -%}
<p id="lab-status" class="visually-hidden" role="status"{% if oob_status %} hx-swap-oob="innerHTML"{% endif %}>
  {#- The view's text needs no escaping (tests/test_lab_view.py); an error's, which can echo
      what was typed, does. -#}
  {%- if lab.view %}{% autoescape false %}{{ lab.view.summary }}{% endautoescape %}{% elif lab.errors %}{{ lab.errors[0].message }}{% endif -%}
</p>
{%- endmacro %}

{#- Hidden copies of the other panel's state, so a plain form submit keeps both in the address.
    htmx refreshes them out of band after each update. Context: carry_id, carry_pairs, oob_carry. -#}
{%- macro carry(carry_id, carry_pairs, oob_carry) -%}
<div id="{{ carry_id }}" class="lab-carry"{% if oob_carry %} hx-swap-oob="true"{% endif %}>
  {%- for name, value in carry_pairs %}
  <input type="hidden" name="{{ name }}" value="{{ value }}">
  {%- endfor %}
</div>
{%- endmacro %}

{#- Where the state goes past the sliders' reach; refreshed out of band with each answer.
    Context: lab (LabPanel), oob_rest. -#}
{%- macro beyond(lab, oob_rest) -%}
<div id="lab-beyond" class="lab-beyond"{% if oob_rest %} hx-swap-oob="true"{% endif %}>
  {%- if lab.beyond_sliders %}
  <p class="lab-note" data-note="beyond-sliders">{{ lab.beyond_sliders }}</p>
  {%- endif %}
</div>
{%- endmacro %}

{#- On a phone, both new w values and the two gradients stay in sight while any control is:
    a compact bar that sticks to the bottom of the screen inside the lab. Context: lab, oob_rest. -#}
{%- macro summary(lab, oob_rest) -%}
<div id="lab-summary" class="lab-summary"{% if oob_rest %} hx-swap-oob="true"{% endif %}>
  {%- if lab.view %}
  {%- set v = lab.view %}
  {#- The view's numbers, unescaped as in _lab_results.html (tests/test_lab_view.py). -#}
  {%- autoescape false %}
  <p><span class="lab-summary-item lab-summary-global"><span class="sym">w<sub class="lab-upright">new</sub></span>
    <span class="lab-num lab-summary-w" data-summary="w-new">{{ v.w_new }}</span>
    <span class="lab-summary-by">with <span class="sym">g</span> = <span class="lab-num">{{ v.global_gradient }}</span></span></span>
    <span class="lab-summary-item lab-summary-rank"><span class="lab-num lab-summary-w" data-summary="w-new-rank-mean">{{ v.w_new_rank_mean }}</span>
    <span class="lab-summary-by">with the rank mean <span class="lab-num">{{ v.rank_mean_gradient }}</span></span></span></p>
  {%- endautoescape %}
  {%- else %}
  <p class="lab-summary-invalid">No result: fix the marked input.</p>
  {%- endif %}
</div>
{%- endmacro %}"""  # noqa: E501

# Each part: the macro call and the filter call that replaced it, on the same names.
CALLS = {
    "status": ("{{ status(lab, flag) }}", "{{ lab|lab_status(flag) }}"),
    "carry": (
        '{{ carry("ring-carry-lab", pairs, flag) }}',
        '{{ pairs|lab_carry("ring-carry-lab", flag) }}',
    ),
    "beyond": ("{{ beyond(lab, flag) }}", "{{ lab|lab_beyond(flag) }}"),
    "summary": ("{{ summary(lab, flag) }}", "{{ lab|lab_summary(flag) }}"),
}
OLD = {name: templates.env.from_string(MACROS + old) for name, (old, _) in CALLS.items()}
NEW = {name: templates.env.from_string(new) for name, (_, new) in CALLS.items()}
# A flag given true or false, or not given at all (the whole lab and the page set none).
FLAGS: list[dict[str, Any]] = [{"flag": True}, {"flag": False}, {}]

HOSTILE = [
    'counts=<b>&means="&eta=&w=&',
    "counts=2,x&means=1,3&eta=0.1&w=10",
    "counts=2,6&means=1,3&eta=-1&w=10",
    "counts=0,0&means=1,3&eta=0.1&w=10",
    "counts=2,6&means=1,3,4&eta=0.1&w=10",
    "targets=9,9;7,'&eta=0.1&w=10",
    "targets=9,9;7,7&eta=0.1&w=10&steps=30&acc_m=<b>'&",
    "targets=9,9;7,7&weights=1,1;1&eta=0.1&w=10",
    "counts=2,6&means=1,3&eta=0.1&w=10&ring_p=<x>",
]
VALID = [
    "counts=2,6&means=1,3&eta=0.1&w=10",
    "counts=2,6,0&means=1,3,5&eta=0.1&w=10",
    "counts=100,6&means=1,3&eta=0.1&w=10",
    "counts=3,3,3,3,3,3,3,3,3,3,3,3&means=1,2,3,4,5,6,7,8,9,10,11,12&eta=0.1&w=10",
    "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30",
    "targets=9,9;7,7&weights=1,1;1,0&eta=0.1&w=10&steps=30&acc_m=1",
    "counts=2,6&means=1,3&eta=0.1&w=10&ring_mb=100&ring_p=8&ring_us=5&ring_gbps=10",
]


def check(query: str) -> None:
    """Every part writes what its macro wrote, for this query's panels and every flag."""
    params = QueryParams(query)
    lab, ring = lab_panel(params), ring_panel(params)
    carried = [lab.pairs, ring.pairs, (("a<b", "x\"y&z'"),), ()]
    for flags in FLAGS:
        for name in ("status", "beyond", "summary"):
            expected = OLD[name].render(lab=lab, **flags)
            assert NEW[name].render(lab=lab, **flags) == expected, (name, query, flags)
        for pairs in carried:
            expected = OLD["carry"].render(pairs=pairs, **flags)
            assert NEW["carry"].render(pairs=pairs, **flags) == expected, (pairs, flags)


@pytest.mark.parametrize("query", VALID + HOSTILE)
def test_each_part_is_its_macros_text(query: str) -> None:
    check(query)


values = st.one_of(
    st.integers(-100, 100).map(lambda k: str(k / 10)),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False).map(repr),
    st.text(alphabet="0123456789.-e<>&\"' x", max_size=6),
)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 66).flatmap(
        lambda p: st.tuples(
            st.lists(st.one_of(st.integers(0, 70).map(str), values), min_size=p, max_size=p),
            st.lists(values, min_size=p, max_size=p),
        )
    ),
    values,
    values,
)
def test_each_part_is_its_macros_text_for_any_input(
    ranks: tuple[list[str], list[str]], eta: str, w: str
) -> None:
    counts, means = (",".join(column) for column in ranks)
    check(str(QueryParams({"counts": counts, "means": means, "eta": eta, "w": w})))


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("lab_status", companions.status),
        ("lab_carry", companions.carry),
        ("lab_beyond", companions.beyond),
        ("lab_summary", companions.summary),
    ],
)
def test_the_filters_are_the_templates(name: str, function: object) -> None:
    assert templates.env.filters[name] is function
