"""The class picture (app/engine/class_states.py) against a slow reference in exact fractions,
on hypothesis-generated classes: each student's state is counts and means per rank; the
reference computes g = (1/N) Σ nᵣ ḡᵣ, the rank mean (1/P) Σ ḡᵣ and w_new = w - η·(either) from
the decimals as written, and bins them as the module says."""

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import from_means
from app.engine.class_states import BINS, class_states

# Short decimals, as a slider writes them: counts whole (≥ 1 on every rank: no empty rank),
# means and w in tenths, η in hundredths.
tenths = st.integers(-100, 100).map(lambda k: Fraction(k, 10))
state = st.integers(1, 4).flatmap(
    lambda ranks: st.tuples(
        st.lists(st.integers(1, 64), min_size=ranks, max_size=ranks),
        st.lists(tenths, min_size=ranks, max_size=ranks),
        st.integers(1, 200).map(lambda k: Fraction(k, 100)),
        tenths,
    )
)


def reference(states: list[tuple[list[int], list[Fraction], Fraction, Fraction]]) -> dict:
    by_g, by_rank = [], []
    for counts, means, eta, w in states:
        g = sum(n * m for n, m in zip(counts, means, strict=True)) / sum(counts)
        by_g.append(w - eta * g)
        by_rank.append(w - eta * sum(means) / len(means))
    low, high = min(by_g + by_rank), max(by_g + by_rank)
    bins = 1 if low == high else BINS
    edges = [low + (high - low) * k / bins for k in range(bins + 1)]

    def binned(values: list[Fraction]) -> list[int]:
        found = [0] * bins
        for value in values:
            found[next(k for k in range(bins) if k == bins - 1 or value < edges[k + 1])] += 1
        return found

    return {
        "unequal": sum(len(set(counts)) > 1 for counts, *_ in states),
        "edges": tuple(edges),
        "global": tuple(binned(by_g)),
        "rank": tuple(binned(by_rank)),
        "median_g": sorted(by_g)[(len(by_g) - 1) // 2],
        "median_rank": sorted(by_rank)[(len(by_rank) - 1) // 2],
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(state, min_size=1, max_size=12))
def test_the_picture_is_the_definitions_in_exact_fractions(states: list) -> None:
    results = [
        from_means(
            [float(n) for n in counts], [float(m) for m in means], eta=float(eta), w=float(w)
        )
        for counts, means, eta, w in states
    ]
    picture = class_states(results)
    want = reference(states)
    assert picture.states == len(states)
    assert picture.unequal == want["unequal"]
    assert picture.edges == want["edges"]
    assert picture.global_counts == want["global"]
    assert picture.rank_mean_counts == want["rank"]
    assert picture.median_global == want["median_g"]
    assert picture.median_rank_mean == want["median_rank"]


def test_no_states_no_bins() -> None:
    picture = class_states([])
    assert (picture.states, picture.edges, picture.global_counts) == (0, (), ())
    assert picture.median_global is None
