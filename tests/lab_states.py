"""Lab states built directly with the state model, as references for the tests."""

from collections.abc import Sequence
from fractions import Fraction

from app.lab.state import GradientRequest, RingRequest


def as_written(value: float) -> Fraction:
    """A number as the reader sees it written: the shortest decimal that reads back as the
    float (its ``repr``), exactly. The engine's exact results are of the inputs read so."""
    return Fraction(repr(float(value)))


def means_state(
    counts: Sequence[float], means: Sequence[float], eta: float, w: float
) -> GradientRequest:
    """A counts-and-means lab state, as the JSON API would build it."""
    return GradientRequest(counts=list(counts), means=list(means), eta=eta, w=w)


def items_state(
    targets: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]] | None,
    eta: float,
    w: float,
    steps: int,
) -> GradientRequest:
    """An items lab state, as the JSON API would build it."""
    weight_lists = None if weights is None else [list(ws) for ws in weights]
    return GradientRequest(
        targets=[list(ys) for ys in targets], weights=weight_lists, eta=eta, w=w, steps=steps
    )


def ring_state(
    payload_mb: float, ranks: int, alpha_us: float, bandwidth_gbps: float
) -> RingRequest:
    """A ring panel state, by its query parameters."""
    return RingRequest.model_validate(
        {"ring_mb": payload_mb, "ring_p": ranks, "ring_us": alpha_us, "ring_gbps": bandwidth_gbps}
    )
