"""The confirmation panel's view-model: a ConfirmResponse as display strings. No torch."""

from dataclasses import dataclass
from fractions import Fraction

from app.confirm.check import ConfirmResponse, RunCheck
from app.engine.verdicts import Agreement
from app.lab.numbers import MINUS, distinct_digits, fmt, fmt_distinct
from app.lab.sentences import reason

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
    engine_agrees: bool = False
    verdict: str = ""
    tolerance: str = ""
    notes: tuple[str, ...] = ()
    error: str = ""
    retry_after: int | None = None

    @property
    def done(self) -> bool:
        return bool(self.runs)


def _row(key: str, run: RunCheck, grad_digits: int, w_digits: int) -> RunRow:
    label, how = RUN_LABELS[key]
    return RunRow(
        key=key,
        label=label,
        how=how,
        objective=run.objective,
        grads=tuple(fmt(g, grad_digits) for g in run.grad),
        w_news=tuple(fmt(x, w_digits) for x in run.w_new),
        engine_grad=fmt(run.engine_grad, grad_digits),
        engine_w_new=fmt(run.engine_w_new, w_digits),
        replicas_agree=run.replicas_agree,
        matches_reference=run.matches_reference,
        matches_engine=run.matches_engine,
    )


def _names(keys: list[str]) -> str:
    names = [RUN_LABELS[key][0].lower().replace("ddp", "DDP's") for key in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def verdict(result: ConfirmResponse) -> str:
    """The panel's verdict, chosen by the flags and the engine's reason: replica consistency,
    then which runs match the single-process reference and why."""
    runs = result.runs
    split = [key for key, run in runs.items() if not run.replicas_agree]
    if split:
        first = f"The replicas disagree in the {_names(split)} run{'s' if len(split) > 1 else ''}"
    else:
        first = "Every replica agrees with the others in each run (replica consistency)"
    matching = [key for key, run in runs.items() if run.matches_reference]
    default = result.ddp_default
    target = result.compensated.engine_grad
    agreement = Agreement(
        agree=result.schemes_agree,
        reason=result.agreement,
        difference=default.engine_grad - target,
        empty=tuple(result.empty_entries),
        plain=Fraction(default.engine_grad),
        counted=Fraction(target),
    )
    why = reason(agreement, microbatches=result.form == "accumulation")
    digits = distinct_digits((default.engine_grad, target))
    computes = f"DDP's default computes the {default.objective}, {fmt(default.engine_grad, digits)}"
    if len(matching) == len(runs):
        if result.schemes_agree:
            return f"{first}, and all three runs match the single-process reference: {why}."
        return (
            f"{first}, and all three runs match the single-process reference: {computes} against"
            f" {fmt(target, digits)}, a difference within the tolerance"
            f" {fmt(result.gradient_tolerance)}."
        )
    if matching == ["compensated", "comm_hook"]:
        return (
            f"{first}, yet only the compensated and comm-hook runs match the single-process"
            f" reference: {computes} instead of {fmt(target, digits)}, a different objective"
            f" ({why})."
        )
    if not matching:
        return f"{first}; no run matches the single-process reference."
    verb = "matches" if len(matching) == 1 else "match"
    return f"{first}; only the {_names(matching)} run {verb} the single-process reference."


def confirm_view(result: ConfirmResponse) -> ConfirmView:
    """Format a finished confirmation for the panel: one digit count for the gradients and
    one for w_new, the fewest that print different values differently."""
    runs = result.runs
    grads = [g for run in runs.values() for g in (*run.grad, run.engine_grad)]
    w_news = [x for run in runs.values() for x in (*run.w_new, run.engine_w_new)]
    grad_digits = distinct_digits([*grads, result.reference.grad])
    w_digits = distinct_digits([*w_news, result.reference.w_new])
    return ConfirmView(
        ranks=tuple(range(result.world_size)),
        runs=tuple(_row(key, run, grad_digits, w_digits) for key, run in runs.items()),
        reference_grad=fmt(result.reference.grad, grad_digits),
        reference_w_new=fmt(result.reference.w_new, w_digits),
        counts=fmt_distinct(result.counts),
        total=fmt(result.total),
        torch_version=result.torch_version,
        elapsed=f"{result.elapsed_ms:.0f} ms" if result.elapsed_ms >= 1 else "under 1 ms",
        cached=result.cached,
        retried=result.attempts > 1,
        engine_agrees=result.engine_agrees,
        verdict=verdict(result),
        tolerance=(
            f"Gradients match within {fmt(result.gradient_tolerance)}"
            f" ({fmt(result.tolerance)} of the largest item gradient"
            f" |w {MINUS} y| = {fmt(result.gradient_scale)}); w_new within"
            f" {fmt(result.w_new_tolerance)}."
        ),
        notes=tuple(result.notes),
    )
