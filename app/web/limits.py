"""Size and time limits on each request, enforced before the app parses anything.

``RequestLimits`` is a pure ASGI middleware: a URL (path plus query) longer than
``max_url_bytes`` gets 414, a body larger than ``max_body_bytes`` gets 413 (at once when
Content-Length says so, else as soon as the streamed body passes the limit). The body is read
whole, bounded, before the app runs, then handed to it unchanged, so no route ever waits on a slow
upload; a client that leaves before its body is whole gets no answer and runs no route. How
long a body may take is ``app.web.server``'s to enforce, one clock per connection with its head.

Errors quote the input they refuse only as a short prefix (``short``), never whole.
"""

import reprlib
from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.errors import error_response

# The most of a refused input an error message quotes, and the most errors one answer lists.
ECHO_CHARS = 120
MAX_ERRORS_LISTED = 20


def short(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr``-like text of ``value``, cut to ``limit`` characters with an ellipsis."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


# reprlib stops after a few entries and levels: a huge input is never walked to be quoted.
_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel, _BOUNDED.maxlist, _BOUNDED.maxdict = 3, 8, 8
_BOUNDED.maxstring, _BOUNDED.maxother = ECHO_CHARS, 40


def _echo(value: Any) -> Any:
    """An error's ``input``: small values as they are, anything larger as a short prefix."""
    if isinstance(value, str):
        return short(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        # A number of thousands of digits is quoted as its first digits and its length.
        text = str(value)
        return value if len(text) <= ECHO_CHARS else short(text)
    if isinstance(value, int | float | bool) or value is None:
        return value
    text = _BOUNDED.repr(value)
    if len(text) <= ECHO_CHARS and "..." not in text:
        return value
    size = f" ({len(value)} entries)" if isinstance(value, list | dict) else ""
    return short(text) + size


def _located(item: dict[str, Any]) -> dict[str, Any]:
    """A check across the body (a model validator) locates its error at the body; when it names
    one field (``ctx.field``), the error's ``loc`` ends with that field, like a field's own."""
    field = (item.get("ctx") or {}).get("field")
    loc = tuple(item.get("loc", ()))
    if isinstance(field, str) and field.isidentifier() and loc and loc[-1] != field:
        return {**item, "loc": (*loc, field)}
    return item


async def validation_error(request: Request, error: Exception) -> JSONResponse:
    """FastAPI's 422 body (``detail``: a list of errors), each echoing at most a short prefix of
    its input, and at most ``MAX_ERRORS_LISTED`` errors (``errors_total`` says how many)."""
    assert isinstance(error, RequestValidationError)
    errors = list(error.errors())
    shown = [
        _located({**item, "input": _echo(item["input"])} if "input" in item else item)
        for item in errors[:MAX_ERRORS_LISTED]
    ]
    content: dict[str, Any] = {"detail": jsonable_encoder(shown)}
    if len(errors) > MAX_ERRORS_LISTED:
        content["errors_total"] = len(errors)
    return JSONResponse(content, status_code=422)


# What an operation that takes a body may answer before it runs, for its OpenAPI entry: the body
# refused by RequestLimits, or not decodable.
BODY_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body could not be decoded (e.g. it is not UTF-8)."},
    408: {
        "description": (
            "The request arrived too slowly: its body paused for ATLAS_BODY_TIMEOUT_S, came slower"
            " than ATLAS_MIN_UPLOAD_RATE, or the whole request took over ATLAS_REQUEST_TIMEOUT_S"
            " (python -m app)."
        )
    },
    413: {"description": "The body is larger than ATLAS_MAX_BODY_BYTES (1 MiB unless set)."},
}


class RequestLimits:
    """414 for a long URL, 413 for a large body; see the module doc."""

    def __init__(self, app: ASGIApp, *, max_url_bytes: int, max_body_bytes: int) -> None:
        self.app = app
        self.max_url_bytes = max_url_bytes
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_url(scope)
            body_receive = await self._read_body(scope, receive)
        except HTTPException as refused:
            # Closing the connection: the rest of a refused body is never read.
            response = error_response(
                scope, refused.status_code, refused.detail, headers={"Connection": "close"}
            )
            await response(scope, receive, send)
            return
        if body_receive is None:
            return  # the client left before its body was whole: nobody to answer
        await self.app(scope, body_receive, send)

    def _check_url(self, scope: Scope) -> None:
        path = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
        size = len(path) + len(scope.get("query_string", b""))
        if size > self.max_url_bytes:
            raise HTTPException(
                414,
                f"URL too long: {size} bytes of path and query; the limit is"
                f" {self.max_url_bytes} (ATLAS_MAX_URL_BYTES).",
            )

    def _too_large(self, size: str) -> HTTPException:
        return HTTPException(
            413,
            f"Request body too large: {size} bytes; the limit is {self.max_body_bytes}"
            " (ATLAS_MAX_BODY_BYTES).",
        )

    async def _read_body(self, scope: Scope, receive: Receive) -> Receive | None:
        """The whole body, read within the limits, replayed as one message to the app; None if
        the client left first."""
        headers = dict(scope["headers"])
        # The server's parser refuses a Content-Length that is not digits.
        length = headers.get(b"content-length", b"")
        declared = int(length) if length.isdigit() else 0
        if declared > self.max_body_bytes:
            raise self._too_large(str(declared))
        if not declared and b"transfer-encoding" not in headers:
            return receive
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large(f"more than {self.max_body_bytes}")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [
            {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        ]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return replay
