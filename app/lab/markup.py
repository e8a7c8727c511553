"""The lab's repeated elements as HTML text: one f-string per rank, bar, dot or tick.

A template loop costs a Jinja attribute lookup and a yield per value, and the lab fragment shows
some 600 values in per-rank rows and chart elements: written here they cost a fifth of that.
The templates keep everything around them (figures, captions, frames; the bar and line charts
are written here whole, for the chart macros they replaced), and call these as filters. Each
filter writes exactly what the template loop or macro it replaced wrote (tests/
test_lab_markup.py renders those and compares): the text comes from the view model
(``app.lab.view``, ``app.lab.pictures``), free of HTML's special characters
(tests/test_lab_view.py), so none is escaped; the number line's loop escaped its text, and the
comparison holds there too (its ticks, marks and dot titles hold no apostrophe either).
"""

from markupsafe import Markup

from app.lab.bar_charts import BarChart
from app.lab.numbers import MINUS
from app.lab.path_chart import LineChart
from app.lab.pictures import NumberLine
from app.lab.view import RankRow
from app.web.templating import templates


def _rank_row(row: RankRow, items: bool) -> str:
    empty = ' class="lab-row-empty"' if row.empty else ""
    text = (
        f'\n        <tr data-rank="{row.rank}"{empty}>'
        f'\n          <th scope="row">{row.rank}</th>'
        f'\n          <td data-col="count">{row.count}</td>'
        f'\n          <td data-col="mean">{row.mean}</td>'
        f'\n          <td data-col="factor"><span class="lab-value">{row.factor}</span>'
        f' <span class="lab-calc">{row.factor_formula}</span></td>'
        f'\n          <td data-col="compensated"><span class="lab-value">{row.compensated}</span>'
        f' <span class="lab-calc">{row.compensated_formula}</span></td>'
        '\n          <td class="lab-col-influence" data-col="influence-global">'
        f"{row.influence_global}</td>"
        '\n          <td class="lab-col-influence" data-col="influence-rank-mean">'
        f"{row.influence_rank_mean}</td>"
        "\n        </tr>"
    )
    if items:
        text += (
            f'\n        <tr class="lab-row-items" data-rank-items="{row.rank}">'
            f'\n          <td colspan="7">targets {row.items};'
            f" gradients w {MINUS} y: {row.gradients}</td>"
            "\n        </tr>"
        )
    return text


def rank_rows(ranks: tuple[RankRow, ...], mode: str) -> Markup:
    """The per-rank table's rows (and, in the items form, each rank's items below its row)."""
    items = mode == "items"
    return Markup("".join([_rank_row(row, items) for row in ranks]))


def grid_elements(chart: BarChart | LineChart) -> Markup:
    """A chart's value grid: a line and a label per tick (bar and line charts alike)."""
    frame = chart.frame
    return Markup(
        "".join(
            [
                f'\n      <line x1="{frame.left}" x2="{frame.right}" y1="{tick.at}" y2="{tick.at}">'
                "</line>"
                f'\n      <text class="chart-tick" x="{frame.tick_x}" y="{tick.at}" dy="4"'
                f' text-anchor="end">{tick.label}</text>'
                for tick in chart.ticks
            ]
        )
    )


def bar_elements(chart: BarChart) -> Markup:
    """A bar chart's bars (one path per series), the values above them and the rank labels."""
    label_y = chart.frame.label_y
    parts = [
        f'\n    <path class="chart-bar chart-{series.kind}" d="{series.path}"></path>'
        for series in chart.series
    ]
    parts += [
        f'\n    <text class="chart-value" x="{value.x}" y="{value.y}" text-anchor="middle">'
        f"{value.text}</text>"
        for value in chart.values
    ]
    parts += [
        f'\n    <text class="chart-tick" x="{label.at}" y="{label_y}" text-anchor="middle">'
        f"{label.label}</text>"
        for label in chart.rank_labels
    ]
    return Markup("".join(parts))


def number_line_elements(line: NumberLine) -> Markup:
    """The number line's ticks, its two markers (g and the rank mean) and one dot per rank."""
    parts = [
        f'\n    <text class="chart-tick" x="{at}" y="{line.tick_y}" text-anchor="middle">'
        f"{label}</text>"
        for at, label in line.ticks
    ]
    parts += [
        f'\n    <line class="chart-marker chart-{m.kind}" x1="{m.x}" x2="{m.x}" y1="26" y2="128">'
        "</line>"
        f'\n    <text class="chart-marker-label chart-{m.kind}" x="{m.label_x}" y="{m.label_y}"'
        f' text-anchor="{m.anchor}">{m.label}</text>'
        for m in line.markers
    ]
    axis_y = line.axis_y
    parts += [
        f'\n    <circle class="chart-dot{" chart-dot-empty" if dot.empty else ""}" cx="{dot.cx}"'
        f' cy="{axis_y}" r="{dot.r}"><title>{dot.title}</title></circle>'
        f'\n    <text class="chart-dot-label" x="{dot.cx}" y="{dot.label_y}"'
        f' text-anchor="middle">{dot.label}</text>'
        for dot in line.dots
    ]
    return Markup("".join(parts))


def bar_chart(chart: BarChart, chart_id: str) -> Markup:
    """A whole bar chart: its figure, frame, grid, bars, values, rank labels and legend."""
    frame = chart.frame
    legend = "".join(
        [
            f'\n    <span class="chart-key chart-key-{kind}">{label}</span>'
            for kind, label in chart.legend
        ]
    )
    return Markup(
        '<figure class="lab-chart">'
        f'\n  <svg viewBox="{frame.view_box}" role="img"'
        f' aria-labelledby="{chart_id}-title {chart_id}-desc">'
        f'\n    <title id="{chart_id}-title">{chart.title}</title>'
        f'\n    <desc id="{chart_id}-desc">{chart.description}</desc>'
        '\n    <g class="chart-grid">'
        f"{grid_elements(chart)}"
        "\n    </g>"
        f"{bar_elements(chart)}"
        f'\n  <line class="chart-axis" x1="{frame.left}" x2="{frame.right}" y1="{frame.bottom}"'
        f' y2="{frame.bottom}"></line>'
        "\n  </svg>"
        f"\n  <figcaption>{chart.title}{legend}"
        "\n  </figcaption>"
        "\n</figure>"
    )


def line_chart(chart: LineChart, chart_id: str) -> Markup:
    """A whole line chart (the SGD paths): frame, grid, guides, curves, labels and legend."""
    frame = chart.frame
    parts = [
        f'\n    <polyline class="chart-guide chart-{guide.kind}" points="{guide.points}">'
        "</polyline>"
        for guide in chart.guides
    ]
    parts += [
        f'\n    <polyline class="chart-line chart-{line.kind}" points="{line.points}">'
        f"<title>{line.label}</title></polyline>"
        for line in chart.lines
    ]
    parts += [
        f'\n    <text class="chart-guide-label chart-{label.kind}" x="{label.x}" y="{label.y}">'
        f"{label.label}</text>"
        for label in chart.guide_labels
    ]
    parts += [
        f'\n    <text class="chart-tick" x="{tick.at}" y="{frame.label_y}"'
        f' text-anchor="{tick.kind}">{tick.label}</text>'
        for tick in chart.step_ticks
    ]
    return Markup(
        '<figure class="lab-chart lab-chart-wide">'
        f'\n  <svg viewBox="{frame.view_box}" role="img"'
        f' aria-labelledby="{chart_id}-title {chart_id}-desc">'
        f'\n    <title id="{chart_id}-title">{chart.title}</title>'
        f'\n    <desc id="{chart_id}-desc">{chart.description}</desc>'
        '\n    <g class="chart-grid">'
        f"{grid_elements(chart)}"
        "\n    </g>"
        f"{''.join(parts)}"
        f'\n  <line class="chart-axis" x1="{frame.left}" x2="{frame.right}" y1="{frame.bottom}"'
        f' y2="{frame.bottom}"></line>'
        "\n  </svg>"
        f"\n  <figcaption>{chart.title} (step on the horizontal axis)"
        '\n    <span class="chart-key chart-key-global">global item mean</span>'
        '\n    <span class="chart-key chart-key-rank-mean">plain rank mean</span>'
        "\n  </figcaption>"
        "\n</figure>"
    )


# Filters rather than globals: the chart macros, imported without the render's context, see them.
templates.env.filters.update(
    rank_rows=rank_rows,
    grid_elements=grid_elements,
    bar_elements=bar_elements,
    number_line_elements=number_line_elements,
    bar_chart=bar_chart,
    line_chart=line_chart,
)
