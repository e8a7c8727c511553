"""The lab's URL state: parsed, validated without clamping, and written back canonically."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from starlette.datastructures import QueryParams

from app.lab.query import (
    LabForm,
    ParsedLab,
    encode,
    format_number,
    lab_input,
    lab_query_pairs,
    parse_lab,
    parse_ring,
    ring_query_pairs,
)
from app.lab.state import MAX_ABS_VALUE, MAX_COUNT, MAX_ETA, GradientRequest
from tests.lab_states import items_state, means_state, ring_state


def parse(query: str) -> ParsedLab:
    return parse_lab(QueryParams(query))


def test_lesson_query_gives_the_lesson_state() -> None:
    parsed = parse("counts=2,6&means=1,3&eta=0.1&w=10")
    assert parsed.errors == ()
    assert parsed.state == means_state(counts=(2.0, 6.0), means=(1.0, 3.0), eta=0.1, w=10.0)


def test_empty_query_gives_the_lesson_example() -> None:
    assert parse("").state == means_state((2.0, 6.0), (1.0, 3.0), 0.1, 10.0)


def test_repeated_parameters_from_a_plain_form_equal_the_compact_syntax() -> None:
    form = parse("counts=2&counts=6&means=1&means=3&eta=0.1&w=10")
    assert form.state == parse("counts=2,6&means=1,3&eta=0.1&w=10").state


def test_canonical_query_round_trips() -> None:
    state = parse("counts=2.0,6&means=1,3.50&eta=.1&w=10").state
    assert state is not None
    assert encode(lab_query_pairs(state)) == "counts=2,6&means=1,3.5&eta=0.1&w=10"


def test_items_query_with_weights_and_an_empty_rank() -> None:
    parsed = parse("targets=9,9;7,7,0;&weights=;1,1,0;&eta=0.1&w=10&steps=5")
    assert parsed.errors == ()
    assert parsed.state == items_state(
        targets=((9.0, 9.0), (7.0, 7.0, 0.0), ()),
        weights=((1.0, 1.0), (1.0, 1.0, 0.0), ()),
        eta=0.1,
        w=10.0,
        steps=5,
    )
    assert encode(lab_query_pairs(parsed.state)) == (
        "targets=9,9;7,7,0;&weights=1,1;1,1,0;&eta=0.1&w=10&steps=5"
    )


def test_items_without_weights_keep_weights_out_of_the_query() -> None:
    state = parse("targets=9,9;7,7,7,7,7,7&eta=0.1&w=10").state
    assert state is not None
    assert state.targets is not None
    assert state.weights is None
    assert state.steps == 30
    assert encode(lab_query_pairs(state)) == "targets=9,9;7,7,7,7,7,7&eta=0.1&w=10&steps=30"


def test_p_adds_default_ranks_and_drops_the_last_ones() -> None:
    grown = parse("P=3&counts=2&counts=6&means=1&means=3&eta=0.1&w=10")
    assert grown.resized
    assert grown.state == means_state((2.0, 6.0, 4.0), (1.0, 3.0, 2.0), 0.1, 10.0)
    shrunk = parse("P=1&counts=2,6&means=1,3&eta=0.1&w=10")
    assert shrunk.resized
    assert shrunk.state == means_state((2.0,), (1.0,), 0.1, 10.0)
    same = parse("P=2&counts=2,6&means=1,3&eta=0.1&w=10")
    assert not same.resized


@pytest.mark.parametrize(
    ("query", "param", "words"),
    [
        ("counts=2,x&means=1,3", "counts", "rank 1 count"),
        ("counts=2,1e13&means=1,3", "counts", "rank 1 count"),
        ("counts=-1,6&means=1,3", "counts", "rank 0 count"),
        ("counts=2,6&means=nan,3", "means", "rank 0 mean"),
        ("counts=2,6&means=1,inf", "means", "rank 1 mean"),
        ("counts=2,6&means=1,3&eta=0", "eta", "η"),
        ("counts=2,6&means=1,3&eta=-0.5", "eta", "η"),
        ("counts=2,6&means=1,3&w=", "w", "w (parameter)"),
        ("counts=2,6&means=1", "means", "rank 1 mean"),
        ("counts=" + ",".join(["1"] * 65), "counts", "counts (one entry per rank)"),
        ("P=65&counts=2,6&means=1,3", "P", "P (number of ranks)"),
        ("P=0&counts=2,6&means=1,3", "P", "P (number of ranks)"),
        ("P=two&counts=2,6&means=1,3", "P", "P (number of ranks)"),
        ("targets=9,x;7", "targets", "rank 0 targets"),
        ("targets=9,9;7&weights=1,1", "weights", "weights"),
        ("targets=9,9;7&weights=1;1", "weights", "weights[0] has 1 entries"),
        ("targets=9,9;7&weights=1,-1;1", "weights", "rank 0 weights"),
        ("targets=9,9;7&steps=-1", "steps", "steps"),
        ("targets=9,9;7&steps=1001", "steps", "steps"),
    ],
)
def test_bad_input_is_an_error_naming_the_field(query: str, param: str, words: str) -> None:
    parsed = parse(query)
    assert parsed.state is None
    assert any(e.param == param and words in e.message for e in parsed.errors), parsed.errors


def test_out_of_range_count_is_refused_not_clamped() -> None:
    parsed = parse("counts=2,2e12&means=1,3")
    assert parsed.state is None
    (error,) = parsed.errors
    assert error.message == "rank 1 count: Input should be less than or equal to 1000000000000"
    assert error.input_id == "lab-count-1"


def test_the_page_and_the_json_api_share_one_model_and_its_limits() -> None:
    """Past the sliders (P 12, a count of 100) is a valid state, exactly as the API takes it."""
    counts, means = [100.0] + [1.0] * 11, [2.0] * 12
    query = f"counts={','.join(map(str, counts))}&means={','.join(map(str, means))}&eta=0.5&w=1"
    parsed = parse(query)
    assert parsed.errors == ()
    body = {"counts": counts, "means": means, "eta": 0.5, "w": 1}
    assert parsed.state == GradientRequest.model_validate(body)


def test_a_bad_value_is_named_alike_in_the_query_and_the_json_body() -> None:
    """Both go through the same model: the same field, the same words."""
    (error,) = parse("counts=2,-1&means=1,3&eta=0.1&w=10").errors
    with pytest.raises(ValidationError) as caught:
        GradientRequest.model_validate({"counts": [2, -1], "means": [1, 3], "eta": 0.1, "w": 10})
    (api,) = caught.value.errors()
    assert api["loc"] == ("counts", 1)
    assert (error.param, error.input_id) == ("counts", "lab-count-1")
    assert error.message == f"rank 1 count: {api['msg']}"


def test_the_form_keeps_what_was_typed() -> None:
    parsed = parse("counts=2,abc&means=1,3&eta=0.1&w=10")
    assert parsed.form.counts_or_targets == ("2", "abc")


def test_ring_defaults_stay_out_of_the_query() -> None:
    parsed = parse_ring(QueryParams(""))
    assert parsed.state == ring_state(100.0, 8, 10.0, 10.0)
    assert ring_query_pairs(parsed.state) == []
    changed = parse_ring(QueryParams("ring_mb=50&ring_p=16"))
    assert changed.state is not None
    assert encode(ring_query_pairs(changed.state)) == (
        "ring_mb=50&ring_p=16&ring_us=10&ring_gbps=10"
    )


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("ring_mb=0", "ring_mb"),
        ("ring_p=1", "ring_p"),
        ("ring_p=2.5", "ring_p"),
        ("ring_us=-1", "ring_us"),
        ("ring_gbps=x", "ring_gbps"),
        ("ring_gbps=inf", "ring_gbps"),
    ],
)
def test_bad_ring_input_names_the_field(query: str, param: str) -> None:
    parsed = parse_ring(QueryParams(query))
    assert parsed.state is None
    assert [e.param for e in parsed.errors] == [param]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
counts = st.floats(min_value=0, max_value=64, allow_nan=False)


@given(
    st.integers(min_value=1, max_value=8).flatmap(
        lambda p: st.tuples(
            st.lists(counts, min_size=p, max_size=p), st.lists(finite, min_size=p, max_size=p)
        )
    ),
    st.floats(min_value=1e-6, max_value=10, allow_nan=False),
    finite,
)
def test_any_valid_means_state_survives_its_own_url(
    ranks: tuple[list[float], list[float]], eta: float, w: float
) -> None:
    state = means_state(tuple(ranks[0]), tuple(ranks[1]), eta, w)
    assert parse(encode(lab_query_pairs(state))).state == state


def test_a_trailing_comma_is_a_list_being_typed() -> None:
    state = parse("targets=9,9,;7&eta=0.1&w=10").state
    assert state is not None
    assert state.targets is not None
    assert state.targets == [[9.0, 9.0], [7.0]]
    assert parse("targets=9,,9;7&eta=0.1&w=10").state is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2.0, "2"),
        (-4.0, "-4"),
        (-0.0, "0"),
        (8, "8"),
        (3.5, "3.5"),
        (0.1, "0.1"),
        (1e15 - 1, "999999999999999"),
        (1e15, "1000000000000000.0"),
        (-1e16, "-1e+16"),
        (5e-324, "5e-324"),
    ],
)
def test_format_number_writes_integers_without_a_point(value: float, text: str) -> None:
    assert format_number(value) == text
    assert float(text) == value


def test_lab_input_reads_numbers_and_leaves_other_text_to_the_model() -> None:
    """Each rank's text is its float, or the text itself, which the model then refuses at its
    place; "nan" and "inf" are floats here (the model refuses them as not finite)."""
    texts = ("2", "abc", "1e3", "", "4 ", "-inf", "0x1", "3.5")
    body = lab_input(LabForm("means", texts, tuple(reversed(texts)), "0.1", "x", ""))
    expected = [2.0, "abc", 1000.0, "", 4.0, -math.inf, "0x1", 3.5]
    assert body["counts"] == expected
    assert body["means"] == expected[::-1]
    assert (body["eta"], body["w"]) == (0.1, "x")
    assert math.isnan(lab_input(LabForm("means", ("nan",), ("1",), "1", "1", ""))["counts"][0])


@pytest.mark.parametrize(
    ("query", "param"),
    [
        (f"counts=2,6&means=1,3&eta={MAX_ETA}&w=10", None),
        (f"counts=2,6&means=1,3&eta={MAX_ETA * 1.01}&w=10", "eta"),
        (f"counts=2,6&means=1,3&eta=0.1&w={-MAX_ABS_VALUE}", None),
        (f"counts=2,6&means=1,3&eta=0.1&w={-MAX_ABS_VALUE * 1.01}", "w"),
        (f"counts=2,{MAX_COUNT}&means=1,3", None),
        (f"counts=2,{MAX_COUNT * 1.01}&means=1,3", "counts"),
        (f"counts=2,6&means={MAX_ABS_VALUE},3", None),
        (f"counts=2,6&means={-MAX_ABS_VALUE * 1.01},3", "means"),
        ("counts=2,inf&means=1,3", "counts"),
        ("counts=2,6&means=1,3&eta=0.1&w=nan", "w"),
        ("counts=2&counts=6&means=1&means=3&P=2&eta=0.5&w=-4", None),
        ("counts=2,6,1&means=1,3&eta=0.1", "means"),
        ("counts=%202%20,6&means=1,+3&eta=0.1", None),  # spaces, encoded or as +
    ],
)
def test_each_limit_of_the_model_holds_in_a_query(query: str, param: str | None) -> None:
    """Every limit of the state model, just inside and just past, read from a query: a value at
    the limit is a state, one past it an error naming its field (nothing is clamped)."""
    parsed = parse(query)
    if param is None:
        assert parsed.errors == ()
        assert parsed.state is not None
    else:
        assert parsed.state is None
        assert [error.param for error in parsed.errors] == [param]
