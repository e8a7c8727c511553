"""What ``app/web/server.py`` takes from uvicorn's internals, named one by one.

``GuardedHttpProtocol`` subclasses uvicorn's httptools protocol: it overrides its callbacks, calls
a private method (``_start_asgi_task``) and reads the protocol's and the request cycle's own
attributes. None of that is uvicorn's public API, so ``pyproject.toml`` pins uvicorn to the
versions it was tested with. An upgrade that moves any of it fails here, naming what moved, before
a server misbehaves; the lists are checked against server.py's source, so a new use must be named.
"""

import ast
import asyncio
import inspect
import re
import socket
import tomllib
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from app.web import server

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ast.parse(Path(server.__file__).read_text())

# Every ``from uvicorn... import ...`` of server.py.
IMPORTS = {
    "uvicorn.config": {"Config"},
    "uvicorn.protocols.http.httptools_impl": {"HttpToolsProtocol", "RequestResponseCycle"},
    "uvicorn.server": {"ServerState"},
}
# HttpToolsProtocol's methods that server.py overrides or calls, with their parameters.
METHODS = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "send_400_response": ["self", "msg"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
    "on_response_complete": ["self"],
    "_start_asgi_task": ["self", "cycle", "app"],
    "pause_writing": ["self"],
    "resume_writing": ["self"],
}
# The protocol's own attributes server.py reads (once a connection is made).
ATTRIBUTES = {
    "transport",
    "flow",
    "cycle",
    "pipeline",
    "connections",
    "client",
    "logger",
    "loop",
    "scope",
}
# The flow control's and a request cycle's attributes server.py reads or sets.
FLOW_ATTRIBUTES = {"read_paused", "write_paused"}
CYCLE_ATTRIBUTES = {"response_complete", "response_started", "disconnected", "message_event"}


def moved(what: str) -> str:
    return (
        f"uvicorn {uvicorn.__version__} moved {what}, which app/web/server.py relies on: change"
        " GuardedHttpProtocol for this uvicorn (and pyproject.toml's uvicorn range), or keep the"
        " pinned uvicorn"
    )


def _guarded_class() -> ast.ClassDef:
    return next(
        node
        for node in SOURCE.body
        if isinstance(node, ast.ClassDef) and node.name == "GuardedHttpProtocol"
    )


def _assigned(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    return [node.target] if isinstance(node, ast.AnnAssign) else []


def _attributes_of(cls: ast.ClassDef, *owners: str) -> set[str]:
    """Every ``owner.name`` in the class, for the given owners' names."""
    return {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in owners
    }


def test_the_lists_name_every_use_of_uvicorn_in_server_py() -> None:
    """Every uvicorn import, every method of uvicorn's protocol that server.py overrides or
    calls, and every attribute of the protocol it reads without setting it itself are in the
    lists above (a new one must be added there)."""
    imports = {
        node.module: {alias.name for alias in node.names}
        for node in ast.walk(SOURCE)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("uvicorn")
    }
    assert imports == IMPORTS
    assert not any(
        alias.name.startswith("uvicorn")
        for node in ast.walk(SOURCE)
        if isinstance(node, ast.Import)
        for alias in node.names
    )
    cls = _guarded_class()
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    own = methods | {t.id for n in cls.body for t in _assigned(n) if isinstance(t, ast.Name)}
    own |= {
        t.attr
        for n in ast.walk(cls)
        for t in _assigned(n)
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    # Its own instances are also called protocol and other.
    assert _attributes_of(cls, "self", "protocol", "other") - own == ATTRIBUTES
    called = _attributes_of(cls, "HttpToolsProtocol") | {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "super"
    }
    overridden = methods & {name for name, _ in inspect.getmembers(HttpToolsProtocol)}
    assert called | overridden == set(METHODS)


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_the_imported_names_are_where_server_py_imports_them(module: str) -> None:
    imported = __import__(module, fromlist=["_"])
    for name in sorted(IMPORTS[module]):
        assert hasattr(imported, name), moved(f"{module}.{name}")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_the_protocol_methods_keep_their_parameters(name: str) -> None:
    method = getattr(HttpToolsProtocol, name, None)
    assert callable(method), moved(f"HttpToolsProtocol.{name}")
    parameters = list(inspect.signature(method).parameters)
    assert parameters == METHODS[name], moved(
        f"HttpToolsProtocol.{name}'s parameters ({', '.join(parameters)})"
    )


async def _connect_and_ask() -> dict[str, Any]:
    """A real httptools protocol on a socket pair, asked for one request: its attributes, its
    flow control's and its request cycle's, as server.py finds them."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    config = Config(app=app, http="httptools", log_config=None, lifespan="off")
    config.load()
    loop = asyncio.get_running_loop()
    protocol = HttpToolsProtocol(config, ServerState(), {}, loop)
    ours, theirs = socket.socketpair()
    transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
    try:
        protocol.data_received(b"GET / HTTP/1.1\r\nhost: example\r\n\r\n")
        return {
            "protocol": protocol,
            "flow": getattr(protocol, "flow", None),
            "cycle": getattr(protocol, "cycle", None),
        }
    finally:
        transport.close()
        theirs.close()


def test_a_connection_and_its_request_have_the_attributes_server_py_reads() -> None:
    found = asyncio.run(_connect_and_ask())
    for name in sorted(ATTRIBUTES):
        assert hasattr(found["protocol"], name), moved(f"HttpToolsProtocol().{name}")
    for name in sorted(FLOW_ATTRIBUTES):
        assert hasattr(found["flow"], name), moved(f"HttpToolsProtocol().flow.{name}")
    assert isinstance(found["cycle"], RequestResponseCycle), moved(
        "HttpToolsProtocol().cycle (a RequestResponseCycle once a request's head is complete)"
    )
    for name in sorted(CYCLE_ATTRIBUTES):
        assert hasattr(found["cycle"], name), moved(f"RequestResponseCycle().{name}")


def _range(requirement: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    low = re.search(r">=\s*([\d.]+)", requirement)
    high = re.search(r"<\s*([\d.]+)", requirement)
    assert low, f"uvicorn has no lower bound: {requirement}"
    assert high, f"uvicorn has no upper bound: {requirement}"
    return tuple(map(int, low[1].split("."))), tuple(map(int, high[1].split(".")))


def test_uvicorn_is_pinned_to_the_tested_range_and_the_lock_is_inside_it() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    requirement = next(d for d in dependencies if d.startswith("uvicorn"))
    low, high = _range(requirement)
    locked = re.search(
        r"^uvicorn==([\d.]+)$", (ROOT / "requirements" / "constraints.txt").read_text(), re.M
    )
    assert locked, "requirements/constraints.txt pins no uvicorn"
    for version in (locked[1], uvicorn.__version__):
        assert low <= tuple(map(int, version.split("."))) < high, (
            f"uvicorn {version} is outside pyproject.toml's {requirement}"
        )
