"""``app.lab.query.encode``: a state's query reads back as the pairs it was written from, with
its separators left readable and everything else that a URL gives a meaning to quoted."""

from urllib.parse import parse_qsl

from hypothesis import given
from hypothesis import strategies as st

from app.lab.query import encode

# Mostly the characters a canonical state holds, sometimes anything at all.
texts = st.one_of(
    st.text(alphabet="0123456789.,;-e+_~abcXYZ", max_size=20),
    st.text(max_size=12),
)


@given(st.lists(st.tuples(texts, texts), max_size=6))
def test_encoded_pairs_read_back_as_written(pairs: list[tuple[str, str]]) -> None:
    assert parse_qsl(encode(pairs), keep_blank_values=True) == pairs


def test_separators_stay_readable_and_the_rest_is_quoted() -> None:
    assert encode([("counts", "2,6"), ("targets", "9;7")]) == "counts=2,6&targets=9;7"
    assert encode([("means", "1e+20,-0.5")]) == "means=1e%2B20,-0.5"
    assert encode([("w", "a b&c=d/é")]) == "w=a+b%26c%3Dd%2F%C3%A9"
