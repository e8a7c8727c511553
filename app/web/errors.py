"""Every refusal and failure the app answers, in one shape: a page for a browser, JSON otherwise.

A browser asking for a page (``Accept`` names ``text/html``, and the path is not an API's) gets
``error.html`` in the site's layout: what went wrong in words, a link home, never a traceback.
Every other client gets ``{"detail": ...}`` as FastAPI's own errors have it. Both vary on
``Accept``. Form errors are not answered here: they show inline, at the field.
"""

import logging
import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Scope

from app.web.templating import app_root, below_root, section_of, templates_of

log = logging.getLogger("atlas")

# Longest part of the requested path that a page quotes back.
PATH_CHARS = 80


# The JSON API's addresses below the app's root: a lone lesson's, or a course's lesson's.
_API_PATH = re.compile(r"(/learn/[^/]+)?/api(/|$)")


def wants_page(scope: Scope) -> bool:
    """Whether to answer with a page: a browser's navigation (``Accept: text/html``) to an
    address outside the JSON API (``/api/...``, ``/learn/<slug>/api/...``)."""
    if "text/html" not in Headers(scope=scope).get("accept", ""):
        return False
    return _API_PATH.match(below_root(scope)) is None


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def error_response(
    scope: Scope, status: int, detail: Any, headers: Mapping[str, str] | None = None
) -> Response:
    """The answer to a refused or failed request: ``error.html`` for a browser, else JSON."""
    response: Response | None = None
    if wants_page(scope):
        path = scope.get("path", "")
        # Under a lesson's address its page, else (a course) the index of lessons.
        section = section_of(scope) if "app" in scope else None
        context = {
            "status": status,
            "phrase": _phrase(status),
            "detail": detail if isinstance(detail, str) else None,
            "method": scope.get("method", "GET"),
            "path": path if len(path) <= PATH_CHARS else f"{path[:PATH_CHARS]}…",
            "home": f"{app_root(scope)}{section or ''}/",
            "home_label": "Go to the lesson" if section is not None else "Go to the lessons",
        }
        try:
            request = Request(scope)
            response = templates_of(request).TemplateResponse(
                request, "error.html", context, status_code=status, headers=headers
            )
        except Exception:
            # The page itself failed (the app is in a bad way): the plain answer still goes out.
            log.exception("the error page for %d could not be rendered", status)
    if response is None:
        response = JSONResponse({"detail": detail}, status_code=status, headers=headers)
    response.headers.add_vary_header("Accept")
    return response


async def http_error(request: Request, error: Exception) -> Response:
    """The app's handler for ``HTTPException`` (FastAPI's is Starlette's): 404, 405, 400, ..."""
    assert isinstance(error, HTTPException)
    if error.status_code in {204, 304}:
        return Response(status_code=error.status_code, headers=error.headers)
    return error_response(request.scope, error.status_code, error.detail, error.headers)
