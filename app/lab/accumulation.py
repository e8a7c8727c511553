"""Gradient accumulation in the lab: each rank's items split into M microbatches over one window.

The items form's targets (and weights) are cut into ``M`` contiguous microbatches per rank, as
evenly as they go (a microbatch may be empty when a rank holds fewer than ``M`` items, or only
padding). The engine's ``accumulate`` then compares averaging the microbatch means (then the
ranks) with one count for the whole window.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.engine import AccumulationResult, accumulate
from app.lab.compute import item_lists
from app.lab.fields import FieldError
from app.lab.numbers import fmt
from app.lab.query import last, params_of
from app.lab.sentences import lab_verdict
from app.lab.state import GradientRequest

PARAM = "acc_m"
INPUT_ID = "lab-acc-m"
DEFAULT = 2
LOW, HIGH = 1, 8


def read(query: Mapping[str, str]) -> tuple[str, int | None, FieldError | None]:
    """The microbatches-per-rank field as typed, its value, or the error at the field."""
    if PARAM not in query:
        return str(DEFAULT), DEFAULT, None  # every means-form request
    raw = last(params_of(query), PARAM, str(DEFAULT))
    if not raw.isascii() or not raw.isdigit() or not LOW <= int(raw[:3]) <= HIGH or len(raw) > 3:
        message = f"microbatches per rank M: a whole number from {LOW} to {HIGH}, not {raw[:20]!r}"
        return raw, None, FieldError(PARAM, INPUT_ID, message)
    return raw, int(raw), None


def pairs(m: int) -> list[tuple[str, str]]:
    """The field in a state's address: left out at its default, so the presets stay short."""
    return [] if m == DEFAULT else [(PARAM, str(m))]


def split(values: Sequence[float], m: int) -> list[list[float]]:
    """``values`` in ``m`` contiguous pieces whose lengths differ by at most one."""
    size, extra = divmod(len(values), m)
    pieces, start = [], 0
    for k in range(m):
        stop = start + size + (1 if k < extra else 0)
        pieces.append(list(values[start:stop]))
        start = stop
    return pieces


@dataclass(frozen=True, slots=True)
class AccumulationRow:
    """One rank's window: its microbatch counts and means, and its two rank means."""

    rank: int
    counts: str
    means: str
    naive: str
    window: str


@dataclass(frozen=True, slots=True)
class AccumulationView:
    """The accumulation panel as text: per-rank rows, both gradients, both updates."""

    microbatches: int
    N: str
    rows: tuple[AccumulationRow, ...]
    naive: str
    window: str
    w_new_naive: str
    w_new_window: str
    difference: str
    agree: bool
    verdict: str
    warnings: tuple[str, ...]


def run(state: GradientRequest, m: int) -> AccumulationResult:
    """The engine's accumulation over the state's items, ``m`` microbatches per rank."""
    targets, weights = item_lists(state)
    # The state's weights are nested exactly like its targets (a blank rank typed in the form
    # is all ones by then), so both split alike.
    batches = [split(ys, m) for ys in targets]
    batch_weights = None if weights is None else [split(ws, m) for ws in weights]
    return accumulate(batches, batch_weights, eta=state.eta, w=state.w)


def view(result: AccumulationResult) -> AccumulationView:
    """Display strings for one accumulation result."""

    rows = tuple(
        AccumulationRow(
            rank=r,
            counts=", ".join(map(fmt, result.counts[r])),
            means=", ".join(
                fmt(mean) if n else "—"
                for n, mean in zip(result.counts[r], result.means[r], strict=True)
            ),
            naive=fmt(result.rank_naive_means[r]),
            window=fmt(result.rank_window_means[r]) if result.rank_counts[r] else "—",
        )
        for r in range(result.P)
    )
    return AccumulationView(
        microbatches=max(result.microbatch_counts),
        N=fmt(result.N),
        rows=rows,
        naive=fmt(result.naive_gradient),
        window=fmt(result.window_gradient),
        w_new_naive=fmt(result.w_new_naive),
        w_new_window=fmt(result.w_new_window),
        difference=fmt(result.w_new_difference),
        agree=result.agreement.agree,
        verdict=lab_verdict(result.agreement, microbatches=True),
        warnings=result.warnings,
    )
