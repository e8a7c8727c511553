"""The lab's templates alone: CPU per render of each block a drag asks for, in process.

Every state's template context is computed beforehand (``page_context``), so only the render
is timed: the block of ``_lab.html`` that answers each ``HX-Target``, as ``app.routes.lab``
renders it (``render_block``), on new random states as ``bench.serving`` draws them. The
results pane (``lab_results``, with its out-of-band companions) is what every input event of a
drag fetches; the pictures follow a few times a second, the details once a drag pauses.

    python -m bench.render [--states 1000] [--rounds 5]
"""

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams
from starlette.requests import Request

from bench.serving import new_state

# The route's own choices: which block, and the pane's out-of-band flags.
BLOCKS = ("lab_results", "lab_charts", "lab_details")


def contexts(states: int) -> tuple[Request, list[dict[str, Any]]]:
    """A request of the real app (for ``url_for``) and each new state's template context."""
    from app.lab.panel import page_context
    from app.main import create_app

    app = create_app()

    rng = random.Random(8)
    with TestClient(app):  # the lifespan: the lesson and its parts, as a request sees them
        request = Request({"type": "http", "app": app, "root_path": "", "headers": []})
        found = []
        for _ in range(states):
            context = page_context(QueryParams(new_state(rng)))
            lab = context["lab"]
            # As app.routes.lab.lab sets them for the pane.
            context.update(oob=True, oob_ranks=lab.parsed.resized, oob_carry=True)
            found.append(context)
    return request, found


def render_us(request: Request, found: list[dict[str, Any]], block: str) -> float:
    """CPU µs per render of ``block`` over every context, after a warm-up on the first 100."""
    from app.routes.lab import LAB_TEMPLATE
    from app.web.templating import render_block

    for context in found[:100]:
        render_block(request, LAB_TEMPLATE, block, dict(context))
    copies = [dict(context) for context in found]
    started = time.process_time()
    for context in copies:
        render_block(request, LAB_TEMPLATE, block, context)
    return (time.process_time() - started) / len(copies) * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.render", description=__doc__)
    parser.add_argument("--states", type=int, default=1000, help="new states per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every block")
    args = parser.parse_args(argv)
    request, found = contexts(args.states)
    # The pictures and details are built lazily, on their first render: build them now.
    for block in BLOCKS:
        render_us(request, found, block)
    figures: dict[str, list[float]] = {block: [] for block in BLOCKS}
    for _ in range(args.rounds):
        for block in BLOCKS:
            figures[block].append(render_us(request, found, block))
    print(f"CPU µs per render, {args.states} new states, best and median of {args.rounds} rounds:")
    for block, values in figures.items():
        print(f"  {block:<12} {min(values):6.1f}  {statistics.median(values):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
