"""The lab's state in a URL: parse and validate the query string, and write it back canonically.

Query syntax (documented in the README and on the page):

- counts-and-means form: ``counts=2,6&means=1,3&eta=0.1&w=10`` — one value per rank, ranks in
  order from rank 0, separated by commas.
- items form: ``targets=9,9;7,7,7,7,7,7&weights=1,1;1,1,1,1,1,0&eta=0.1&w=10&steps=30`` — ranks
  separated by ``;``, a rank's items by ``,``. ``weights`` is optional (every item weighs 1);
  a blank rank in ``weights`` also means all ones. An empty rank is an empty segment
  (``targets=9,9;``).
- ring all-reduce panel: ``ring_mb``, ``ring_p``, ``ring_us``, ``ring_gbps`` (payload in MB = 10⁶
  bytes, ranks, start-up latency alpha in µs, bandwidth in GB/s = 10⁹ bytes/s).

A plain HTML form sends one parameter per rank (``counts=2&counts=6``); that is accepted too, and
``P`` (when it differs from the number of ranks sent) adds ranks with default values or drops the
last ones. Nothing is clamped: a value out of range is an error that names its field.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal
from urllib.parse import urlencode

MAX_RANKS = 8
MAX_COUNT = 64.0
MAX_ITEMS = 64
MAX_ABS_VALUE = 1e6
MAX_ETA = 10.0
MAX_STEPS = 1000
DEFAULT_STEPS = 30
NEW_RANK_COUNT = "4"
NEW_RANK_MEAN = "2"
NEW_RANK_TARGETS = "8,8,8,8"

Mode = Literal["means", "items"]


@dataclass(frozen=True, slots=True)
class Bounds:
    """The accepted range of one number; ``low_open`` excludes ``low`` itself."""

    low: float
    high: float
    low_open: bool = False

    def __str__(self) -> str:
        low, high = format_number(self.low), format_number(self.high)
        if self.low_open:
            return f"greater than {low} and at most {high}"
        return f"from {low} to {high}"

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high


COUNT = Bounds(0.0, MAX_COUNT)
VALUE = Bounds(-MAX_ABS_VALUE, MAX_ABS_VALUE)
ETA = Bounds(0.0, MAX_ETA, low_open=True)
PAYLOAD_MB = Bounds(0.0, 1e6, low_open=True)
ALPHA_US = Bounds(0.0, 1e6)
BANDWIDTH_GBPS = Bounds(0.0, 1e4, low_open=True)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one input: the query parameter, the control it belongs to, a message."""

    param: str
    input_id: str
    message: str


@dataclass(frozen=True, slots=True)
class RankInput:
    """One rank's raw inputs as typed: count and mean, or targets and weights."""

    first: str
    second: str


@dataclass(frozen=True, slots=True)
class LabForm:
    """The lab's inputs exactly as received, so the form shows what the student typed."""

    mode: Mode
    ranks: tuple[RankInput, ...]
    eta: str
    w: str
    steps: str


@dataclass(frozen=True, slots=True)
class MeansState:
    """Validated counts-and-means state."""

    counts: tuple[float, ...]
    means: tuple[float, ...]
    eta: float
    w: float


@dataclass(frozen=True, slots=True)
class ItemsState:
    """Validated items state: per-rank targets and optional per-item weights."""

    targets: tuple[tuple[float, ...], ...]
    weights: tuple[tuple[float, ...], ...] | None
    eta: float
    w: float
    steps: int


LabState = MeansState | ItemsState


@dataclass(frozen=True, slots=True)
class ParsedLab:
    """The form as typed, the validated state (None when invalid), and every error found."""

    form: LabForm
    state: LabState | None
    errors: tuple[FieldError, ...]
    resized: bool = False


@dataclass(frozen=True, slots=True)
class RingForm:
    payload_mb: str
    ranks: str
    alpha_us: str
    bandwidth_gbps: str


@dataclass(frozen=True, slots=True)
class RingState:
    payload_mb: float
    ranks: int
    alpha_us: float
    bandwidth_gbps: float


@dataclass(frozen=True, slots=True)
class ParsedRing:
    form: RingForm
    state: RingState | None
    errors: tuple[FieldError, ...]


LESSON_MEANS = LabForm("means", (RankInput("2", "1"), RankInput("6", "3")), "0.1", "10", "")
LESSON_ITEMS = LabForm(
    "items", (RankInput("9,9", ""), RankInput("7,7,7,7,7,7", "")), "0.1", "10", str(DEFAULT_STEPS)
)
RING_DEFAULT = RingForm(payload_mb="100", ranks="8", alpha_us="10", bandwidth_gbps="10")
RING_DEFAULT_STATE = RingState(payload_mb=100.0, ranks=8, alpha_us=10.0, bandwidth_gbps=10.0)
RING_PARAMS = ("ring_mb", "ring_p", "ring_us", "ring_gbps")


def _values(query: Mapping[str, str], name: str) -> list[str]:
    getlist = getattr(query, "getlist", None)
    if getlist is not None:
        return [str(v) for v in getlist(name)]
    return [query[name]] if name in query else []


def _split(values: Sequence[str], sep: str) -> list[str]:
    """One entry per rank: a single value holds every rank separated by ``sep``."""
    if len(values) == 1:
        return [part.strip() for part in values[0].split(sep)]
    return [value.strip() for value in values]


def _first(query: Mapping[str, str], name: str, default: str) -> str:
    values = _values(query, name)
    return values[-1].strip() if values else default


def format_number(value: float) -> str:
    """Shortest text that reads back as the same float; integers without a decimal point."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


# ---- reading the query into a form -------------------------------------------------------------


def _mismatch(param: str, input_id: str, got: int, want: int, what: str) -> FieldError:
    return FieldError(param, input_id, f"{param}: {got} for {want} ranks; give one {what} per rank")


def read_lab_form(query: Mapping[str, str]) -> tuple[LabForm, list[FieldError], bool]:
    """The raw form from a query, shape errors (lengths, ``P``), and whether ``P`` resized it."""
    mode: Mode = "items" if "targets" in query else "means"
    has_state = any(name in query for name in ("counts", "means", "targets", "weights"))
    base = LESSON_ITEMS if mode == "items" else LESSON_MEANS
    errors: list[FieldError] = []
    steps = base.steps
    if mode == "items":
        targets = _split(_values(query, "targets"), ";")
        weights = _split(_values(query, "weights"), ";") if "weights" in query else []
        if weights and len(weights) != len(targets):
            errors.append(
                _mismatch("weights", "lab-weights-0", len(weights), len(targets), "weight list")
            )
        ranks = tuple(
            RankInput(t, weights[i] if i < len(weights) else "") for i, t in enumerate(targets)
        )
        steps = _first(query, "steps", base.steps)
    elif has_state:
        counts = _split(_values(query, "counts"), ",") if "counts" in query else []
        means = _split(_values(query, "means"), ",") if "means" in query else []
        if len(means) != len(counts):
            errors.append(_mismatch("means", "lab-mean-0", len(means), len(counts), "mean"))
        width = max(len(counts), len(means))
        ranks = tuple(
            RankInput(counts[i] if i < len(counts) else "", means[i] if i < len(means) else "")
            for i in range(width)
        )
    else:
        ranks = base.ranks
    form = LabForm(
        mode=mode,
        ranks=ranks,
        eta=_first(query, "eta", base.eta),
        w=_first(query, "w", base.w),
        steps=steps if mode == "items" else "",
    )
    if "P" not in query:
        return form, errors, False
    try:
        p = int(_first(query, "P", ""))
    except ValueError:
        p = 0
    if not 1 <= p <= MAX_RANKS:
        message = f"P (number of ranks) must be a whole number from 1 to {MAX_RANKS}"
        return form, [*errors, FieldError("P", "lab-P", message)], False
    if p == len(form.ranks):
        return form, errors, False
    if mode == "items":
        new_rank = RankInput(NEW_RANK_TARGETS, "")
    else:
        new_rank = RankInput(NEW_RANK_COUNT, NEW_RANK_MEAN)
    ranks = form.ranks[:p] + (new_rank,) * max(0, p - len(form.ranks))
    return replace(form, ranks=ranks), errors, True


# ---- validation --------------------------------------------------------------------------------


@dataclass
class _Checker:
    errors: list[FieldError] = field(default_factory=list)

    def number(self, raw: str, param: str, input_id: str, label: str, bounds: Bounds) -> float:
        """Parse one finite number within ``bounds``, or record an error naming ``label``."""
        problem = ""
        value = math.nan
        if raw == "":
            problem = f"enter a number {bounds}"
        else:
            try:
                value = float(raw)
            except ValueError:
                problem = f"“{raw[:40]}” is not a number; enter a number {bounds}"
            else:
                if not math.isfinite(value):
                    problem = f"must be a finite number {bounds}"
                elif value not in bounds:
                    problem = f"must be {bounds}, not {raw[:40]}"
        if problem:
            self.errors.append(FieldError(param, input_id, f"{label}: {problem}"))
            return math.nan
        return value

    def whole(self, raw: str, param: str, input_id: str, label: str, low: int, high: int) -> int:
        """Parse one whole number from ``low`` to ``high``, or record an error naming ``label``."""
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            message = f"{label}: must be a whole number from {low} to {high}, not {raw[:40]!r}"
            self.errors.append(FieldError(param, input_id, message))
        return value

    def number_list(
        self, raw: str, param: str, input_id: str, label: str, bounds: Bounds
    ) -> tuple[float, ...]:
        """Comma-separated numbers (none for a blank), each within ``bounds``."""
        if raw == "":
            return ()
        parts = [part.strip() for part in raw.split(",")]
        if len(parts) > 1 and parts[-1] == "":
            # "9, 9," is a list being typed, not an item left blank.
            parts.pop()
        before = len(self.errors)
        values = tuple(
            self.number(part, param, input_id, f"{label}, item {i + 1}", bounds)
            for i, part in enumerate(parts)
        )
        # One message per list is enough to find the typo; keep the first.
        del self.errors[before + 1 :]
        if len(values) > MAX_ITEMS:
            self.errors.append(
                FieldError(
                    param, input_id, f"{label}: at most {MAX_ITEMS} items (got {len(values)})"
                )
            )
        return values


def _rank_count_error(form: LabForm) -> FieldError | None:
    if 1 <= len(form.ranks) <= MAX_RANKS:
        return None
    param = "targets" if form.mode == "items" else "counts"
    message = f"P (number of ranks) must be 1 to {MAX_RANKS}; the query gives {len(form.ranks)}"
    return FieldError(param, "lab-P", message)


def _check_means(form: LabForm, check: _Checker) -> tuple[tuple[float, ...], tuple[float, ...]]:
    counts, means = [], []
    for r, rank in enumerate(form.ranks):
        counts.append(
            check.number(rank.first, "counts", f"lab-count-{r}", f"rank {r} count", COUNT)
        )
        means.append(check.number(rank.second, "means", f"lab-mean-{r}", f"rank {r} mean", VALUE))
    return tuple(counts), tuple(means)


def _check_items(
    form: LabForm, check: _Checker
) -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...] | None]:
    targets, weights = [], []
    for r, rank in enumerate(form.ranks):
        ys = check.number_list(
            rank.first, "targets", f"lab-targets-{r}", f"rank {r} targets", VALUE
        )
        targets.append(ys)
        if rank.second == "":
            weights.append(tuple(1.0 for _ in ys))
            continue
        ws = check.number_list(
            rank.second, "weights", f"lab-weights-{r}", f"rank {r} weights", COUNT
        )
        if len(ws) != len(ys):
            message = (
                f"rank {r} weights: {len(ws)} weights for {len(ys)} targets"
                " (one per item, or leave blank for all 1)"
            )
            check.errors.append(FieldError("weights", f"lab-weights-{r}", message))
        weights.append(ws)
    any_weights = any(rank.second != "" for rank in form.ranks)
    return tuple(targets), tuple(weights) if any_weights else None


def validate_lab(form: LabForm) -> tuple[LabState | None, tuple[FieldError, ...]]:
    """The validated state, or every error found, in form order, each naming its field."""
    check = _Checker()
    shape = _rank_count_error(form)
    if shape is not None:
        check.errors.append(shape)
    # Checked in the order the form shows them, so the messages read top to bottom.
    if form.mode == "means":
        counts, means = _check_means(form, check)
    else:
        targets, weights = _check_items(form, check)
    eta = check.number(form.eta, "eta", "lab-eta", "η (learning rate)", ETA)
    w = check.number(form.w, "w", "lab-w", "w (parameter)", VALUE)
    state: LabState
    if form.mode == "means":
        state = MeansState(counts, means, eta, w)
    else:
        steps = check.whole(form.steps, "steps", "lab-steps", "steps", 1, MAX_STEPS)
        state = ItemsState(targets, weights, eta, w, steps)
    if check.errors:
        return None, tuple(check.errors)
    return state, ()


def parse_lab(query: Mapping[str, str]) -> ParsedLab:
    """Read and validate the lab part of a query string."""
    form, shape_errors, resized = read_lab_form(query)
    state, errors = validate_lab(form)
    if shape_errors:
        return ParsedLab(form, None, (*shape_errors, *errors), resized)
    return ParsedLab(form, state, errors, resized)


# ---- writing the state back --------------------------------------------------------------------


def _join(values: Sequence[float]) -> str:
    return ",".join(format_number(v) for v in values)


def lab_query_pairs(state: LabState) -> list[tuple[str, str]]:
    """The canonical query parameters of a lab state, in a fixed order."""
    if isinstance(state, MeansState):
        return [
            ("counts", _join(state.counts)),
            ("means", _join(state.means)),
            ("eta", format_number(state.eta)),
            ("w", format_number(state.w)),
        ]
    pairs = [("targets", ";".join(_join(ys) for ys in state.targets))]
    if state.weights is not None:
        pairs.append(("weights", ";".join(_join(ws) for ws in state.weights)))
    pairs += [
        ("eta", format_number(state.eta)),
        ("w", format_number(state.w)),
        ("steps", str(state.steps)),
    ]
    return pairs


def encode(pairs: Sequence[tuple[str, str]]) -> str:
    """URL-encode, keeping the separators ``,`` and ``;`` readable."""
    return urlencode(pairs, safe=",;")


# ---- the ring all-reduce panel -----------------------------------------------------------------


def parse_ring(query: Mapping[str, str]) -> ParsedRing:
    """Read and validate the ring all-reduce panel's part of a query string."""
    form = RingForm(
        payload_mb=_first(query, "ring_mb", RING_DEFAULT.payload_mb),
        ranks=_first(query, "ring_p", RING_DEFAULT.ranks),
        alpha_us=_first(query, "ring_us", RING_DEFAULT.alpha_us),
        bandwidth_gbps=_first(query, "ring_gbps", RING_DEFAULT.bandwidth_gbps),
    )
    check = _Checker()
    payload = check.number(form.payload_mb, "ring_mb", "ring-mb", "payload S (MB)", PAYLOAD_MB)
    ranks = check.whole(form.ranks, "ring_p", "ring-p", "ranks P", 2, 4096)
    alpha = check.number(
        form.alpha_us, "ring_us", "ring-us", "start-up \N{GREEK SMALL LETTER ALPHA} (µs)", ALPHA_US
    )
    bandwidth = check.number(
        form.bandwidth_gbps, "ring_gbps", "ring-gbps", "bandwidth B (GB/s)", BANDWIDTH_GBPS
    )
    if check.errors:
        return ParsedRing(form, None, tuple(check.errors))
    return ParsedRing(form, RingState(payload, ranks, alpha, bandwidth), ())


def ring_query_pairs(state: RingState) -> list[tuple[str, str]]:
    """The ring panel's canonical parameters, left out entirely when they are the defaults."""
    if state == RING_DEFAULT_STATE:
        return []
    values = (state.payload_mb, state.ranks, state.alpha_us, state.bandwidth_gbps)
    return [(name, format_number(v)) for name, v in zip(RING_PARAMS, values, strict=True)]
