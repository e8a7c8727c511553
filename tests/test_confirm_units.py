"""The torch-free parts of the confirmation: request to job, assembly, comparison."""

from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from starlette.requests import Request

from app.confirm.check import RELATIVE_TOLERANCE, confirm_response, tolerances
from app.confirm.convert import MAX_UNIT_ITEMS, job_from_request
from app.confirm.jobs import (
    DistributedResult,
    Job,
    Microbatch,
    Outcome,
    RankReport,
    ReductionReport,
    Reference,
    assemble,
)
from app.confirm.pool import process_gone
from app.engine import EngineError
from app.lab.state import GradientRequest
from app.main import create_app
from app.routes.confirm import client_key
from app.settings import Settings

LESSON_BODY = {"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10}


def lesson_means() -> GradientRequest:
    return GradientRequest(counts=[2, 6], means=[1, 3], eta=0.1, w=10)


def test_means_become_unit_items_with_target_w_minus_mean() -> None:
    job, notes = job_from_request(lesson_means())
    assert [[batch.targets for batch in rank] for rank in job.ranks] == [[[9.0] * 2], [[7.0] * 6]]
    assert [job.rank_count(r) for r in range(2)] == [2.0, 6.0]
    assert "nᵣ items of weight 1" in notes[0]


def test_fractional_counts_become_one_weighted_item_per_rank() -> None:
    request = GradientRequest(counts=[2.5, 0, 6], means=[1, 4, 3], eta=0.1, w=10)
    job, notes = job_from_request(request)
    assert job.ranks[0] == [Microbatch(targets=[9.0], weights=[2.5])]
    assert job.ranks[1] == [Microbatch(targets=[], weights=[])]
    assert job.rank_count(2) == 6.0
    assert "not all whole numbers" in notes[0]


def test_huge_whole_counts_become_weighted_items() -> None:
    request = GradientRequest(counts=[MAX_UNIT_ITEMS, 1], means=[1, 3], eta=0.1, w=10)
    job, notes = job_from_request(request)
    assert job.ranks[0][0].weights == [float(MAX_UNIT_ITEMS)]
    assert "more than" in notes[0]


def test_items_keep_weights_and_note_that_steps_stay_with_the_engine() -> None:
    request = GradientRequest(
        targets=[[9, 9], [7, 0]], weights=[[1, 1], [1, 0]], eta=0.1, w=10, steps=5
    )
    job, notes = job_from_request(request)
    assert job.ranks[1] == [Microbatch(targets=[7.0, 0.0], weights=[1.0, 0.0])]
    assert not job.accumulation
    assert "one update" in notes[0]


def test_accumulation_keeps_each_ranks_microbatches() -> None:
    request = GradientRequest(microbatches=[[[9, 9], [7]], [[]]], eta=0.1, w=10)
    job, _ = job_from_request(request)
    assert job.accumulation
    assert [len(rank) for rank in job.ranks] == [2, 1]
    assert job.rank_count(0) == 3.0
    assert job.rank_count(1) == 0.0


def test_more_ranks_than_the_pool_is_refused_naming_the_field() -> None:
    request = GradientRequest(targets=[[1]] * 9, eta=0.1, w=10)
    with pytest.raises(EngineError) as caught:
        job_from_request(request, max_ranks=8)
    assert caught.value.field == "targets"
    assert "1 to 8 ranks" in caught.value.message


def report(rank: int, grads: dict[str, float], eta: float = 0.1, w: float = 10.0) -> RankReport:
    runs = {reduction: ReductionReport(grad=g, w_new=w - eta * g) for reduction, g in grads.items()}
    return RankReport(
        rank=rank,
        count=[2.0, 6.0][rank],
        total=8.0,
        runs=runs,  # type: ignore[arg-type]
        reference=Reference(grad=2.5, w_new=9.75) if rank == 0 else None,
    )


def outcome(result: DistributedResult) -> Outcome:
    return Outcome(result=result, elapsed_ms=5.0, attempts=1)


def test_assemble_orders_ranks_and_needs_every_one() -> None:
    job, _ = job_from_request(lesson_means())
    reductions = {"ddp_default": 2.0, "compensated": 2.5, "comm_hook": 2.5}
    result = assemble(job, [report(1, reductions), report(0, reductions)], "2.13.0")
    assert result.counts == [2.0, 6.0]
    assert result.ddp_default.grad == [2.0, 2.0]
    with pytest.raises(ValueError, match="one report per rank"):
        assemble(job, [report(0, reductions)], "2.13.0")


def test_comparison_flags_the_rank_mean_and_a_disagreeing_replica() -> None:
    request = lesson_means()
    job, notes = job_from_request(request)
    good = {"ddp_default": 2.0, "compensated": 2.5, "comm_hook": 2.5}
    result = assemble(job, [report(0, good), report(1, good)], "2.13.0")
    checked = confirm_response(job, outcome(result), notes)
    assert checked.engine_agrees
    assert checked.replicas_agree
    assert checked.ddp_default.objective == "rank mean"
    assert checked.ddp_default.matches_engine
    assert not checked.ddp_default.matches_reference
    assert checked.compensated.matches_reference
    assert checked.comm_hook.matches_reference

    skewed = {**good, "comm_hook": 2.5000001}
    result = assemble(job, [report(0, good), report(1, skewed)], "2.13.0")
    checked = confirm_response(job, outcome(result), notes)
    assert not checked.comm_hook.replicas_agree
    assert not checked.replicas_agree
    assert not checked.comm_hook.matches_engine
    assert not checked.engine_agrees


def test_tolerance_follows_the_largest_item_gradient_not_w() -> None:
    job = Job(
        ranks=[[Microbatch(targets=[1e12 - 3, 1e12 + 2, 5], weights=[1, 1, 0])]],
        eta=0.1,
        w=1e12,
        form="items",
    )
    within = tolerances(job)
    assert within.scale == 3  # |w - y| of the weighted items; the masked one does not count
    assert within.gradient == RELATIVE_TOLERANCE * 3


def test_process_gone_for_a_pid_that_does_not_exist() -> None:
    assert process_gone(2**22 + 12345)


@pytest.mark.parametrize("unusable", ["a file in the way", "a socket path too long"])
def test_unusable_runtime_folder_is_a_503_that_names_the_setting(
    tmp_path: Path, unusable: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "pool" if unusable == "a file in the way" else tmp_path / ("x" * 100)
    settings = Settings(confirm_runtime_dir=folder)
    with TestClient(create_app(settings)) as client:
        response = client.post("/api/confirm", json=LESSON_BODY)
        assert response.status_code == 503
        assert "ATLAS_CONFIRM_RUNTIME_DIR" in response.json()["detail"]
        if unusable == "a socket path too long":
            assert "too long" in response.json()["detail"]
        assert client.get("/healthz").status_code == 200
        assert client.post("/api/gradient", json=LESSON_BODY).status_code == 200


def test_turned_off_by_setting_the_page_shows_why_instead_of_the_button() -> None:
    with TestClient(create_app(Settings(confirm_enabled=False))) as client:
        response = client.post("/api/confirm", json=LESSON_BODY)
        assert response.status_code == 503
        assert "ATLAS_CONFIRM_ENABLED=false" in response.json()["detail"]
        panel = BeautifulSoup(client.get("/").text, "html.parser").select_one("#confirm")
        assert panel is not None
        assert "ATLAS_CONFIRM_ENABLED=false" in panel.select_one(".confirm-off").text
        assert panel.select_one("button") is None
        status = client.get("/api/confirm/status").json()
        assert status["state"] == "unavailable"
        assert status["role"] == "off"


def test_a_right_gradient_with_a_wrong_w_new_is_refused_at_a_large_w() -> None:
    # At w = 1e12 a tolerance relative to w (1e-9 · w = 1000) would pass a w_new off by a whole
    # step η·g = 0.25; the step's own tolerance (η·1e-9·|w - y| plus a few ulps of w) does not.
    w = 1e12
    request = GradientRequest(counts=[2, 6], means=[1, 3], eta=0.1, w=w)
    job, notes = job_from_request(request)
    good = {"ddp_default": 2.0, "compensated": 2.5, "comm_hook": 2.5}
    reports = [report(rank, good, w=w) for rank in (0, 1)]
    for rank_report in reports:
        if rank_report.reference is not None:
            rank_report.reference.w_new = w - 0.25
    right = assemble(job, reports, "2.13.0")
    checked = confirm_response(job, outcome(right), notes)
    assert checked.comm_hook.engine_w_new == w - 0.25
    assert checked.comm_hook.matches_engine
    assert checked.engine_agrees

    for rank_report in reports:  # the right gradient, but w_new a whole step short
        rank_report.runs["comm_hook"].w_new = w - 0.5
    wrong = assemble(job, reports, "2.13.0")
    checked = confirm_response(job, outcome(wrong), notes)
    assert checked.comm_hook.grad == [2.5, 2.5]
    assert checked.comm_hook.replicas_agree
    assert not checked.comm_hook.matches_engine
    assert not checked.comm_hook.matches_reference
    assert not checked.engine_agrees


def test_the_queue_knows_a_client_by_its_participant_else_its_address() -> None:
    def request(client: tuple[str, int] | None, **state: object) -> Request:
        return Request({"type": "http", "client": client, "headers": [], "state": state})

    assert client_key(request(("10.0.0.5", 4000))) == "address:10.0.0.5"
    # Students behind one NAT address are told apart once the live class names them.
    assert client_key(request(("10.0.0.5", 4001), participant=17)) == "participant:17"
    assert client_key(request(("10.0.0.5", 4002), participant=18)) == "participant:18"
    assert client_key(request(None)) == "address:"
