"""Serving alone: what a drag's answer costs when its numbers cost nothing, in process.

Issue 8 asks a new lab state's pane for ≥ 0.4x the floor's throughput. This benchmark splits
the app's CPU per pane request into computing and serving, to show how much of that ratio the
serving alone (template, response, gzip, middleware, routing) leaves to the computing. Three ways,
each called through the real ASGI stack in this process (no sockets), in alternated rounds:

- **app**: the real app on a new random state per request (as ``bench.load``'s "lab, new state");
- **serving**: the same app and the same requests, with each state's template context computed
  beforehand (the lab's ``page_context`` answers from a table): render, response, gzip and
  every middleware still run per request;
- **floor**: ``bench._floor`` answering the app's compressed pane bytes for one state.

The ratios are floor ÷ app (the in-process share of bench.load's throughput ratio) and floor ÷
serving (the most that ratio could reach with free computation). Sockets and uvicorn's HTTP
parsing, about 0.06 ms a request here, come on top of both sides under wrk.

    python -m bench.serving [--requests 2000] [--rounds 3]
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.datastructures import QueryParams
from starlette.types import ASGIApp, Message

BROWSER = [(b"accept-encoding", b"gzip, deflate, br, zstd")]
PANE = [(b"hx-request", b"true"), (b"hx-target", b"lab-results"), *BROWSER]
ContextFn = Callable[[Mapping[str, str]], dict[str, Any]]


def new_state(rng: random.Random) -> str:
    """A query as bench.load's NEW_STATE_LUA draws it: the sliders' ranges and steps."""
    ranks = rng.randint(2, 8)
    counts = ",".join(str(rng.randint(1 if r == 0 else 0, 64)) for r in range(ranks))
    means = ",".join(f"{rng.randint(-100, 100) / 10:.1f}" for _ in range(ranks))
    eta, w = rng.randint(1, 200) / 100, rng.randint(-40, 40) / 2
    return f"counts={counts}&means={means}&eta={eta:.2f}&w={w:.1f}"


async def call(app: ASGIApp, query: str) -> list[Message]:
    """One GET /lab for the results pane through ``app``, as a browser's htmx sends it."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/lab",
        "raw_path": b"/lab",
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000"), *PANE],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    if sent[0]["status"] != 200:
        raise SystemExit(f"GET /lab?{query} answered {sent[0]['status']}")
    return sent


def floor_app(pane: list[Message], folder: Path) -> ASGIApp:
    """bench._floor answering ``pane``'s bytes (as sent, compressed) on /lab."""
    headers = dict(pane[0]["headers"])
    (folder / "pane").write_bytes(b"".join(m.get("body", b"") for m in pane[1:]))
    entry = {
        "file": "pane",
        "media_type": headers[b"content-type"].decode(),
        "encoding": headers.get(b"content-encoding", b"").decode(),
    }
    (folder / "index.json").write_text(json.dumps({"/lab": {"": entry}}))
    os.environ["ATLAS_BENCH_FLOOR"] = str(folder / "index.json")
    from bench._floor import app

    return app


async def cpu_us(app: ASGIApp, queries: Sequence[str]) -> float:
    """CPU µs per request over ``queries``, after a warm-up on the first hundred."""
    for query in queries[:100]:
        await call(app, query)
    started = time.process_time()
    for query in queries:
        await call(app, query)
    return (time.process_time() - started) / len(queries) * 1e6


async def run(requests: int, rounds: int) -> dict[str, list[float]]:
    from app.main import create_app
    from app.routes import lab as routes

    app = create_app()
    rng = random.Random(8)
    queries = [new_state(rng) for _ in range(requests)]
    compute: ContextFn = vars(routes)["page_context"]

    def answer_with(context: ContextFn) -> None:
        """Make the lab's routes build their template context with ``context``."""
        vars(routes)["page_context"] = context

    contexts = {str(QueryParams(q)): compute(QueryParams(q)) for q in queries}

    def precomputed(query: Mapping[str, str]) -> dict[str, Any]:
        return dict(contexts[str(query)])

    # The split holds only if serving from the table answers what computing does.
    for query in queries[:200]:
        computed = await call(app, query)
        answer_with(precomputed)
        served = await call(app, query)
        answer_with(compute)
        if served[1:] != computed[1:]:
            raise SystemExit(f"serving from the table changed the answer to /lab?{query}")
    ways: dict[str, tuple[ASGIApp, ContextFn]] = {}
    with tempfile.TemporaryDirectory() as folder:
        ways["floor"] = (floor_app(await call(app, queries[0]), Path(folder)), compute)
        ways["app"] = (app, compute)
        ways["serving"] = (app, precomputed)
        figures: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(rounds):
            for name, (target, context) in ways.items():
                answer_with(context)
                figures[name].append(await cpu_us(target, queries))
        answer_with(compute)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serving", description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="states per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three ways")
    args = parser.parse_args(argv)
    figures = asyncio.run(run(args.requests, args.rounds))
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"CPU µs per pane request in process, medians of {args.rounds} rounds:")
    for name, values in figures.items():
        print(f"  {name:<8} {median[name]:7.0f}   ({', '.join(f'{v:.0f}' for v in values)})")
    print(f"floor ÷ app:     {median['floor'] / median['app']:.2f}x")
    print(f"floor ÷ serving: {median['floor'] / median['serving']:.2f}x (computing for free)")
    computing = median["app"] - median["serving"]
    print(f"computing:       {computing:.0f} µs of the app's {median['app']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
