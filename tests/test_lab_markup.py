# ruff: noqa: RUF001 (the templates write a true minus sign)
"""The lab's repeated elements written in Python (app.lab.markup) against the template loops
they replaced, rendered here by Jinja2 from the same view: the same text, byte for byte."""

import contextlib

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import EngineError, from_items, from_means, trajectory
from app.lab import markup
from app.lab.pictures import implied_path
from app.lab.view import LabCharts, LabDetails, lab_charts, lab_details
from app.web.templating import templates
from tests.lab_states import items_state, means_state

# The loops as the templates wrote them (whitespace control included), with the autoescaping
# each had: the table and the bar charts unescaped, the number line escaped.
RANK_ROWS = """
        {%- for row in v.ranks %}
        <tr data-rank="{{ row.rank }}"{% if row.empty %} class="lab-row-empty"{% endif %}>
          <th scope="row">{{ row.rank }}</th>
          <td data-col="count">{{ row.count }}</td>
          <td data-col="mean">{{ row.mean }}</td>
          <td data-col="factor"><span class="lab-value">{{ row.factor }}</span> <span class="lab-calc">{{ row.factor_formula }}</span></td>
          <td data-col="compensated"><span class="lab-value">{{ row.compensated }}</span> <span class="lab-calc">{{ row.compensated_formula }}</span></td>
          <td class="lab-col-influence" data-col="influence-global">{{ row.influence_global }}</td>
          <td class="lab-col-influence" data-col="influence-rank-mean">{{ row.influence_rank_mean }}</td>
        </tr>
        {%- if v.mode == "items" %}
        <tr class="lab-row-items" data-rank-items="{{ row.rank }}">
          <td colspan="7">targets {{ row.items }}; gradients w − y: {{ row.gradients }}</td>
        </tr>
        {%- endif %}
        {%- endfor %}"""  # noqa: E501
GRID = """
      {%- set frame = chart.frame %}
      {%- for tick in chart.ticks %}
      <line x1="{{ frame.left }}" x2="{{ frame.right }}" y1="{{ tick.at }}" y2="{{ tick.at }}"></line>
      <text class="chart-tick" x="{{ frame.tick_x }}" y="{{ tick.at }}" dy="4" text-anchor="end">{{ tick.label }}</text>
      {%- endfor %}"""  # noqa: E501
BARS = """
    {%- for series in chart.series %}
    <path class="chart-bar chart-{{ series.kind }}" d="{{ series.path }}"></path>
    {%- endfor %}
    {%- for value in chart.values %}
    <text class="chart-value" x="{{ value.x }}" y="{{ value.y }}" text-anchor="middle">{{ value.text }}</text>
    {%- endfor %}
    {%- set label_y = chart.frame.label_y %}
    {%- for label in chart.rank_labels %}
    <text class="chart-tick" x="{{ label.at }}" y="{{ label_y }}" text-anchor="middle">{{ label.label }}</text>
    {%- endfor %}"""  # noqa: E501
NUMBER_LINE = """
    {%- for at, label in line.ticks %}
    <text class="chart-tick" x="{{ at }}" y="{{ line.tick_y }}" text-anchor="middle">{{ label }}</text>
    {%- endfor %}
    {%- for m in line.markers %}
    <line class="chart-marker chart-{{ m.kind }}" x1="{{ m.x }}" x2="{{ m.x }}" y1="26" y2="128"></line>
    <text class="chart-marker-label chart-{{ m.kind }}" x="{{ m.label_x }}" y="{{ m.label_y }}" text-anchor="{{ m.anchor }}">{{ m.label }}</text>
    {%- endfor %}
    {%- for dot in line.dots %}
    <circle class="chart-dot{% if dot.empty %} chart-dot-empty{% endif %}" cx="{{ dot.cx }}" cy="{{ line.axis_y }}" r="{{ dot.r }}"><title>{{ dot.title }}</title></circle>
    <text class="chart-dot-label" x="{{ dot.cx }}" y="{{ dot.label_y }}" text-anchor="middle">{{ dot.label }}</text>
    {%- endfor %}"""  # noqa: E501

# The chart macros app.lab.markup.bar_chart and line_chart replaced (templates/_charts.html),
# rendered with the lab's environment (their grid and bars are the filters checked above).
CHARTS = """
{%- macro _open(chart, chart_id) -%}
{%- autoescape false -%}
<svg viewBox="{{ chart.frame.view_box }}" role="img" aria-labelledby="{{ chart_id }}-title {{ chart_id }}-desc">
    <title id="{{ chart_id }}-title">{{ chart.title }}</title>
    <desc id="{{ chart_id }}-desc">{{ chart.description }}</desc>
    <g class="chart-grid">
      {{- chart|grid_elements }}
    </g>
{%- endautoescape -%}
{%- endmacro -%}

{%- macro _axis(frame) -%}
{%- autoescape false -%}
    <line class="chart-axis" x1="{{ frame.left }}" x2="{{ frame.right }}" y1="{{ frame.bottom }}" y2="{{ frame.bottom }}"></line>
  </svg>
{%- endautoescape -%}
{%- endmacro -%}

{#- A bar chart writes _open and _axis out (the lab shows two per answer: four macro calls
    fewer, a tenth of a render). -#}
{%- macro bar_chart(chart, chart_id) -%}
{%- autoescape false -%}
{%- set frame = chart.frame -%}
<figure class="lab-chart">
  <svg viewBox="{{ frame.view_box }}" role="img" aria-labelledby="{{ chart_id }}-title {{ chart_id }}-desc">
    <title id="{{ chart_id }}-title">{{ chart.title }}</title>
    <desc id="{{ chart_id }}-desc">{{ chart.description }}</desc>
    <g class="chart-grid">
      {{- chart|grid_elements }}
    </g>
    {{- chart|bar_elements }}
  <line class="chart-axis" x1="{{ frame.left }}" x2="{{ frame.right }}" y1="{{ frame.bottom }}" y2="{{ frame.bottom }}"></line>
  </svg>
  <figcaption>{{ chart.title }}
    {%- for kind, label in chart.legend %}
    <span class="chart-key chart-key-{{ kind }}">{{ label }}</span>
    {%- endfor %}
  </figcaption>
</figure>
{%- endautoescape -%}
{%- endmacro -%}

{%- macro line_chart(chart, chart_id) -%}
{%- autoescape false -%}
<figure class="lab-chart lab-chart-wide">
  {{ _open(chart, chart_id) }}
    {%- for guide in chart.guides %}
    <polyline class="chart-guide chart-{{ guide.kind }}" points="{{ guide.points }}"></polyline>
    {%- endfor %}
    {%- for line in chart.lines %}
    <polyline class="chart-line chart-{{ line.kind }}" points="{{ line.points }}"><title>{{ line.label }}</title></polyline>
    {%- endfor %}
    {%- for label in chart.guide_labels %}
    <text class="chart-guide-label chart-{{ label.kind }}" x="{{ label.x }}" y="{{ label.y }}">{{ label.label }}</text>
    {%- endfor %}
    {%- for tick in chart.step_ticks %}
    <text class="chart-tick" x="{{ tick.at }}" y="{{ chart.frame.label_y }}" text-anchor="{{ tick.kind }}">{{ tick.label }}</text>
    {%- endfor %}
  {{ _axis(chart.frame) }}
  <figcaption>{{ chart.title }} (step on the horizontal axis)
    <span class="chart-key chart-key-global">global item mean</span>
    <span class="chart-key chart-key-rank-mean">plain rank mean</span>
  </figcaption>
</figure>
{%- endautoescape -%}
{%- endmacro -%}"""  # noqa: E501

PLAIN = jinja2.Environment(autoescape=False)
ESCAPED = jinja2.Environment(autoescape=True)


def check(view: LabCharts, details: LabDetails) -> None:
    """Every filter writes what its loop wrote, for these pictures and these details."""
    assert markup.rank_rows(details.ranks, details.mode) == PLAIN.from_string(RANK_ROWS).render(
        v=details
    )
    charts = [details.counts_chart, details.influence_chart]
    if view.trajectory is not None:
        charts.append(view.trajectory.chart)  # type: ignore[arg-type]
    for chart in charts:
        assert markup.grid_elements(chart) == PLAIN.from_string(GRID).render(chart=chart)
    for chart in (details.counts_chart, details.influence_chart):
        assert markup.bar_elements(chart) == PLAIN.from_string(BARS).render(chart=chart)
    for chart, chart_id in (
        (details.counts_chart, "lab-chart-counts"),
        (details.influence_chart, "c"),
    ):
        macro = templates.env.from_string(CHARTS + "{{ bar_chart(chart, chart_id) }}")
        assert markup.bar_chart(chart, chart_id) == macro.render(chart=chart, chart_id=chart_id)
    if view.trajectory is not None:
        chart = view.trajectory.chart
        macro = templates.env.from_string(CHARTS + "{{ line_chart(chart, chart_id) }}")
        expected = macro.render(chart=chart, chart_id="lab-chart-trajectory")
        assert markup.line_chart(chart, "lab-chart-trajectory") == expected
    line = view.number_line
    assert markup.number_line_elements(line) == ESCAPED.from_string(NUMBER_LINE).render(line=line)


values = st.one_of(
    st.integers(-100, 100).map(lambda k: k / 10),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
)
counts = st.one_of(st.integers(0, 64).map(float), st.floats(0, 1e12))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 64).flatmap(
        lambda p: st.tuples(
            st.lists(counts, min_size=p, max_size=p).filter(any),
            st.lists(values, min_size=p, max_size=p),
        )
    ),
    st.floats(1e-6, 1e6),
    values,
)
def test_means_form_elements_are_the_loops_text(
    ranks: tuple[list[float], list[float]], eta: float, w: float
) -> None:
    state = means_state(ranks[0], ranks[1], eta, w)
    with contextlib.suppress(EngineError):
        result = from_means(state.counts, state.means, eta=eta, w=w)
        check(lab_charts(result, implied_path(state)), lab_details(result, state))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(values, max_size=5), min_size=1, max_size=5).filter(any),
    st.floats(1e-3, 2),
    values,
)
def test_items_form_elements_are_the_loops_text(
    targets: list[list[float]], eta: float, w: float
) -> None:
    state = items_state(targets, None, eta, w, 30)
    with contextlib.suppress(EngineError):
        result = from_items(targets, eta=eta, w=w)
        path = trajectory(targets, None, eta=eta, w=w, steps=30)
        check(lab_charts(result, path), lab_details(result, state))


@pytest.mark.parametrize(
    "name", ["rank_rows", "grid_elements", "bar_elements", "bar_chart", "line_chart"]
)
def test_the_filters_are_the_templates(name: str) -> None:
    assert templates.env.filters[name] is getattr(markup, name)
