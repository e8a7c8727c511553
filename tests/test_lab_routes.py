"""The lab through the real app: one URL, a fragment for htmx or the whole page, never a 500."""

# The lab writes true minus and times signs; the expected strings spell them the same way.
# ruff: noqa: RUF001

from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient

from app.lab.panel import PRESETS

LESSON = "counts=2,6&means=1,3&eta=0.1&w=10"
ITEMS = "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30"
HX = {"HX-Request": "true", "HX-Target": "lab-results"}
DETAILS = {"HX-Request": "true", "HX-Target": "lab-details"}
CHARTS = {"HX-Request": "true", "HX-Target": "lab-charts"}


def soup(text: str) -> BeautifulSoup:
    return BeautifulSoup(text, "html.parser")


def value(page: BeautifulSoup, name: str) -> str:
    found = page.select_one(f'[data-value="{name}"]')
    assert isinstance(found, Tag), f"no value {name}"
    return found.get_text(strip=True)


def column(page: BeautifulSoup, name: str) -> list[str]:
    return [cell.get_text(strip=True) for cell in page.select(f'[data-col="{name}"] .lab-value')]


def messages(page: BeautifulSoup) -> list[str]:
    return [item.get_text(" ", strip=True) for item in page.select(".lab-errors li")]


def test_lesson_example_fragment_has_the_lessons_numbers(client: TestClient) -> None:
    response = client.get(f"/lab?{LESSON}", headers=HX)
    assert response.status_code == 200
    page = soup(response.text)
    assert value(page, "N") == "8"
    assert value(page, "g") == "2.5"
    assert value(page, "rank-mean") == "2"
    assert value(page, "w-new") == "9.75"
    assert value(page, "w-new-rank-mean") == "9.8"
    assert value(page, "difference") == "0.05"
    details = soup(client.get(f"/lab?{LESSON}", headers=DETAILS).text)
    assert column(details, "factor") == ["0.5", "1.5"]
    assert column(details, "compensated") == ["0.5", "4.5"]
    formula = details.select_one('[data-formula="g"]')
    assert formula is not None
    assert "(2×1 + 6×3) / 8 = 2.5" in formula.get_text()


def test_means_that_average_to_zero_as_typed_show_a_plain_mean_of_zero(
    client: TestClient,
) -> None:
    """The pane and the details show the numbers as typed: 3.7, -2.3, 8.8, -2.7, -6.6, -3.9 and
    3 average to 0 (their floats' binary values to 1.9e-16, which the pane used to show)."""
    query = "counts=39,5,29,24,43,3,37&means=3.7,-2.3,8.8,-2.7,-6.6,-3.9,3&eta=0.09&w=18"
    page = soup(client.get(f"/lab?{query}", headers=HX).text)
    assert value(page, "rank-mean") == "0"
    assert value(page, "w-new-rank-mean") == "18"
    assert value(page, "g") == "0.770556"
    verdict = page.select_one(".lab-verdict")
    assert verdict is not None
    assert verdict.get_text().startswith("The plain rank mean gives 0 instead of 0.770556 ")
    details = soup(client.get(f"/lab?{query}", headers=DETAILS).text)
    line = details.select_one('[data-formula="rank-mean"]')
    assert line is not None
    assert "(3.7 + (−2.3) + 8.8 + (−2.7) + (−6.6) + (−3.9) + 3) / 7 = 0" in line.get_text()
    # The pictures' fixed points are w - g and w - the rank mean, as written: at w = 0, 0.
    charts = soup(client.get(f"/lab?{query.replace('w=18', 'w=0')}", headers=CHARTS).text)
    assert value(charts, "fixed-rank-mean") == "0"
    assert value(charts, "fixed-global") == "−0.770556"
    # w - ḡᵣ too: -8.5 - (-9.8) and -8.5 - (-7.2) as floats are 1.3000000000000007 and
    # -1.2999999999999998, whose mean is 4.5e-16 where the mean as written is 0.
    charts = soup(client.get("/lab?counts=3,3&means=-9.8,-7.2&eta=0.5&w=-8.5", headers=CHARTS).text)
    assert value(charts, "fixed-rank-mean") == value(charts, "fixed-global") == "0"


def test_htmx_gets_only_the_fragment_and_a_plain_get_the_whole_page(client: TestClient) -> None:
    fragment = client.get(f"/lab?{LESSON}", headers=HX)
    assert "<html" not in fragment.text
    assert 'id="lab"' not in fragment.text
    assert soup(fragment.text).select_one("#lab-results") is not None
    whole = client.get(f"/lab?{LESSON}")
    assert whole.status_code == 200
    page = soup(whole.text)
    assert page.select_one("html") is not None
    lab = page.select_one("#lab")
    assert lab is not None
    assert value(lab, "w-new") == "9.75"
    for response in (fragment, whole):
        assert "HX-Request" in response.headers["Vary"]


def test_lesson_page_opens_a_shared_state(client: TestClient) -> None:
    response = client.get("/?counts=4,4&means=1,3&eta=0.1&w=10")
    assert response.status_code == 200
    lab = soup(response.text).select_one("#lab")
    assert lab is not None
    assert value(lab, "g") == "2"
    assert value(lab, "rank-mean") == "2"
    counts = [field["value"] for field in lab.select('#lab-form input[name="counts"]')]
    assert counts == ["4", "4"]


def test_valid_state_is_pushed_as_the_page_address(client: TestClient) -> None:
    response = client.get("/lab?counts=2.0&counts=6&means=1&means=3&eta=.1&w=10", headers=HX)
    assert response.headers["X-Lab-Url"] == f"/?{LESSON}"


def test_ring_state_rides_along_in_the_pushed_address(client: TestClient) -> None:
    response = client.get(f"/lab?{LESSON}&ring_mb=50&ring_p=16&ring_us=5&ring_gbps=25", headers=HX)
    pushed = parse_qs(urlsplit(response.headers["X-Lab-Url"]).query)
    assert pushed["ring_mb"] == ["50"]
    assert pushed["counts"] == ["2,6"]


def test_whole_lab_target_renders_controls_and_results(client: TestClient) -> None:
    response = client.get(f"/lab?{ITEMS}", headers={"HX-Request": "true", "HX-Target": "lab"})
    assert response.status_code == 200
    page = soup(response.text)
    lab = page.select_one("section#lab")
    assert lab is not None
    assert [field["value"] for field in lab.select('#lab-form input[name="targets"]')] == [
        "9,9",
        "7,7,7,7,7,7",
    ]
    assert value(lab, "fixed-global") == "7.5"


BAD_INPUTS = [
    ("counts=2,x&means=1,3&eta=0.1&w=10", "rank 1 count"),
    ("counts=2,2e12&means=1,3&eta=0.1&w=10", "rank 1 count"),
    ("counts=-1,6&means=1,3&eta=0.1&w=10", "rank 0 count"),
    ("counts=2,6&means=1,3&eta=0&w=10", "η (learning rate)"),
    ("counts=2,6&means=1,3&eta=-1&w=10", "η (learning rate)"),
    ("counts=2,6&means=nan,3&eta=0.1&w=10", "rank 0 mean"),
    ("counts=2,6&means=1,3&eta=0.1&w=inf", "w (parameter)"),
    ("counts=2,6&means=1&eta=0.1&w=10", "rank 1 mean"),
    ("counts=0,0&means=1,3&eta=0.1&w=10", "no valid items"),
    ("P=65&counts=2,6&means=1,3&eta=0.1&w=10", "P (number of ranks)"),
    (f"counts={','.join(['1'] * 65)}&means={','.join(['1'] * 65)}", "counts (one entry per rank)"),
    ("targets=9,9;7&weights=1&eta=0.1&w=10", "weights"),
    ("targets=9,9;7&eta=0.1&w=10&steps=5000", "steps"),
    ("targets=;&eta=0.1&w=10", "no valid items"),
]


@pytest.mark.parametrize(("query", "field"), BAD_INPUTS)
def test_bad_input_is_422_with_a_message_naming_the_field(
    client: TestClient, query: str, field: str
) -> None:
    fragment = client.get(f"/lab?{query}", headers=HX)
    assert fragment.status_code == 422
    assert "X-Lab-Url" not in fragment.headers
    assert any(field in message for message in messages(soup(fragment.text)))
    for url in (f"/?{query}", f"/lab?{query}"):
        whole = client.get(url)
        assert whole.status_code == 422
        page = soup(whole.text)
        assert page.select_one("h1") is not None  # the lesson still renders
        lab = page.select_one("#lab")
        assert lab is not None
        assert any(field in message for message in messages(lab))


def test_the_invalid_input_is_marked_and_keeps_what_was_typed(client: TestClient) -> None:
    lab = soup(client.get("/?counts=2,abc&means=1,3&eta=0.1&w=10").text).select_one("#lab")
    assert lab is not None
    field = lab.select_one("#lab-count-1")
    assert field is not None
    assert field["value"] == "abc"
    assert field["aria-invalid"] == "true"
    assert field["aria-describedby"] == "msg-lab-count-1"
    assert lab.select_one("#error-lab-count-1") is not None
    # The message sits at the field itself, inside the field's own box.
    message = lab.select_one("#msg-lab-count-1")
    assert message is not None
    assert message.find_parent(class_="lab-field") is field.find_parent(class_="lab-field")
    assert "rank 1 count" in message.get_text()


@pytest.mark.parametrize("preset", PRESETS, ids=[p.label for p in PRESETS])
def test_every_preset_link_opens_its_state(client: TestClient, preset: object) -> None:
    page = soup(client.get("/").text)
    link = page.find("a", string=preset.label)  # type: ignore[attr-defined]
    assert isinstance(link, Tag)
    href = str(link["href"])
    assert href.endswith("#lab")
    response = client.get(href.split("#")[0])
    assert response.status_code == 200
    assert soup(response.text).select_one("#lab-results .lab-figures") is not None
    fragment = client.get(str(link["hx-get"]), headers={"HX-Request": "true", "HX-Target": "lab"})
    assert fragment.status_code == 200


def test_equal_counts_preset_says_both_schemes_agree(client: TestClient) -> None:
    page = soup(client.get("/lab?counts=4,4&means=1,3&eta=0.1&w=10", headers=HX).text)
    assert value(page, "g") == value(page, "rank-mean") == "2"
    assert page.select_one(".lab-verdict-agree") is not None


def test_empty_rank_shows_a_warning(client: TestClient) -> None:
    page = soup(client.get("/lab?counts=2,6,0&means=1,3,0&eta=0.1&w=10", headers=HX).text)
    warnings = page.select(".lab-warnings li")
    assert any("rank 2 has no valid items" in w.get_text() for w in warnings)
    live = page.select_one(".lab-notes")
    assert live is not None
    assert live["role"] == "status"
    details = client.get("/lab?counts=2,6,0&means=1,3,0&eta=0.1&w=10", headers=DETAILS)
    assert column(soup(details.text), "factor") == ["0.75", "2.25", "0"]


def test_items_form_draws_w_over_the_steps_for_both_schemes(client: TestClient) -> None:
    pane, charts = (client.get(f"/lab?{ITEMS}", headers=h).text for h in (HX, CHARTS))
    page = soup(pane + charts)
    chart = page.select_one("#lab-chart-trajectory-title")
    assert chart is not None
    svg = chart.find_parent("svg")
    assert isinstance(svg, Tag)
    lines = svg.select("polyline.chart-line")
    assert len(lines) == 2
    assert all(len(str(line["points"]).split()) == 31 for line in lines)
    assert value(page, "fixed-global") == "7.5"
    assert value(page, "fixed-rank-mean") == "8"
    assert value(page, "g") == "2.5"
    assert value(page, "w-new-rank-mean") == "9.8"


def test_only_the_means_form_says_its_path_implies_targets(client: TestClient) -> None:
    """The means form's SGD path comes from targets its means imply (w - ḡᵣ at the given w);
    the items form's from the targets typed, so only the first says so."""

    def notes(query: str) -> list[str]:
        charts = soup(client.get(f"/lab?{query}", headers=CHARTS).text)
        return [p.get_text(" ", strip=True) for p in charts.select(".lab-trajectory-note")]

    assert any("implies a mean target" in note for note in notes(LESSON))
    items_notes = notes(ITEMS)
    assert items_notes
    assert not any("implies" in note for note in items_notes)


def test_heavy_padding_counts_only_weighted_tokens(client: TestClient) -> None:
    page = soup(client.get(f"/lab?{PRESETS[4].query}", headers=HX).text)
    assert value(page, "N") == "10"  # 8 valid tokens on rank 0, 2 on rank 1
    details = soup(client.get(f"/lab?{PRESETS[4].query}", headers=DETAILS).text)
    assert [c.get_text() for c in details.select('[data-col="count"]')] == ["8", "2"]


def test_charts_are_labelled_svg(client: TestClient) -> None:
    pictures = client.get(f"/lab?{LESSON}", headers=CHARTS).text
    page = soup(pictures + client.get(f"/lab?{LESSON}", headers=DETAILS).text)
    charts = page.select("svg[role=img]")
    # The number line and the implied SGD path (pictures), the two bar charts (details).
    assert len(charts) == 4
    for svg in charts:
        title, desc = svg.find("title"), svg.find("desc")
        assert title is not None
        assert desc is not None
        assert str(svg["aria-labelledby"]).split() == [title["id"], desc["id"]]
    assert "rank 0 2, rank 1 6" in page.select_one("#lab-chart-counts-desc").get_text()  # type: ignore[union-attr]


def test_a_drag_gets_the_pane_and_the_details_come_by_their_own_request(
    client: TestClient,
) -> None:
    """An input event's answer is the results pane (and its small out-of-band parts), never the
    details below it; the details element asks for itself once the inputs pause."""
    pane = soup(client.get(f"/lab?{LESSON}", headers=HX).text)
    assert pane.select_one("#lab-results .lab-figures") is not None
    assert pane.select_one("#lab-summary") is not None
    assert pane.select_one("#lab-details") is None
    assert pane.select_one("[data-formula]") is None
    assert pane.select_one(".lab-table") is None

    response = client.get(f"/lab?{LESSON}", headers=DETAILS)
    assert response.status_code == 200
    assert "HX-Target" in response.headers["Vary"]
    details = soup(response.text)
    (element,) = details.select("#lab-details")
    assert not element.has_attr("hx-swap-oob")  # it is the swap's own target
    assert element["hx-get"] == "/lab"
    assert element["hx-include"] == "#lab-form"
    assert "delay:" in str(element["hx-trigger"])
    assert "from:#lab-form" in str(element["hx-trigger"])
    assert details.select_one("#lab-results") is None
    assert details.select_one(".lab-figures") is None
    assert len(details.select(".lab-table tbody tr")) == 2

    # The whole lab (a preset) still places everything itself.
    whole = soup(client.get(f"/lab?{LESSON}", headers={**HX, "HX-Target": "lab"}).text)
    assert whole.select_one("#lab-details [data-formula=g]") is not None
    assert whole.select_one("#lab-results .lab-figures") is not None


def test_a_drag_gets_the_figures_and_the_pictures_come_by_their_own_request(
    client: TestClient,
) -> None:
    """An input event's answer holds no picture: the number line and the SGD paths answer
    their own request (HX-Target: lab-charts), which lab.js sends a few times a second."""
    pane = soup(client.get(f"/lab?{LESSON}", headers=HX).text)
    assert pane.select_one("#lab-results .lab-figures") is not None
    assert pane.select_one("svg") is None
    assert pane.select_one("#lab-charts") is None

    response = client.get(f"/lab?{LESSON}", headers=CHARTS)
    assert response.status_code == 200
    assert "HX-Target" in response.headers["Vary"]
    assert response.headers["X-Lab-Url"] == f"/?{LESSON}"
    charts = soup(response.text)
    (element,) = charts.select("#lab-charts")
    assert not element.has_attr("hx-swap-oob")  # it is the swap's own target
    assert element["hx-get"] == "/lab"
    assert element["hx-include"] == "#lab-form"
    assert element["hx-trigger"] == "refresh-charts, submit from:#lab-form"
    assert element.select_one("#lab-chart-line-title") is not None
    assert element.select_one("#lab-chart-trajectory-title") is not None
    assert charts.select_one(".lab-figures") is None
    assert charts.select_one("#lab-details") is None
    # The lesson's means 1 and 3 at w = 10 imply targets 9 and 7, weighted 2 and 6: 7.5 and 8.
    assert value(charts, "fixed-global") == "7.5"
    assert value(charts, "fixed-rank-mean") == "8"

    # The whole lab (a preset) and the page place the pictures once, under the figures.
    for whole in (
        soup(client.get(f"/lab?{LESSON}", headers={**HX, "HX-Target": "lab"}).text),
        soup(client.get(f"/?{LESSON}").text),
    ):
        (pictures,) = whole.select(".lab-pane #lab-charts")
        assert pictures.select_one("#lab-chart-trajectory-title") is not None
        assert pictures.find_previous_sibling(id="lab-results") is not None


@pytest.mark.parametrize(
    ("headers", "element", "content"),
    [(CHARTS, "#lab-charts", "svg"), (DETAILS, "#lab-details", "[data-formula]")],
    ids=["pictures", "details"],
)
def test_what_follows_the_pane_answers_an_invalid_state_with_a_422_and_no_numbers(
    client: TestClient, headers: dict[str, str], element: str, content: str
) -> None:
    response = client.get("/lab?counts=2,x&means=1,3&eta=0.1&w=10", headers=headers)
    assert response.status_code == 422
    assert "X-Lab-Url" not in response.headers
    answer = soup(response.text)
    assert answer.select_one(element) is not None
    assert answer.select_one(content) is None


def test_changing_p_renders_the_rank_rows_out_of_band(client: TestClient) -> None:
    response = client.get("/lab?P=3&counts=2&counts=6&means=1&means=3&eta=0.1&w=10", headers=HX)
    page = soup(response.text)
    rows = page.select_one("#lab-ranks")
    assert rows is not None
    assert rows["hx-swap-oob"] == "true"
    assert len(rows.select(".lab-rank")) == 3
    assert value(page, "N") == "12"
    plain = soup(client.get(f"/lab?{LESSON}", headers=HX).text)
    assert plain.select_one("#lab-ranks") is None


def test_controls_have_labels_naming_rank_and_quantity(client: TestClient) -> None:
    lab = soup(client.get(f"/?{LESSON}").text).select_one("#lab")
    assert lab is not None
    for control in lab.select("#lab-form input:not([type=hidden])"):
        if control.get("id"):
            label = lab.select_one(f'label[for="{control["id"]}"]')
            assert label is not None, control
            named = label.get_text(" ", strip=True)
        else:
            label = lab.select_one(f"#{control['aria-labelledby']}")
            assert label is not None, control
            named = label.get_text(" ", strip=True)
        assert named
    count = lab.select_one('label[for="lab-count-1"]')
    assert count is not None
    assert count.get_text(" ", strip=True).startswith("rank 1 count")


def test_without_javascript_the_form_gets_the_same_url(client: TestClient) -> None:
    lab = soup(client.get(f"/?{LESSON}").text).select_one("#lab")
    assert lab is not None
    form = lab.select_one("form#lab-form")
    assert form is not None
    assert form["method"] == "get"
    action = urlsplit(str(form["action"]))
    assert (action.path, action.fragment) == ("/", "lab")
    assert form.select_one("button[type=submit]") is not None
    fields = [(f["name"], f.get("value", "")) for f in form.select("input[name]")]
    query = "&".join(f"{name}={value}" for name, value in fields)
    response = client.get(f"/?{query}")
    assert response.status_code == 200
    assert value(soup(response.text), "w-new") == "9.75"


def test_no_inline_scripts_or_styles_in_the_lab(client: TestClient) -> None:
    lab = soup(client.get(f"/?{ITEMS}").text).select_one("#lab")
    assert lab is not None
    assert lab.select("script") == []
    assert lab.select("[style]") == []
    assert not [tag for tag in lab.find_all(True) if any(a.startswith("on") for a in tag.attrs)]


def test_ring_panel_fragment_and_errors(client: TestClient) -> None:
    hx = {"HX-Request": "true", "HX-Target": "ring-results"}
    response = client.get(
        f"/lab/ring?ring_mb=100&ring_p=8&ring_us=10&ring_gbps=10&{LESSON}", headers=hx
    )
    assert response.status_code == 200
    page = soup(response.text)
    assert value(page, "ring-time") == "17.64 ms"
    assert value(page, "count-time") == "140.001 µs"
    assert response.headers["X-Lab-Url"] == f"/?{LESSON}"
    carry = page.select_one("#lab-carry-ring")
    assert carry is not None
    assert carry["hx-swap-oob"] == "true"
    bad = client.get("/lab/ring?ring_mb=abc&ring_p=1", headers=hx)
    assert bad.status_code == 422
    found = messages(soup(bad.text))
    assert any("payload S" in m for m in found)
    assert any("ranks P" in m for m in found)
    whole = client.get("/lab/ring?ring_gbps=0")
    assert whole.status_code == 422
    assert any("bandwidth B" in m for m in messages(soup(whole.text)))


def test_one_persistent_live_region_carries_each_new_result(client: TestClient) -> None:
    page = soup(client.get(f"/lab?{LESSON}", headers=HX).text)
    status = page.select_one("#lab-status")
    assert status is not None
    assert status["role"] == "status"
    assert status["hx-swap-oob"] == "innerHTML"  # the region stays; only its text changes
    assert "g 2.5 against the rank mean 2" in status.get_text()
    bad = soup(client.get("/lab?counts=2,6&means=1,3&eta=0&w=10", headers=HX).text)
    assert "η (learning rate)" in bad.select_one("#lab-status").get_text()  # type: ignore[union-attr]


# Typed text the lab echoes: a bad P and M are quoted in their messages (the status line, the
# error list, the message at the field), a bad mean and target stay in their fields as typed.
TYPED = "<b>&\"'"
LESSON_PARAMS = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
ITEMS_PARAMS = {"targets": "9,9;7", "eta": "0.1", "w": "10"}
ESCAPED_ECHOES = [
    ({**LESSON_PARAMS, "P": TYPED}, "lab-P"),
    ({**LESSON_PARAMS, "means": f"1,{TYPED}"}, "lab-mean-1"),
    ({**ITEMS_PARAMS, "targets": f"9,{TYPED};7"}, "lab-targets-0"),
    ({**ITEMS_PARAMS, "acc_m": TYPED}, "lab-acc-m"),
]


@pytest.mark.parametrize(("params", "input_id"), ESCAPED_ECHOES, ids=lambda v: str(v)[:12])
@pytest.mark.parametrize("target", ["lab-results", "lab"])
def test_typed_text_comes_back_escaped(
    client: TestClient, params: dict[str, str], input_id: str, target: str
) -> None:
    """Whatever the lab echoes of a typed `<b>&"'` is text, never markup: the raw answer holds
    no `<b>` tag, and the parsed page gives the typed characters back where they are shown."""
    answer = client.get("/lab", params=params, headers={**HX, "HX-Target": target})
    assert answer.status_code == 422
    assert "<b>" not in answer.text
    page = soup(answer.text)
    assert page.select("b") == []
    shown = [
        page.select_one("#lab-status"),
        *page.select(".lab-errors li"),
        page.select_one(f"#msg-{input_id}"),
    ]
    texts = [tag.get_text() for tag in shown if tag is not None]
    field = page.select_one(f"#{input_id}")
    if target == "lab":
        assert field is not None
        assert len(texts) == 3
    if input_id in ("lab-P", "lab-acc-m"):
        assert texts
        assert all(TYPED[:4] in text for text in texts), texts
    elif field is not None:
        assert TYPED in str(field["value"])


@pytest.mark.parametrize("path", ["/", "/lab/ring"])
def test_typed_text_in_the_ring_panel_comes_back_escaped(client: TestClient, path: str) -> None:
    """The ring panel keeps a typed payload in its field, as text (the whole page, and the ring
    panel's own answer, with its error list)."""
    params = {**LESSON_PARAMS, "ring_mb": TYPED}
    headers = {**HX, "HX-Target": "ring-results"} if path == "/lab/ring" else {}
    answer = client.get(path, params=params, headers=headers)
    assert answer.status_code == 422
    assert "<b>" not in answer.text
    page = soup(answer.text)
    assert page.select("b") == []
    assert any("payload" in message for message in messages(page))
    field = page.select_one("#ring-mb")
    if path == "/":
        assert field is not None
        assert field["value"] == TYPED


def test_a_state_past_the_sliders_renders_and_says_so(client: TestClient) -> None:
    """P 12 and a count of 100 are valid states (the model's limits); the sliders stop short."""
    counts, means = ["100"] + ["1"] * 11, ["2"] * 12
    query = f"counts={','.join(counts)}&means={','.join(means)}&eta=0.5&w=1"
    whole = client.get(f"/lab?{query}", headers={**HX, "HX-Target": "lab"})
    assert whole.status_code == 200
    lab = soup(whole.text)
    note = lab.select_one('[data-note="beyond-sliders"]')
    assert note is not None
    assert "12 ranks" in note.get_text()
    assert "a count of 100" in note.get_text()
    # N = 100 + 11 = 111 items; g = (100·2 + 11·2)/111 = 2 exactly.
    assert value(lab, "N") == "111"
    assert value(lab, "g") == "2"
    slider, field = lab.select('[data-sync="lab-P"]')[0], lab.select_one("#lab-P")
    assert (slider["max"], field is not None and field["max"]) == ("8", "64")
    lesson = soup(client.get(f"/lab?{LESSON}", headers={**HX, "HX-Target": "lab"}).text)
    assert lesson.select_one('[data-note="beyond-sliders"]') is None


def test_page_and_json_api_refuse_a_value_alike(client: TestClient) -> None:
    """One model: the same field, the same words, on the page and in the API's 422."""
    page = client.get("/lab?counts=2,-1&means=1,3&eta=0.1&w=10", headers=HX)
    api = client.post(
        "/api/gradient", json={"counts": [2, -1], "means": [1, 3], "eta": 0.1, "w": 10}
    )
    assert (page.status_code, api.status_code) == (422, 422)
    (detail,) = api.json()["detail"]
    assert detail["loc"] == ["body", "counts", 1]
    (item,) = soup(page.text).select(".lab-errors li")
    assert item["data-field"] == "counts"
    assert item.get_text(strip=True) == f"rank 1 count: {detail['msg']}"


def test_the_lab_routes_are_documented(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert paths["/lab"]["get"]["tags"] == ["lab"]
    assert paths["/lab/ring"]["get"]["tags"] == ["lab"]
