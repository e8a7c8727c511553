"""The JSON API's bodies, read once and checked before any model validates them.

Two things a body may carry that validation must never see: an object with more than
``MAX_OBJECT_KEYS`` keys (every unknown key would cost an error, and a body of tens of thousands
of them costs a worker a visible pause), and a lone surrogate (``"\\ud800"``: JSON may spell it,
UTF-8 cannot carry it, so the answer that quotes it could not be sent). Either is a 422 at its
place in the body, quoting what it found escaped and cut short.
"""

import contextlib
import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from app.web.limits import short

# No request model has more than a dozen fields; 64 leaves room and stays cheap to refuse.
MAX_OBJECT_KEYS = 64

# A body that spells no surrogate escape cannot hold a lone surrogate: only such a body is walked.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _CrowdedObject(dict[str, Any]):
    """An object refused for its size: its first few keys, and how many it had."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs[:8])
        self.size = len(pairs)


def escaped(text: str) -> str:
    """``text`` with any lone surrogate written as its escape (``\\ud800``), so it can be sent."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and escaped(text) != text


def _lone_surrogate(loc: tuple[str | int, ...], text: str, where: str) -> dict[str, Any]:
    return {
        "type": "string_unicode",
        "loc": ("body", *loc),
        "msg": f"{where} must be valid Unicode: it holds a lone surrogate (a \\uD800-\\uDFFF"
        " escape without its pair)",
        "input": short(escaped(text)),
    }


def _first_fault(value: Any) -> dict[str, Any] | None:
    """The first object too large or string with a lone surrogate, in the body's order."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, str):
            if _has_lone_surrogate(item):
                return _lone_surrogate(loc, item, "Text")
        elif isinstance(item, _CrowdedObject):
            return {
                "type": "too_many_keys",
                "loc": ("body", *loc),
                "msg": f"An object with {item.size} keys: at most {MAX_OBJECT_KEYS} are read",
                "ctx": {"keys": item.size, "limit": MAX_OBJECT_KEYS},
            }
        elif isinstance(item, dict):
            for key in item:
                if _has_lone_surrogate(key):
                    return _lone_surrogate((*loc, escaped(key)), key, "A key")
            stack.extend(((*loc, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*loc, index), child) for index, child in reversed(list(enumerate(item))))
    return None


def read_json(body: bytes) -> Any:
    """The body parsed, or a ``RequestValidationError`` (422) for what the module doc refuses.
    Not JSON at all: json's own ``ValueError``, which FastAPI answers as it always has."""
    crowded = False

    def pairs_to_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal crowded
        if len(pairs) > MAX_OBJECT_KEYS:
            crowded = True
            return _CrowdedObject(pairs)
        return dict(pairs)

    value = json.loads(body, object_pairs_hook=pairs_to_object)
    if crowded or _SURROGATE_ESCAPE.search(body):
        fault = _first_fault(value)
        if fault is not None:
            raise RequestValidationError([fault])
    return value


def _is_json(content_type: str | None) -> bool:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    maintype, _, subtype = kind.partition("/")
    return maintype == "application" and (subtype == "json" or subtype.endswith("+json"))


class JsonRequest(Request):
    """A request whose ``json()`` is :func:`read_json`'s, read once."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = read_json(await self.body())
        return self._json


class JsonBodyRoute(APIRoute):
    """A FastAPI route whose JSON body is read by :func:`read_json` before FastAPI validates it:
    its refusals are answered by the app's 422 handler like any validation error."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def read_then_handle(request: Request) -> Response:
            request = JsonRequest(request.scope, request.receive)
            if _is_json(request.headers.get("content-type")):
                # Not JSON at all: FastAPI reads it again and answers as it always has.
                with contextlib.suppress(ValueError):
                    await request.json()
            return await handler(request)

        return read_then_handle
