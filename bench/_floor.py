"""The floor: a bare FastAPI app answering fixed bytes, the fastest this stack can serve a body.

Run as ``uvicorn bench.floor:app`` with ``ATLAS_BENCH_FLOOR`` naming a JSON file that maps each
path, and on it each HX-Target header ("" for none), to a file holding the bytes the real app
answered there: the lab answers its pane and its details on one path, told apart by HX-Target.
"""

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response

app = FastAPI()


def _endpoint(bodies: dict[str, tuple[bytes, str]]) -> Callable[[Request], Awaitable[Response]]:
    """The bytes of each HX-Target; with one, they are answered whatever the headers."""
    (first, *others) = bodies.values()

    # async: served on the event loop, without the thread-pool hop a plain def takes.
    async def endpoint(request: Request) -> Response:
        if not others:
            return Response(content=first[0], media_type=first[1])
        body, media_type = bodies.get(request.headers.get("hx-target", ""), first)
        return Response(content=body, media_type=media_type)

    return endpoint


def _mount_bodies(index_file: Path) -> None:
    for path, variants in json.loads(index_file.read_text()).items():
        bodies = {
            target: ((index_file.parent / entry["file"]).read_bytes(), entry["media_type"])
            for target, entry in variants.items()
        }
        app.add_api_route(path, _endpoint(bodies), methods=["GET"])


_mount_bodies(Path(os.environ["ATLAS_BENCH_FLOOR"]))
