"""The floor: a bare FastAPI app answering fixed bytes, the fastest this stack can serve a body.

Run as ``uvicorn bench.floor:app`` with ``ATLAS_BENCH_FLOOR`` naming a JSON file that maps each
path, and on it each HX-Target header ("" for none), to a file holding the bytes the real app
answered there, as sent (gzip-compressed when the benchmark asked as a browser does), with their
media type and content encoding. The lab answers its pane and its details on one path, told
apart by HX-Target.

With ``ATLAS_BENCH_FLOOR_BURN_US`` set, each answer first spins for that many µs of this
process's CPU time: a server whose requests cost what a heavier app's cost, with nothing else of
that app in it (``bench.tail``).
"""

import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response

app = FastAPI()


Answer = tuple[bytes, str, dict[str, str]]
BURN_S = float(os.environ.get("ATLAS_BENCH_FLOOR_BURN_US", "0")) / 1e6


def _burn() -> None:
    """Spin for BURN_S of this process's CPU time (not wall time: a descheduled spin burns
    nothing). Mostly interpreter work, as an app's request is, between reads of the clock (a
    system call): a few µs a round."""
    until = time.process_time() + BURN_S
    while time.process_time() < until:
        for _ in range(300):
            pass


def _endpoint(bodies: dict[str, Answer]) -> Callable[..., Awaitable[Response]]:
    """The bytes of each HX-Target; a route with one answer reads no header at all."""
    (first, *others) = bodies.values()

    # async: served on the event loop, without the thread-pool hop a plain def takes.
    async def endpoint() -> Response:
        if BURN_S:
            _burn()
        return Response(content=first[0], media_type=first[1], headers=first[2])

    async def by_target(request: Request) -> Response:
        if BURN_S:
            _burn()
        body, media_type, headers = bodies.get(request.headers.get("hx-target", ""), first)
        return Response(content=body, media_type=media_type, headers=headers)

    return by_target if others else endpoint


def _mount_bodies(index_file: Path) -> None:
    for path, variants in json.loads(index_file.read_text()).items():
        bodies = {
            target: (
                (index_file.parent / entry["file"]).read_bytes(),
                entry["media_type"],
                {"Content-Encoding": entry["encoding"]} if entry["encoding"] else {},
            )
            for target, entry in variants.items()
        }
        app.add_api_route(path, _endpoint(bodies), methods=["GET"])


_mount_bodies(Path(os.environ["ATLAS_BENCH_FLOOR"]))
