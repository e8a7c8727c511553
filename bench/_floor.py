"""The floor: a bare FastAPI app answering fixed bytes, the fastest this stack can serve a body.

Run as ``uvicorn bench.floor:app`` with ``ATLAS_BENCH_FLOOR`` naming a JSON file that maps each
path to a file holding the bytes the real app answered on that path.
"""

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Response

app = FastAPI()


def _endpoint(body: bytes, media_type: str) -> Callable[[], Awaitable[Response]]:
    # async: served on the event loop, without the thread-pool hop a plain def takes.
    async def endpoint() -> Response:
        return Response(content=body, media_type=media_type)

    return endpoint


def _mount_bodies(index_file: Path) -> None:
    for path, entry in json.loads(index_file.read_text()).items():
        body = (index_file.parent / entry["file"]).read_bytes()
        app.add_api_route(path, _endpoint(body, entry["media_type"]), methods=["GET"])


_mount_bodies(Path(os.environ["ATLAS_BENCH_FLOOR"]))
