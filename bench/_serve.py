"""Serve an ASGI app for the benchmarks as ``python -m app`` serves the lesson, so the app and its
floor are served alike: uvicorn with the benchmarks' settings, and several workers each on a
socket of its own (``app.web.listeners``: the kernel spreads the connections evenly).

    python bench/_serve.py APP PORT WORKERS [--factory]   (from the checkout whose APP it serves)

``--factory``: APP names the function that builds the app, as uvicorn's ``--factory``.

Run as a file, from the checkout it serves (``bench.load --app-dir``'s older one too), whose
``app`` package it imports. A checkout without ``app/web/listeners.py`` is served as it was then,
its workers sharing uvicorn's one socket.
"""

import os
import sys
from typing import Any

import uvicorn

# The app's checkout first, as uvicorn's own --app-dir "." puts it.
sys.path[0] = os.getcwd()

# The same settings for the app and its floor, so only the app's own work differs.
SETTINGS: dict[str, Any] = {"host": "127.0.0.1", "log_level": "warning", "access_log": False}


def main(argv: list[str]) -> None:
    app, port, workers = argv[0], int(argv[1]), int(argv[2])
    factory = argv[3:] == ["--factory"]
    try:
        from app.web.listeners import run  # the checkout's, found above
    except ImportError:
        run = uvicorn.run
    run(app, port=port, workers=workers, factory=factory, **SETTINGS)


if __name__ == "__main__":
    main(sys.argv[1:])
