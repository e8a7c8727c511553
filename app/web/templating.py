"""The one Jinja2 environment (a page, or one `{% block %}` alone) and the asset URLs it writes.

Assets are linked as ``/static/<path>?v=<content hash>``. A request carrying the current hash
is cached for a year as immutable; any other static request revalidates (ETag, 304).
"""

import contextlib
import hashlib
import os
from collections.abc import MutableMapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2_fragments as fragments
from fastapi.staticfiles import StaticFiles
from jinja2 import pass_context
from jinja2.runtime import Context
from jinja2_fragments.fastapi import Jinja2Blocks
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import NoMatchFound
from starlette.types import Scope

from app.settings import Settings

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


class Environment(jinja2.Environment):
    """Jinja2's environment with each template's globals one plain dict.

    Jinja2 chains a template's globals to the environment's (a ChainMap), so that globals added
    after a template loads still show; every render then copies them through the chain. Every
    global here is set once, by ``create_templates``, before any template loads: a plain dict
    holds the same, and a render copies nothing.
    """

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


@lru_cache(maxsize=256)
def _digest(path: Path, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


@lru_cache(maxsize=256)
def asset_version(static_dir: Path, relative: str) -> str:
    """Short content hash of one static file, read once: the files do not change under a running
    server, so a render makes no stat() per link. Should one change anyway, its old URL is still
    served, only revalidated instead of cached for good."""
    path = static_dir / relative
    stat = path.stat()
    return _digest(path, stat.st_mtime_ns, stat.st_size)


def app_root(scope: Scope) -> str:
    """The app's root path (a proxy's prefix): Starlette keeps it as ``app_root_path`` below a
    mount such as ``/static``, whose own ``root_path`` ends in ``/static``."""
    root: str = scope.get("app_root_path", scope.get("root_path", ""))
    return root


def below_root(scope: Scope) -> str:
    """The request's path below the app's root."""
    path: str = scope.get("path", "")
    root = app_root(scope)
    return path[len(root) :] if root and path.startswith(root) else path


def section_of(scope: Scope) -> str | None:
    """The address of the lesson the request is under: ``""`` for a lesson served at the site's
    root, ``/learn/<slug>`` for one of a course's, None outside every lesson (a course's index,
    say). The app keeps its lessons by address in ``app.state.lessons``."""
    path = below_root(scope)
    return next(
        (prefix for prefix in scope["app"].state.lessons if path.startswith(f"{prefix}/")), None
    )


def _path_for(app: Any, section: str, name: str, params: dict[str, str]) -> str:
    # Every lesson of a course has routes of the same names: under a lesson, its own.
    if section:
        for route in app.routes:
            with contextlib.suppress(NoMatchFound):
                path = str(route.url_path_for(name, **params))
                if path.startswith(f"{section}/"):
                    return path
    return str(app.url_path_for(name, **params))


def route_path(request: Request, name: str, **params: str) -> str:
    """The path of a named route (the request's lesson's own, where the lesson has one): a path,
    not an absolute URL, so nothing rendered depends on the Host a request names.

    A lookup walks the routes (Starlette raises and catches one exception per route that does
    not match); routes do not change under a running server, so the app keeps its paths by
    lesson, name and parameters (``app.state.route_paths``, made by ``create_app``), a handful.
    """
    scope = request.scope
    paths: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = scope["app"].state.route_paths
    section = section_of(scope) or ""
    key = (section, name, tuple(params.items()))
    path = paths.get(key)
    if path is None:
        path = paths[key] = _path_for(scope["app"], section, name, params)
    return f"{app_root(scope)}{path}"


@pass_context
def url_for(context: Context, name: str, /, **params: str) -> str:
    """``url_for`` in templates: the route's path (see ``route_path``)."""
    return route_path(context["request"], name, **params)


@pass_context
def static_url(context: Context, relative: str) -> str:
    """The static file's path plus ``?v=<content hash>``, so it can be cached for good."""
    request = context["request"]
    version = asset_version(request.app.state.settings.static_dir, relative)
    return f"{route_path(request, 'static', path=relative)}?v={version}"


def create_templates(settings: Settings) -> Jinja2Blocks:
    """The app's templates, from ``settings.templates_dir``: every global the templates use is
    registered here, before any template loads (see ``Environment``); there are no filters of
    the app's own."""
    return _templates(settings.templates_dir)


@lru_cache(maxsize=8)
def _templates(templates_dir: Path) -> Jinja2Blocks:
    """One environment per templates folder in a process, so each template is compiled once
    however many apps the process builds (a test suite builds hundreds): nothing in it belongs
    to one app, as its globals find the app through the request they render for."""
    environment = Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        autoescape=jinja2.select_autoescape(),
        # Templates do not change under a running server: without this, every render stat()s
        # each template it uses to see whether to reload it.
        auto_reload=False,
    )
    environment.globals.update(url_for=url_for, static_url=static_url)
    return Jinja2Blocks(env=environment)


def templates_of(request: Request) -> Jinja2Blocks:
    """The templates of the app serving ``request`` (built once, by ``create_app``)."""
    templates: Jinja2Blocks = request.app.state.templates
    return templates


def render_block(request: Request, template: str, block: str, context: dict[str, Any]) -> str:
    """One ``{% block %}`` of ``template`` alone, with ``request`` in its context: the answer to
    an htmx request for one part of a page (jinja2-fragments' ``render_block``)."""
    context["request"] = request
    return fragments.render_block(templates_of(request).env, template, block, context)


class AssetFiles(StaticFiles):
    """Static files with an ETag, cached forever when the URL names the file's current hash."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        requested = QueryParams(scope.get("query_string", b"")).get("v")
        path = Path(full_path)
        current = _digest(path, stat_result.st_mtime_ns, stat_result.st_size)
        response.headers["Cache-Control"] = IMMUTABLE if requested == current else REVALIDATE
        return response
