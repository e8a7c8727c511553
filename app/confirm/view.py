"""The confirmation panel's view-model: a ConfirmResponse as display strings. No torch."""

from dataclasses import dataclass

from app.confirm.check import ConfirmResponse, RunCheck
from app.lab.view import fmt

RUN_LABELS = {
    "ddp_default": ("DDP default", "local mean loss; DDP averages over P ranks"),
    "compensated": ("Compensated", "local mean · P·nᵣ/N, then DDP's average"),
    "comm_hook": ("Comm hook", "local sum; the hook all-reduces and divides by N"),
}


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as a table row: per-rank values, the engine's value and the two verdicts."""

    key: str
    label: str
    how: str
    objective: str
    grads: tuple[str, ...]
    w_news: tuple[str, ...]
    engine_grad: str
    engine_w_new: str
    replicas_agree: bool
    matches_reference: bool
    matches_engine: bool


@dataclass(frozen=True, slots=True)
class ConfirmView:
    """What ``_confirm.html`` shows: the result, or why there is none."""

    ranks: tuple[int, ...] = ()
    runs: tuple[RunRow, ...] = ()
    reference_grad: str = ""
    reference_w_new: str = ""
    counts: tuple[str, ...] = ()
    total: str = ""
    torch_version: str = ""
    elapsed: str = ""
    cached: bool = False
    retried: bool = False
    replicas_agree: bool = False
    engine_agrees: bool = False
    notes: tuple[str, ...] = ()
    error: str = ""
    retry_after: int | None = None

    @property
    def done(self) -> bool:
        return bool(self.runs)


def _row(key: str, run: RunCheck) -> RunRow:
    label, how = RUN_LABELS[key]
    return RunRow(
        key=key,
        label=label,
        how=how,
        objective=run.objective,
        grads=tuple(fmt(g, 12) for g in run.grad),
        w_news=tuple(fmt(x, 12) for x in run.w_new),
        engine_grad=fmt(run.engine_grad, 12),
        engine_w_new=fmt(run.engine_w_new, 12),
        replicas_agree=run.replicas_agree,
        matches_reference=run.matches_reference,
        matches_engine=run.matches_engine,
    )


def confirm_view(result: ConfirmResponse) -> ConfirmView:
    """Format a finished confirmation for the panel."""
    return ConfirmView(
        ranks=tuple(range(result.world_size)),
        runs=(
            _row("ddp_default", result.ddp_default),
            _row("compensated", result.compensated),
            _row("comm_hook", result.comm_hook),
        ),
        reference_grad=fmt(result.reference.grad, 12),
        reference_w_new=fmt(result.reference.w_new, 12),
        counts=tuple(fmt(n) for n in result.counts),
        total=fmt(result.total),
        torch_version=result.torch_version,
        elapsed=f"{result.elapsed_ms:.0f} ms" if result.elapsed_ms >= 1 else "under 1 ms",
        cached=result.cached,
        retried=result.attempts > 1,
        replicas_agree=result.replicas_agree,
        engine_agrees=result.engine_agrees,
        notes=tuple(result.notes),
    )
