"""Ideal ring all-reduce cost, and what the one extra count reduction for N adds to it."""

from dataclasses import dataclass

from app.engine.checks import finite_results, finite_scalar
from app.engine.errors import EngineError

# N is one float64 scalar: the extra all-reduce that correct normalisation needs carries 8 bytes.
COUNT_PAYLOAD_BYTES = 8.0


@dataclass(frozen=True, slots=True)
class RingCost:
    """Times in seconds for one gradient all-reduce and for the scalar count all-reduce."""

    ranks: int
    payload_bytes: float
    alpha_s: float
    bandwidth_bytes_per_s: float
    communication_steps: int
    bytes_sent_per_rank: float
    time_s: float
    count_reduce_time_s: float
    total_time_s: float
    overhead_ratio: float
    count_latency_share: float


def _ring_time(payload: float, ranks: int, alpha: float, bandwidth: float) -> float:
    return 2 * (ranks - 1) * (alpha + payload / (ranks * bandwidth))


def ring_allreduce(
    payload_bytes: float, ranks: int, alpha_s: float, bandwidth_bytes_per_s: float
) -> RingCost:
    """Ideal ring all-reduce time ``2(P - 1)(alpha + S/(P·B))`` plus the 8-byte count all-reduce.

    Inputs: payload ``S > 0`` bytes per rank, ``P >= 1`` ranks, start-up latency ``alpha >= 0``
    seconds per step, link bandwidth ``B > 0`` bytes per second. The ring runs ``2(P - 1)``
    steps (reduce-scatter, then all-gather), each sending ``S/P`` bytes per rank, so each rank
    sends ``2(P - 1)·S/P`` bytes. Dividing by the global count N needs N first: one more
    all-reduce of ``8`` bytes, ``2(P - 1)(alpha + 8/(P·B))`` seconds, usually all latency.
    ``overhead_ratio`` is that extra time over the gradient all-reduce time (0 for ``P = 1``,
    where nothing is communicated); ``count_latency_share`` the part of it that is latency,
    ``alpha / (alpha + 8/(P·B))``. Bytes and seconds throughout.

    Raises EngineError (naming the argument) for non-finite, non-positive ``S`` or ``B``,
    negative ``alpha``, ``P < 1``, a time or ratio beyond the float range, or a time that rounds
    to 0 s (every derived number is finite).
    """
    payload = finite_scalar("payload_bytes", payload_bytes, positive=True)
    alpha = finite_scalar("alpha_s", alpha_s)
    if alpha < 0:
        raise EngineError("alpha_s", f"alpha_s must not be negative, got {alpha!r}")
    bandwidth = finite_scalar("bandwidth_bytes_per_s", bandwidth_bytes_per_s, positive=True)
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise EngineError("ranks", f"ranks must be a whole number >= 1, got {ranks!r}")
    time_s = _ring_time(payload, ranks, alpha, bandwidth)
    count_time = _ring_time(COUNT_PAYLOAD_BYTES, ranks, alpha, bandwidth)
    if ranks > 1 and time_s == 0:
        # S/(P·B) underflowed with alpha = 0: no time to compare the count reduction with.
        raise EngineError(
            "payload_bytes",
            "payload_bytes is too small for this bandwidth: the all-reduce time rounds to 0 s",
        )
    overhead = count_time / time_s if ranks > 1 else 0.0
    bytes_sent = 2 * (ranks - 1) * payload / ranks
    latency_share = alpha / (alpha + COUNT_PAYLOAD_BYTES / (ranks * bandwidth)) if alpha else 0.0
    # The ratio is shown as a percentage too: that must stay finite as well.
    finite_results(
        "payload_bytes",
        time_s=time_s,
        count_reduce_time_s=count_time,
        total_time_s=time_s + count_time,
        bytes_sent_per_rank=bytes_sent,
        overhead_ratio=overhead,
        overhead_percent=overhead * 100,
    )
    return RingCost(
        ranks=ranks,
        payload_bytes=payload,
        alpha_s=alpha,
        bandwidth_bytes_per_s=bandwidth,
        communication_steps=2 * (ranks - 1),
        bytes_sent_per_rank=bytes_sent,
        time_s=time_s,
        count_reduce_time_s=count_time,
        total_time_s=time_s + count_time,
        overhead_ratio=overhead,
        count_latency_share=latency_share,
    )
