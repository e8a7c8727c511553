"""The ideal ring all-reduce cost model and the extra count reduction."""

import pytest

from app.engine import COUNT_PAYLOAD_BYTES, EngineError, ring_allreduce


def test_ring_allreduce_formula() -> None:
    cost = ring_allreduce(4e6, 8, 5e-6, 1e10)
    assert cost.communication_steps == 14
    assert cost.time_s == pytest.approx(14 * (5e-6 + 4e6 / (8 * 1e10)))
    assert cost.count_reduce_time_s == pytest.approx(14 * (5e-6 + COUNT_PAYLOAD_BYTES / 8e10))
    assert cost.total_time_s == pytest.approx(cost.time_s + cost.count_reduce_time_s)
    assert cost.overhead_ratio == pytest.approx(cost.count_reduce_time_s / cost.time_s)
    assert cost.bytes_sent_per_rank == pytest.approx(2 * 7 * 4e6 / 8)


def test_ring_allreduce_single_rank_communicates_nothing() -> None:
    cost = ring_allreduce(1e6, 1, 1e-5, 1e9)
    assert cost.time_s == cost.count_reduce_time_s == cost.overhead_ratio == 0.0
    assert cost.communication_steps == 0


def test_ring_allreduce_count_reduce_is_latency_bound() -> None:
    # A large payload: the 8-byte count costs almost exactly the 2(P-1)·alpha latency.
    cost = ring_allreduce(1e9, 64, 1e-5, 1e10)
    assert cost.count_reduce_time_s == pytest.approx(2 * 63 * 1e-5, rel=1e-5)
    assert cost.overhead_ratio < 0.01
    assert cost.count_latency_share == pytest.approx(1e-5 / (1e-5 + 8 / (64 * 1e10)))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((0, 8, 1e-6, 1e9), "payload_bytes"),
        ((float("inf"), 8, 1e-6, 1e9), "payload_bytes"),
        ((1e6, 0, 1e-6, 1e9), "ranks"),
        ((1e6, 2.5, 1e-6, 1e9), "ranks"),
        ((1e6, True, 1e-6, 1e9), "ranks"),
        ((1e6, 8, -1e-6, 1e9), "alpha_s"),
        ((1e6, 8, 1e-6, 0), "bandwidth_bytes_per_s"),
        ((1e308, 8, 1e-6, 1e-300), "payload_bytes"),
    ],
)
def test_ring_allreduce_bad_input_names_field(args: tuple[float, ...], field: str) -> None:
    with pytest.raises(EngineError) as caught:
        ring_allreduce(*args)  # type: ignore[arg-type]
    assert caught.value.field == field
