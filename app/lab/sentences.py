"""The words for an engine verdict, shared by the lab and the confirmation panel.

The engine decides which condition holds (``app.engine.verdicts``); this module only says it.
Entries are ranks, or microbatches when gradient accumulation is compared.
"""

from app.engine.verdicts import Agreement, Reason
from app.lab.equations import Formula, write
from app.lab.numbers import MOST_DIGITS, Printer

_RANKS: dict[Reason, str] = {
    "one entry": "there is one rank, so the mean of the rank means is that rank's mean,"
    " the global item mean",
    "proportional counts": "every rank has the same count, so the plain mean of rank means is"
    " the global item mean",
    "equal means": "every rank has the same mean gradient, so weighting by rank or by item"
    " gives that same mean",
    "zero means": "every rank with items has mean gradient 0, so both means are 0",
    "coincidence": "the counts and the means differ, yet the two weightings happen to give"
    " the same value",
    "unequal counts": "it weights each rank equally, not each item",
    "empty entries": "it counts each empty rank as a mean of 0 and still divides by P",
}
_MICROBATCHES: dict[Reason, str] = {
    "one entry": "there is one microbatch, so every average of microbatch means is its mean",
    "proportional counts": "each microbatch's count is in proportion to the weight 1/(P·Mᵣ)"
    " the naive average gives it, so the naive average is the window's item mean",
    "equal means": "every microbatch has the same mean gradient, so any weighting of them"
    " gives that same mean",
    "zero means": "every microbatch with items has mean gradient 0, so both means are 0",
    "coincidence": "the counts and the means differ, yet the two weightings happen to give"
    " the same value",
    "unequal counts": "it weights each microbatch by 1/(P·Mᵣ), not each item",
    "empty entries": "it counts each empty microbatch as a mean of 0",
}


def reason(agreement: Agreement, *, microbatches: bool = False) -> str:
    """Why the two schemes agree, or why they differ, as a clause (no capital, no stop)."""
    words = (_MICROBATCHES if microbatches else _RANKS)[agreement.reason]
    if agreement.reason == "unequal counts" and agreement.empty:
        entry = "microbatch" if microbatches else "rank"
        words += f", and it counts each empty {entry} as a mean of 0"
    return words


def lab_verdict(
    agreement: Agreement, printer: Printer | None = None, *, microbatches: bool = False
) -> str:
    """The lab's verdict: that the plain mean (of the ranks' means, or with ``microbatches`` the
    naive average of microbatch means) equals g and why, or by how much it differs.

    The two means print from their exact values, with the fewest digits that show them apart
    and make "x instead of y (d lower)" hold as printed. ``printer``: the request's, where the
    figures printed the same means.
    """
    why = reason(agreement, microbatches=microbatches)
    if agreement.agree:
        return f"Both schemes agree here: {why}."
    subject = "The naive average" if microbatches else "The plain rank mean"
    # "x instead of y (d lower)" is arithmetic too: x - y = d must hold as printed.
    plain, counted = agreement.plain, agreement.counted
    higher = plain > counted
    high, low = (plain, counted) if higher else (counted, plain)
    side = "higher" if higher else "lower"
    line = write(Formula.difference(high, low), high - low, most=MOST_DIGITS, printer=printer)
    shown_high, shown_low = line.operands
    shown_plain, shown_counted = (shown_high, shown_low) if higher else (shown_low, shown_high)
    return (
        f"{subject} gives {shown_plain} instead of {shown_counted} ({line.result} {side}): {why}."
    )
