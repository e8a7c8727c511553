"""``app.lab.query.encode`` writes what ``urlencode(pairs, safe=",;")`` writes, for any text."""

from urllib.parse import urlencode

from hypothesis import given
from hypothesis import strategies as st

from app.lab.query import encode

# Mostly the characters a canonical state holds, sometimes anything at all.
texts = st.one_of(
    st.text(alphabet="0123456789.,;-e+_~abcXYZ", max_size=20),
    st.text(max_size=12),
)


@given(st.lists(st.tuples(texts, texts), max_size=6))
def test_encode_is_urlencode(pairs: list[tuple[str, str]]) -> None:
    assert encode(pairs) == urlencode(pairs, safe=",;")


def test_encode_quotes_what_it_must() -> None:
    pairs = [("means", "1e+20,-0.5"), ("w", "a b&c=d/é")]
    assert encode(pairs) == urlencode(pairs, safe=",;")
    assert encode([("counts", "2,6"), ("targets", "9;7")]) == "counts=2,6&targets=9;7"
