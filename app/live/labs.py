"""The class's lab states as the dashboard shows them (``#class-labs``): every student's state
through the engine, the class picture of ``app.engine.class_states``, and its words.

A student's state arrives as the lab's canonical query (validated on the way in by the lab's
own parser, ``service.valid_lab_query``). The dashboard's picture is drawn again at most twice
a second while students drag (app/live/events.py), each time from every state of the class:
the engine's result of a state is kept by its query (:func:`state_result`), so a redraw runs
the engine only for the states that are new since the last.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from urllib.parse import parse_qsl

from app.engine import EngineError, GradientResult
from app.engine.class_states import ClassStates, class_states
from app.lab.compute import gradient
from app.lab.numbers import fmt
from app.lab.query import parse_lab
from app.live.service import Snapshot
from app.live.view import plural

# The cache of results by query: a slider's state is about 60 characters and its result under
# 2 KB; only states of up to CACHED_QUERY_CHARS are kept (a longer one, an items state of many
# targets, is reduced anew on each redraw), so the cache holds at most about
# CACHED_STATES * (2 KB + CACHED_QUERY_CHARS) = 8 MB per worker.
CACHED_STATES = 2048
CACHED_QUERY_CHARS = 2000


def _result(query: str) -> GradientResult | None:
    state = parse_lab(dict(parse_qsl(query))).state
    if state is None:
        return None
    try:
        return gradient(state)
    except EngineError:
        return None


_cached_result = lru_cache(maxsize=CACHED_STATES)(_result)


def state_result(query: str) -> GradientResult | None:
    """The engine's result for a stored state ("" or a state the lab refuses: None)."""
    if not query:
        return None
    return _cached_result(query) if len(query) <= CACHED_QUERY_CHARS else _result(query)


@dataclass(frozen=True, slots=True)
class Bin:
    """One bin of the picture: its range, and per rule its count and bar length (0 to 100)."""

    low: str
    high: str
    global_count: int
    rank_mean_count: int
    global_length: int
    rank_mean_length: int


@dataclass(frozen=True, slots=True)
class ClassLabs:
    """The dashboard's picture of the class's lab states, as text and bar lengths."""

    joined: int
    states: int
    unequal: int
    at_sent: int  # states that are exactly the state sent to everyone
    bins: tuple[Bin, ...]
    median_global: str
    median_rank_mean: str
    words: str  # the sentence under the counts


def _words(picture: ClassStates, joined: int) -> str:
    """The sentence under the counts: who has no state yet, else where the rules differ."""
    if not joined:
        return "No one has joined yet."
    if not picture.states:
        return f"None of the {plural(joined, 'student')} has a lab state yet."
    if picture.unequal == 0:
        return "Every state has equal counts on its ranks: both rules give the same w_new."
    if picture.unequal == picture.states:
        return "Every state has unequal counts on its ranks: there the plain rank mean can miss g."
    if picture.unequal == 1:
        return (
            f"1 of the {picture.states} states has unequal counts on its ranks: there the plain"
            " rank mean can miss g."
        )
    return (
        f"{picture.unequal} of the {picture.states} states have unequal counts on their ranks:"
        " there the plain rank mean can miss g."
    )


def _length(count: int, most: int) -> int:
    return round(100 * count / most) if most else 0


def _text(value: Fraction | None) -> str:
    return fmt(value) if value is not None else ""


def class_labs(snapshot: Snapshot) -> ClassLabs:
    """The picture of the class's lab states now (each student's last state)."""
    results = [
        result
        for student in snapshot.students.values()
        if (result := state_result(student.shared_query)) is not None
    ]
    picture = class_states(results)
    sent = snapshot.lab_query
    at_sent = (
        sum(1 for student in snapshot.students.values() if student.shared_query == sent)
        if sent
        else 0
    )
    most = max((*picture.global_counts, *picture.rank_mean_counts), default=0)
    edges = picture.edges
    bins = tuple(
        Bin(
            low=fmt(edges[k]),
            high=fmt(edges[k + 1]),
            global_count=by_g,
            rank_mean_count=by_rank,
            global_length=_length(by_g, most),
            rank_mean_length=_length(by_rank, most),
        )
        for k, (by_g, by_rank) in enumerate(
            zip(picture.global_counts, picture.rank_mean_counts, strict=True)
        )
    )
    return ClassLabs(
        joined=len(snapshot.students),
        states=picture.states,
        unequal=picture.unequal,
        at_sent=at_sent,
        bins=bins,
        median_global=_text(picture.median_global),
        median_rank_mean=_text(picture.median_rank_mean),
        words=_words(picture, len(snapshot.students)),
    )


def labs_key(snapshot: Snapshot) -> tuple[object, ...]:
    """What the picture depends on: it is drawn again only when this changed."""
    states: Mapping[int, str] = {who: s.shared_query for who, s in snapshot.students.items()}
    return (snapshot.lab_query, tuple(states.items()))
