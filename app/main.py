"""The ASGI application, built by ``create_app`` when a server starts, never at import
(``uvicorn --factory app.main:create_app``; ``python -m app`` does so).

``ATLAS_LESSON_PATH`` names one lesson record (the lesson at ``/``, as always) or a folder of
records (a course: the index at ``/``, each lesson at ``/learn/<slug>/`` with its lab's URLs under
it). One app either way, with one ``/static`` and one ``/docs``: a lesson's routers are included
under its address.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware

from app.confirm.host import confirm_settings
from app.confirm.service import ConfirmService
from app.lesson.course import ServedLessons, load_course
from app.lesson.loader import LessonLoadError
from app.live import database
from app.live import routes as live_routes
from app.live.access import ParticipantKey
from app.live.database import require_shared_key
from app.live.deps import Redirect
from app.live.lifecycle import running as live_class
from app.live.service import RefusalError
from app.routes import api, confirm, docs, health, lab, lesson_page, pages
from app.routes import course as course_routes
from app.settings import Settings, get_settings
from app.web.errors import http_error
from app.web.limits import RequestLimits, validation_error
from app.web.secretkey import kept_secrets
from app.web.security import (
    SameOriginMiddleware,
    SecurityHeadersMiddleware,
    TrustedHostsMiddleware,
)
from app.web.templating import AssetFiles, create_templates

log = logging.getLogger("atlas")
VERSION = "0.1.0"
# zlib's fastest level: on a classroom's network the CPU is scarcer than the bytes (a few hundred
# more of the pane's 2.8 kB).
GZIP_LEVEL = 1


def _serve_lessons(app: FastAPI, course: ServedLessons) -> None:
    """Include each lesson's routers under its address (the site's root for a lone lesson), only
    those its parts need; a route finds its lesson by that address (``routes.lesson_page``'s
    ``LessonDep``)."""
    app.state.course = course
    app.state.lessons = {course.path(item.slug).rstrip("/"): item for item in course.lessons}
    for prefix, item in app.state.lessons.items():
        app.include_router(pages.router, prefix=prefix)
        if item.parts.any:
            app.include_router(lab.router, prefix=prefix)
        if item.parts.gradient_lab:
            app.include_router(api.router, prefix=prefix)
        if item.parts.confirm:
            app.include_router(confirm.router, prefix=prefix)


def _title(course: ServedLessons | None) -> str:
    """The OpenAPI title: the lesson's, or the course's."""
    if course is None:
        return "Atlas lesson"
    if course.folder:
        return f"Atlas lessons: {len(course.lessons)} served"
    item = course.lessons[0]
    return f"{'Atlas lab' if item.parts.any else 'Atlas lesson'}: {item.lesson.record.title}"


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: settings, the lesson or course (read and verified once), lifespan (refuse to
    start without a lesson; start/stop the confirmation pool), middleware, static, routers."""
    settings = settings or get_settings()
    require_shared_key(settings.database_url, settings.secret_key, settings.instructor_password)
    # Made by `python -m app` before its workers start; by the first worker otherwise.
    settings = kept_secrets(settings)
    # Read now: which routes exist, and the OpenAPI title, follow the lessons served.
    try:
        course: ServedLessons | None = load_course(settings.lesson_path)
        error: LessonLoadError | None = None
    except LessonLoadError as exc:
        course, error = None, exc

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if course is None:
            log.error("refusing to start: %s", error)
            raise LessonLoadError(str(error))
        # The torch pool starts in the background: the server answers at once.
        service = ConfirmService(confirm_settings(settings, course))
        lesson_page.prepare(app)
        async with AsyncExitStack() as stack:
            app.state.confirm = service
            await stack.enter_async_context(live_class(app, settings, course))
            await service.start()
            try:
                yield
            finally:
                await service.stop()

    telemetry = settings.opentelemetry  # off: no per-request check for a configured provider
    # This project's /docs (vendored Swagger UI; FastAPI's own pages load from a CDN), no /redoc.
    app = FastAPI(
        title=_title(course),
        version=VERSION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": telemetry, "metrics": telemetry, "logs": telemetry},
    )
    app.state.settings = settings
    app.state.templates = create_templates(settings)
    app.state.route_paths = {}  # web.templating.route_path's
    app.state.lessons = {}  # by address; none when the lesson could not be read
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.mount("/static", AssetFiles(directory=settings.static_dir), name="static")
    app.include_router(docs.router)
    if course is not None:
        if course.folder:
            app.include_router(course_routes.router)
        _serve_lessons(app, course)
    app.include_router(health.router)
    # The live class, beside the lesson (or the course): its routes follow the lesson's, so a
    # lesson's requests match theirs first, as fast as without a class.
    app.include_router(live_routes.forms)
    app.include_router(live_routes.router)
    for unreachable in database.HANDLED:
        app.add_exception_handler(unreachable, database.answer_unavailable)
    app.add_exception_handler(RefusalError, live_routes.refused)
    app.add_exception_handler(Redirect, live_routes.redirected)
    # Server-Sent Events are never compressed (Starlette leaves text/event-stream alone), so the
    # live class's stream is never held back.
    app.add_middleware(GZipMiddleware, minimum_size=500, compresslevel=GZIP_LEVEL)
    app.add_middleware(SameOriginMiddleware)
    app.add_middleware(ParticipantKey, secret_key=settings.secret_key)
    app.add_middleware(
        RequestLimits,
        max_url_bytes=settings.max_url_bytes,
        max_body_bytes=settings.max_body_bytes,
    )
    app.add_middleware(TrustedHostsMiddleware, allowed_hosts=settings.trusted_hosts)
    # Outermost: every answer below, refusals and a 500 included, carries the headers.
    app.add_middleware(SecurityHeadersMiddleware)
    return app
