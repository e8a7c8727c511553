"""The lab's state in a URL or a form: read the text as typed, validate it with the state model
(``app.lab.state``, the same model as the JSON API), and write a valid state back canonically.

The syntax is docs/page.md's: ``counts=2,6&means=1,3`` (ranks by ``,``) or
``targets=9,9;7,7&weights=1,1;1,0`` (ranks by ``;``, items by ``,``; an empty segment is an empty
rank, a blank rank of weights all ones), and the ring panel's ``ring_mb``, ``ring_p``,
``ring_us``, ``ring_gbps``. A plain HTML form sends one parameter per rank
(``counts=2&counts=6``), and ``P`` adds ranks with default values or drops the last ones. Only
text is read here: every limit is the model's, and nothing is clamped (a value out of range is an
error that names its field).
"""

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple
from urllib.parse import urlencode

from pydantic import ValidationError

from app.lab.fields import FieldError, input_id, label, validation_errors
from app.lab.state import MAX_ITEMS, MAX_RANKS, GradientRequest, RingRequest

DEFAULT_STEPS = 30
NEW_RANK_COUNT = "4"
NEW_RANK_MEAN = "2"
NEW_RANK_TARGETS = "8,8,8,8"

# Which of the lab's two forms the inputs fill: counts and means, or items and weights.
FormKind = Literal["means", "items"]


class LabForm(NamedTuple):
    """The lab's inputs exactly as received, so the form shows what the student typed."""

    kind: FormKind
    # Per rank, as typed: its count (means form) or targets (items form) ...
    counts_or_targets: tuple[str, ...]
    # ... and its mean or weights.
    means_or_weights: tuple[str, ...]
    eta: str
    w: str
    steps: str
    # How many ranks' weights the query gave (0: none). A blank one means all 1; a missing one
    # goes to the model as missing, which names the mismatch.
    weight_ranks: int = 0


class ParsedLab(NamedTuple):
    """The form as typed, the validated state (None when invalid), and every error found."""

    form: LabForm
    state: GradientRequest | None
    errors: tuple[FieldError, ...]
    resized: bool = False


class RingForm(NamedTuple):
    payload_mb: str
    ranks: str
    alpha_us: str
    bandwidth_gbps: str


class ParsedRing(NamedTuple):
    form: RingForm
    state: RingRequest | None
    errors: tuple[FieldError, ...]


LESSON_MEANS = LabForm("means", ("2", "6"), ("1", "3"), "0.1", "10", "")
LESSON_ITEMS = LabForm("items", ("9,9", "7,7,7,7,7,7"), ("", ""), "0.1", "10", str(DEFAULT_STEPS))
RING_DEFAULT = RingForm(payload_mb="100", ranks="8", alpha_us="10", bandwidth_gbps="10")
RING_PARAMS = ("ring_mb", "ring_p", "ring_us", "ring_gbps")


Params = dict[str, list[str]]


def params_of(query: Mapping[str, str]) -> Params:
    """Every parameter's values in order (a form or query can repeat a name), in one pass."""
    multi_items = getattr(query, "multi_items", None)
    params: Params = {}
    for name, value in multi_items() if multi_items is not None else query.items():
        params.setdefault(name, []).append(str(value))
    return params


def _split(values: Sequence[str], sep: str) -> list[str]:
    """One entry per rank: a single value holds every rank separated by ``sep``."""
    if len(values) == 1:
        return [part.strip() for part in values[0].split(sep)]
    return [value.strip() for value in values]


def last(params: Params, name: str, default: str) -> str:
    values = params.get(name)
    return values[-1].strip() if values else default


def format_number(value: float) -> str:
    """Shortest text that reads back as the same float; integers without a decimal point."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


# ---- text into the model's input ---------------------------------------------------------------
# A number that does not parse stays text: the model refuses it at its place, naming the field.


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _whole(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _number_list(text: str) -> list[float | str]:
    """Comma-separated numbers (none for a blank); ``9, 9,`` is a list being typed."""
    if text == "":
        return []
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return [_number(part) for part in parts]


def lab_input(form: LabForm) -> dict[str, Any]:
    """The form's text as the state model's input (what a JSON body would hold)."""
    common = {"eta": _number(form.eta), "w": _number(form.w)}
    if form.kind == "means":
        return {
            "counts": [_number(text) for text in form.counts_or_targets],
            "means": [_number(text) for text in form.means_or_weights],
            **common,
        }
    targets = [_number_list(text) for text in form.counts_or_targets]
    weights = None
    if form.weight_ranks or any(text != "" for text in form.means_or_weights):
        # A blank rank in ``weights`` means every item of that rank weighs 1.
        weights = [
            _number_list(text) if text != "" else [1.0] * len(ys)
            for text, ys in zip(form.means_or_weights, targets, strict=True)
        ][: form.weight_ranks or None]
    return {"targets": targets, "weights": weights, "steps": _whole(form.steps), **common}


# ---- reading the query into a form -------------------------------------------------------------


# An oversized state is not shown back (it is not even split): the form holds the lesson's example.
SHOWN_INSTEAD = " (the form shows the lesson's example instead)"
# Per-rank parameters and what separates their ranks (and, for item lists, their items).
RANK_SEPARATORS = {"counts": ",", "means": ",", "targets": ";", "weights": ";"}


def _item_count(text: str) -> int:
    """How many items ``_number_list`` reads from one rank's text, without splitting it."""
    text = text.strip()
    if not text:
        return 0
    return text.count(",") + (0 if text.endswith(",") else 1)


def _oversized(params: Params) -> FieldError | None:
    for name, separator in RANK_SEPARATORS.items():
        values = params.get(name)
        if not values:
            continue
        ranks = len(values) if len(values) > 1 else values[0].count(separator) + 1
        if ranks > MAX_RANKS:
            message = f"at most {MAX_RANKS} ranks; the request gives {ranks}{SHOWN_INSTEAD}"
            return FieldError(name, input_id(name), f"{label(name)}: {message}")
        if separator == ";":
            # At most MAX_RANKS segments now: counting per rank is cheap and exact.
            segments = values if len(values) > 1 else values[0].split(separator)
            items = sum(_item_count(segment) for segment in segments)
            if items > MAX_ITEMS:
                message = (
                    f"at most {MAX_ITEMS} items in all; the request gives {items}{SHOWN_INSTEAD}"
                )
                return FieldError(name, input_id(name), f"{label(name)}: {message}")
    return None


def _read_lab_form(params: Params) -> tuple[LabForm, list[FieldError], bool]:
    """The raw form from a query, a ``P`` error if any, and whether ``P`` resized it.

    A state with more ranks or items than the model takes reads as the lesson's example with
    the error: what was sent is neither split nor shown.
    """
    too_large = _oversized(params)
    if too_large is not None:
        base = LESSON_ITEMS if too_large.param in ("targets", "weights") else LESSON_MEANS
        return base, [too_large], False
    kind: FormKind = "items" if "targets" in params else "means"
    base = LESSON_ITEMS if kind == "items" else LESSON_MEANS
    if params.keys().isdisjoint(RANK_SEPARATORS):  # no rank given: the lesson's
        ranks = [list(base.counts_or_targets), list(base.means_or_weights)]
    else:
        names = ("targets", "weights") if kind == "items" else ("counts", "means")
        ranks = [_split(params.get(name, []), RANK_SEPARATORS[name]) for name in names]
    # One entry per rank in both, a missing one blank (extra weight lists get a rank of no
    # targets, so the model names the mismatch).
    width = max(map(len, ranks))
    form = LabForm(
        kind,
        tuple(ranks[0] + [""] * (width - len(ranks[0]))),
        tuple(ranks[1] + [""] * (width - len(ranks[1]))),
        last(params, "eta", base.eta),
        last(params, "w", base.w),
        last(params, "steps", base.steps) if kind == "items" else base.steps,
        len(ranks[1]) if kind == "items" else 0,
    )
    if "P" not in params:
        return form, [], False
    raw = last(params, "P", "")
    p = _whole(raw)
    if not isinstance(p, int) or not 1 <= p <= MAX_RANKS:
        message = f"{label('P')}: must be a whole number from 1 to {MAX_RANKS}, not {raw[:40]!r}"
        return form, [FieldError("P", input_id("P"), message)], False
    if p == width:
        return form, [], False
    new_count_or_targets, new_mean_or_weights = (
        (NEW_RANK_TARGETS, "") if kind == "items" else (NEW_RANK_COUNT, NEW_RANK_MEAN)
    )
    added = max(0, p - width)
    resized = form._replace(
        counts_or_targets=form.counts_or_targets[:p] + (new_count_or_targets,) * added,
        means_or_weights=form.means_or_weights[:p] + (new_mean_or_weights,) * added,
        weight_ranks=p if form.weight_ranks else 0,
    )
    return resized, [], True


def parse_lab(query: Mapping[str, str]) -> ParsedLab:
    """Read the lab part of a query string (or a form) and validate it with the state model:
    the form as typed, the state, and every error, each naming its field."""
    form, p_errors, resized = _read_lab_form(params_of(query))
    try:
        state = GradientRequest.model_validate(lab_input(form))
    except ValidationError as exc:
        return ParsedLab(form, None, (*p_errors, *validation_errors(exc)), resized)
    if p_errors:
        return ParsedLab(form, None, tuple(p_errors), resized)
    return ParsedLab(form, state, (), resized)


# ---- writing the state back --------------------------------------------------------------------


def _join(values: Sequence[float]) -> str:
    return ",".join(map(format_number, values))


def lab_query_pairs(state: GradientRequest) -> list[tuple[str, str]]:
    """The canonical query parameters of a lab state (means or items form), in a fixed order."""
    common = [("eta", format_number(state.eta)), ("w", format_number(state.w))]
    if state.counts is not None:
        return [("counts", _join(state.counts)), ("means", _join(state.means or [])), *common]
    pairs = [("targets", ";".join(_join(ys) for ys in state.targets or []))]
    if state.weights is not None:
        pairs.append(("weights", ";".join(_join(ws) for ws in state.weights)))  # type: ignore[arg-type]
    return [
        *pairs,
        *common,
        ("steps", str(state.steps if state.steps is not None else DEFAULT_STEPS)),
    ]


def encode(pairs: Sequence[tuple[str, str]]) -> str:
    """URL-encode, keeping the separators ``,`` and ``;`` readable."""
    return urlencode(pairs, safe=",;")


# ---- the ring all-reduce panel -----------------------------------------------------------------


def parse_ring(query: Mapping[str, str]) -> ParsedRing:
    """Read and validate the ring all-reduce panel's part of a query string."""
    params = params_of(query)
    defaults = zip(RING_PARAMS, RING_DEFAULT, strict=True)
    form = RingForm(*(last(params, name, default) for name, default in defaults))
    body = {
        name: _whole(text) if name == "ring_p" else _number(text)
        for name, text in zip(RING_PARAMS, form, strict=True)
    }
    try:
        return ParsedRing(form, RingRequest.model_validate(body), ())
    except ValidationError as exc:
        return ParsedRing(form, None, validation_errors(exc))


def ring_query_pairs(state: RingRequest) -> list[tuple[str, str]]:
    """The ring panel's canonical parameters, left out entirely when they are the defaults."""
    values = (state.payload_mb, state.ranks, state.alpha_us, state.bandwidth_gbps)
    texts = tuple(map(format_number, values))
    return [] if texts == RING_DEFAULT else list(zip(RING_PARAMS, texts, strict=True))
