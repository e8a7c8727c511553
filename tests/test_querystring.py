"""``query_params`` reads every query as Starlette's ``request.query_params``."""

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import QueryParams
from starlette.requests import Request

from app.web.querystring import query_params

# Mostly what a lab query holds, with the separators doubled, missing and misplaced; sometimes
# percent escapes, "+" and any latin-1 byte (a query arrives as raw bytes).
queries = st.one_of(
    st.text(alphabet="counts=means&eta,w.-0123456789 ;=&&", max_size=40),
    st.text(alphabet="ab=&%+2C0é\x00 ", max_size=20),
    st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=20),
)


def read(raw: bytes) -> QueryParams:
    return query_params(Request({"type": "http", "query_string": raw}))


@given(queries)
def test_the_same_parameters_as_starlette_for_any_query(text: str) -> None:
    raw = text.encode("latin-1")
    read_here = read(raw)
    assert isinstance(read_here, QueryParams)
    assert read_here.multi_items() == QueryParams(raw).multi_items()


def test_a_drags_query_and_its_edge_cases() -> None:
    drag = b"counts=2,6,0&means=1,-3.5,0&eta=0.1&w=10"
    assert read(drag).multi_items() == [
        ("counts", "2,6,0"),
        ("means", "1,-3.5,0"),
        ("eta", "0.1"),
        ("w", "10"),
    ]
    # Empty fields are skipped, a field without "=" has an empty value, a value keeps its "=".
    assert read(b"&counts&&w=a=b&").multi_items() == [("counts", ""), ("w", "a=b")]
    # Escapes and "+" are Starlette's to read.
    assert read(b"w=%2D1+0").multi_items() == [("w", "-1 0")]
