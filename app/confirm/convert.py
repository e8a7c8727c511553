"""Any ``/api/gradient`` request as a job of weighted items for the real run. No torch.

- items form: each rank's targets and weights, one microbatch per rank;
- accumulation form: each rank's microbatches as given (weights nested alike);
- means form: rank r becomes nᵣ items of weight 1 with target ``w - ḡᵣ`` (so every item's
  gradient ``w - y`` is ḡᵣ, their mean ḡᵣ and their count nᵣ). A count that is not a whole
  number (a sum of sample weights), or more items than the run builds, becomes ONE item of
  weight nᵣ with that target instead: its weighted mean is still ḡᵣ and its weight sum nᵣ.
"""

from typing import cast

from app.confirm.jobs import MAX_WORLD_SIZE, Job, Microbatch
from app.engine import EngineError
from app.lab.state import GradientRequest

# Counts are expanded into unit items up to this many items in all (the API's item limit).
MAX_UNIT_ITEMS = 10_000


def _batch(targets: list[float], weights: list[float] | None) -> Microbatch:
    return Microbatch(
        targets=targets, weights=weights if weights is not None else [1.0] * len(targets)
    )


def _means_ranks(request: GradientRequest) -> tuple[list[list[Microbatch]], list[str]]:
    counts = request.counts or []
    means = request.means or []
    whole = all(float(n).is_integer() for n in counts)
    if whole and sum(counts) <= MAX_UNIT_ITEMS:
        ranks = [
            [_batch([request.w - mean] * int(n), None)]
            for n, mean in zip(counts, means, strict=True)
        ]
        note = (
            "Each rank r ran as nᵣ items of weight 1 with target w \u2212 ḡᵣ, so its local mean"
            " gradient is ḡᵣ."
        )
        return ranks, [note]
    ranks = [
        [_batch([request.w - mean], [n]) if n > 0 else _batch([], None)]
        for n, mean in zip(counts, means, strict=True)
    ]
    reason = "not all whole numbers" if not whole else f"more than {MAX_UNIT_ITEMS} items in all"
    note = (
        f"The counts are {reason}, so each rank r ran as one item of weight nᵣ with target"
        " w \u2212 ḡᵣ: its weighted mean gradient is ḡᵣ and its weight sum nᵣ."
    )
    return ranks, [note]


def job_from_request(
    request: GradientRequest, max_ranks: int = MAX_WORLD_SIZE
) -> tuple[Job, list[str]]:
    """The job for a validated request, and notes on how it was built. Raises EngineError for
    a request the real run cannot take, naming its field."""
    notes: list[str] = []
    if request.form == "means":
        field = "counts"
        ranks, notes = _means_ranks(request)
    elif request.form == "items":
        field = "targets"
        targets = request.targets or []
        weights = cast(list[list[float]] | None, request.weights)
        ranks = [
            [_batch(list(ys), None if weights is None else list(weights[r]))]
            for r, ys in enumerate(targets)
        ]
        if request.steps is not None:
            notes.append(
                "The real run confirms one update; the trajectory over the steps is the engine's."
            )
    else:
        field = "microbatches"
        microbatches = request.microbatches or []
        nested = cast(list[list[list[float]]] | None, request.weights)
        ranks = [
            [
                _batch(list(ys), None if nested is None else list(nested[r][m]))
                for m, ys in enumerate(batches)
            ]
            for r, batches in enumerate(microbatches)
        ]
    if len(ranks) > max_ranks:
        raise EngineError(
            field,
            f"the real torch.distributed run takes 1 to {max_ranks} ranks; this request has"
            f" {len(ranks)}",
        )
    job = Job(
        ranks=ranks,
        eta=request.eta,
        w=request.w,
        form=request.form,
    )
    return job, notes
