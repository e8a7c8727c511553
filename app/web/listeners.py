"""Several uvicorn workers, each listening on a socket of its own, so the kernel spreads a class's
connections evenly across them.

uvicorn's ``--workers`` binds one socket in its supervisor and hands it to every worker: they all
accept from one queue, and a worker that is awake takes the next connection before a sleeping one
wakes. When a class connects at once one worker often takes most of the connections, and a
connection stays with the worker that took it: that worker's students wait in a longer queue
while the other worker idles. With ``SO_REUSEPORT`` each worker listens on its own socket on the
same address, and Linux hands each new connection to one of them by a hash of the connection's
addresses: about half each, whichever worker is awake.

``run`` is ``uvicorn.run`` but for that: with several workers on Linux (elsewhere
``SO_REUSEPORT`` does not spread connections) the supervisor checks that the address is free, and
each worker, uvicorn's own ``Multiprocess`` process, binds a socket of its own as it starts
(:class:`WorkerSocket`), a restarted worker too. A worker that stops drops the connections still
waiting in its own queue (refused: a browser asks again).

The workers are forked from one fork server that imported the app once (multiprocessing's
``forkserver``, preloading the app's module: what gunicorn's ``--preload`` does), not started
with ``spawn`` as uvicorn does, where each worker imports the whole app again (about 1 CPU-s
each). A worker then only builds the app (``--factory``), and a worker restarted after a crash
answers within moments. The fork server imports the app, never runs it: no thread, loop or
connection is open when it forks, and each worker opens its own.
"""

import contextlib
import logging
import multiprocessing
import socket
import sys
from typing import Any, cast

import uvicorn
import uvicorn._subprocess
from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors import Multiprocess

log = logging.getLogger("uvicorn.error")


def spreads_connections() -> bool:
    """Whether this system spreads connections across sockets that share a port (Linux)."""
    return sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")


def _socket(host: str, *, shared: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def worker_socket(host: str, port: int) -> socket.socket:
    """A worker's own socket on ``host:port``, bound beside the other workers' (uvicorn's
    ``create_server`` makes it listen)."""
    sock = _socket(host, shared=True)
    try:
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class WorkerSocket:
    """What the supervisor hands each worker in place of a socket: pickled into the worker process
    (forked by the fork server, it gets nothing of the supervisor's but what is pickled), it
    becomes that worker's own socket on the address, bound there (:func:`worker_socket`)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def __reduce__(self) -> tuple[Any, tuple[str, int]]:
        return worker_socket, (self.host, self.port)


def check_free(host: str, port: int) -> int:
    """``port``, checked free on ``host`` (port 0: a free one, picked here), before any worker
    binds it: bound alone (no ``SO_REUSEPORT``), which fails while anything listens there,
    another server of this app included. Raises OSError when the address is taken or not this
    machine's."""
    with _socket(host, shared=False) as probe:
        probe.bind((host, port))
        return int(probe.getsockname()[1])


def preload_workers(app: str) -> None:
    """Start uvicorn's workers from a fork server that imports ``app``'s module first (``app`` is
    uvicorn's import string, ``module:attribute``). uvicorn makes every worker process with the
    multiprocessing context ``uvicorn._subprocess.spawn``; this puts the fork server's there."""
    preloaded = multiprocessing.get_context("forkserver")
    preloaded.set_forkserver_preload([app.partition(":")[0]])
    uvicorn._subprocess.spawn = preloaded  # type: ignore[assignment]


def serve(app: str, **options: Any) -> None:
    """``uvicorn.run(app, **options)`` for ``workers`` > 1, each worker on its own socket.

    ``app`` is an import string (each worker imports it); ``options`` are ``uvicorn.Config``'s.
    Exits with uvicorn's start-up failure status when the address cannot be had.
    """
    config = Config(app, **options)
    try:
        port = check_free(config.host, config.port)
    except OSError as exc:
        log.error("cannot listen on %s port %d: %s", config.host, config.port, exc)
        sys.exit(STARTUP_FAILURE)
    scheme = "https" if config.is_ssl else "http"
    shown = f"[{config.host}]" if ":" in config.host else config.host
    log.info(
        "Uvicorn running on %s://%s:%d (Press CTRL+C to quit); %d workers, each on its own socket",
        scheme,
        shown,
        port,
        config.workers,
    )
    stand_in = cast(socket.socket, WorkerSocket(config.host, port))
    preload_workers(app)
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run
        Multiprocess(config, sockets=[stand_in]).run()


def run(app: str, **options: Any) -> None:
    """``uvicorn.run(app, **options)``; for several workers on Linux, :func:`serve`."""
    if options.get("workers", 1) > 1 and spreads_connections():
        serve(app, **options)
    else:
        uvicorn.run(app, **options)
