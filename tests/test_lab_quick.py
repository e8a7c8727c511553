"""The quick reading of the means form (every drag of the lab) is the full reading, exactly: the
same form, the same validated instance (both from the state model) and the same errors."""

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

from app.lab.query import (
    CANONICAL_NUMBERS,
    ParsedLab,
    _params,
    _parse_lab,
    _quick_means,
    format_number,
    lab_query_pairs,
    parse_lab,
)
from app.lab.state import MAX_ABS_VALUE, MAX_COUNT, MAX_ETA, MAX_RANKS, GradientRequest

# Texts a number field may hold: numbers, limits and just past them, non-finite, not numbers.
TEXTS = [
    "0",
    "-0",
    "1",
    "2.5",
    " 3 ",
    "-7.25",
    "0.1",
    "1e12",
    "1000000000000.0001",
    "-1e12",
    "-1000000000000.0001",
    "1e-300",
    "5e-324",
    "1e308",
    "-1e308",
    "1e6",
    "1000000.0001",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "",
    "abc",
    "1_0",
    "0x1",
    "1e3",
    "+4",
    "\u0661",
    "1,5",
]


def same_state(a: GradientRequest | None, b: GradientRequest | None) -> bool:
    if a is None or b is None:
        return a is b
    return (
        type(a) is type(b)
        and list(a.__dict__.items()) == list(b.__dict__.items())
        and all(
            type(x) is type(y)
            for x, y in zip(a.__dict__.values(), b.__dict__.values(), strict=True)
        )
        and a.model_fields_set == b.model_fields_set
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
        and a.model_dump_json() == b.model_dump_json()
        and a.model_dump(exclude_unset=True) == b.model_dump(exclude_unset=True)
    )


def same_parse(a: ParsedLab, b: ParsedLab) -> bool:
    return (
        a.form == b.form
        and a.errors == b.errors
        and a.resized == b.resized
        and same_state(a.state, b.state)
    )


texts = st.one_of(st.sampled_from(TEXTS), st.floats().map(repr), st.text(max_size=6))


def _query(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{quote(name)}={quote(value, safe=',;')}" for name, value in pairs)


@st.composite
def queries(draw: st.DrawFn) -> str:
    ranks = draw(st.integers(0, MAX_RANKS + 2))
    counts = draw(st.lists(texts, min_size=ranks, max_size=ranks))
    other = draw(st.sampled_from([ranks, ranks, ranks, ranks + 1, max(ranks - 1, 0)]))
    means = draw(st.lists(texts, min_size=other, max_size=other))
    if draw(st.booleans()):
        pairs = [("counts", ",".join(counts)), ("means", ",".join(means))]
    else:  # one parameter per rank, as the page's form sends them
        pairs = [("counts", text) for text in counts] + [("means", text) for text in means]
    if draw(st.booleans()):
        pairs.append(("P", draw(st.sampled_from([str(ranks), f" {ranks}", str(other), "x", ""]))))
    for name in ("eta", "w"):
        for _ in range(draw(st.integers(0, 2))):
            pairs.append((name, draw(texts)))
    extra = draw(
        st.lists(
            st.sampled_from(
                [
                    ("counts", "3"),
                    ("means", "1"),
                    ("P", "3"),
                    ("P", "x"),
                    ("steps", "5"),
                    ("weights", "1"),
                    ("targets", "9,9"),
                    ("ring_p", "4"),
                    ("present", "1"),
                ]
            ),
            max_size=2,
        )
    )
    pairs += extra
    order = draw(st.permutations(pairs))
    return _query(list(order))


@given(queries())
@settings(max_examples=600)
def test_parse_lab_is_the_model_reading(query: str) -> None:
    params = _params(QueryParams(query))
    parsed = parse_lab(QueryParams(query))
    assert same_parse(parsed, _parse_lab(params))
    if parsed.canonical:
        assert parsed.state is not None
        assert list(parsed.canonical) == lab_query_pairs(parsed.state)


@given(
    st.one_of(
        st.from_regex(CANONICAL_NUMBERS, fullmatch=True),
        st.floats(-1e7, 1e7).map(repr),
        st.floats(-1e7, 1e7).map(lambda x: format(x, ".6g")),
        st.integers(-(10**8), 10**8).map(str),
        st.sampled_from(["0.0001", "0.00001", "-0", "0.0", "1.0", "123456.12345678", "1e-05"]),
    )
)
@settings(max_examples=1500)
def test_a_canonical_number_is_written_back_as_it_is(text: str) -> None:
    """A text ``CANONICAL_NUMBERS`` takes is what ``format_number`` writes for its float."""
    if CANONICAL_NUMBERS.fullmatch(text):
        numbers = [float(part) for part in text.split(",")]
        assert ",".join(map(format_number, numbers)) == text


@given(
    st.lists(st.floats(0, 64).map(lambda x: f"{x:.1f}"), min_size=1, max_size=8),
    st.data(),
)
def test_the_drags_states_read_quickly(counts: list[str], data: st.DataObject) -> None:
    means = data.draw(
        st.lists(
            st.floats(-10, 10).map(lambda x: f"{x:.1f}"), min_size=len(counts), max_size=len(counts)
        )
    )
    if data.draw(st.booleans()):
        query = f"counts={','.join(counts)}&means={','.join(means)}&eta=0.5&w=3"
    else:  # as the page's form sends it
        query = "&".join(
            [f"P={len(counts)}", *(f"counts={c}" for c in counts), *(f"means={m}" for m in means)]
        )
        query += "&eta=0.5&w=3"
    params = _params(QueryParams(query))
    quick = _quick_means(params)
    assert quick is not None
    assert same_parse(quick, _parse_lab(params))
    assert quick.state is not None
    assert quick.canonical in ((), tuple(lab_query_pairs(quick.state)))


@pytest.mark.parametrize(
    "query",
    [
        "counts=2,6&means=1,3&eta=0.1&w=10",
        "counts=2,6&means=1,3&eta=-0.1&w=10",
        "counts=2,6&means=1,3&eta=0&w=10",
        f"counts=2,6&means=1,3&eta={MAX_ETA}&w=10",
        f"counts=2,6&means=1,3&eta={MAX_ETA * 1.01}&w=10",
        f"counts=2,6&means=1,3&eta=0.1&w={MAX_ABS_VALUE}",
        f"counts=2,6&means=1,3&eta=0.1&w={-MAX_ABS_VALUE * 1.01}",
        f"counts=2,{MAX_COUNT}&means=1,3",
        f"counts=2,{MAX_COUNT * 1.01}&means=1,3",
        "counts=-1,6&means=1,3",
        "counts=0,0&means=1,3",
        f"counts=2,6&means={-MAX_ABS_VALUE * 1.01},3",
        "counts=2&counts=6&means=1&means=3&P=2&eta=0.5&w=-4",
        "counts=2,6,1&means=1,3&eta=0.1",
        "counts=2,6&means=1,nan",
        "counts=2,inf&means=1,3",
    ],
)
def test_each_rule_of_the_model_holds_on_the_quick_reading(query: str) -> None:
    """Every limit of the state model, just inside and just past: the quick reading accepts and
    refuses exactly what the full one does."""
    params = _params(QueryParams(query))
    assert same_parse(parse_lab(QueryParams(query)), _parse_lab(params))
