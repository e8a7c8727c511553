"""The ASGI application: ``app.main:app``.

``ATLAS_LESSON_PATH`` names one lesson record (the lesson at ``/``, as always) or a folder of
records (a course: the index at ``/``, each lesson at ``/learn/<slug>/`` with its lab's URLs under
it). A lesson is one app either way; in a course it is mounted under its address.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from jinja2_fragments.fastapi import Jinja2Blocks
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Lifespan, Receive, Scope, Send

from app.confirm.host import confirm_settings
from app.confirm.service import ConfirmService
from app.lesson.course import CourseLesson, ServedLessons, load_course
from app.lesson.loader import LessonLoadError
from app.live import database
from app.live import routes as live_routes
from app.live.access import ParticipantKey
from app.live.database import require_shared_key
from app.live.deps import Redirect
from app.live.lifecycle import running as live_class
from app.live.service import RefusalError
from app.routes import api, confirm, docs, health, lab, pages
from app.routes import course as course_routes
from app.settings import Settings, get_settings
from app.web.errors import http_error
from app.web.limits import RequestLimits, validation_error
from app.web.secretkey import signing_key
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


def _serve_lesson(app: FastAPI, course: ServedLessons, item: CourseLesson) -> None:
    """Give ``app`` its lesson: state for the routes, its title, and the routers it needs."""
    app.state.course = course
    app.state.lesson = item.lesson
    app.state.rendered_lesson = item.rendered
    app.state.lesson_parts = item.parts
    app.title = f"{'Atlas lab' if item.parts.any else 'Atlas lesson'}: {item.lesson.record.title}"
    app.include_router(pages.router)
    if item.parts.any:
        app.include_router(lab.router)
    if item.parts.gradient_lab:
        app.include_router(api.router)
    if item.parts.confirm:
        app.include_router(confirm.router)


def _api_app(
    title: str, settings: Settings, templates: Jinja2Blocks, lifespan: Lifespan[FastAPI] | None
) -> FastAPI:
    """A FastAPI app with this project's /docs (vendored Swagger UI; FastAPI's own pages load
    from a CDN, and there is no /redoc), its short 422s, its error pages, its templates and the
    static files."""
    telemetry = settings.opentelemetry  # off: no per-request check for a configured provider
    app = FastAPI(
        title=title,
        version=VERSION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": telemetry, "metrics": telemetry, "logs": telemetry},
    )
    app.state.settings = settings
    app.state.templates = templates
    app.state.route_paths = {}  # web.templating.route_path's
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.mount("/static", AssetFiles(directory=settings.static_dir), name="static")
    app.include_router(docs.router)
    return app


class _OwnAddress:
    """A lesson app mounted under ``/learn/<slug>``: its ``url_for`` names its own routes, under
    its own address (Starlette would resolve them in the outer app, from the outer root)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = dict(scope)
        scope.pop("router", None)
        scope["app_root_path"] = scope.get("root_path", "")
        await self.app(scope, receive, send)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: settings, the lesson or course (read and verified once), lifespan (refuse to
    start without a lesson; start/stop the confirmation pool), middleware, static, routers."""
    settings = settings or get_settings()
    require_shared_key(settings.database_url, settings.secret_key)
    if not settings.secret_key:
        key = signing_key(settings.data_dir)
        settings = settings.model_copy(update={"secret_key": key})
    # Read now: which routes exist, and the OpenAPI title, follow the lessons served.
    try:
        course: ServedLessons | None = load_course(settings.lesson_path)
        error: LessonLoadError | None = None
    except LessonLoadError as exc:
        course, error = None, exc
    mounted: list[FastAPI] = []
    # One environment for the app and every lesson mounted in it: each template compiled once.
    templates = create_templates(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if course is None:
            log.error("refusing to start: %s", error)
            raise LessonLoadError(str(error))
        # The torch pool starts in the background: the server answers at once.
        service = ConfirmService(confirm_settings(settings, course))
        async with AsyncExitStack() as stack:
            for lesson_app in mounted:
                lesson_app.state.confirm = service
                await stack.enter_async_context(lesson_app.router.lifespan_context(lesson_app))
            app.state.confirm = service
            await stack.enter_async_context(live_class(app, settings, course))
            await service.start()
            try:
                yield
            finally:
                await service.stop()

    if course is not None and course.folder:
        app = _api_app(
            f"Atlas lessons: {len(course.lessons)} served", settings, templates, lifespan
        )
        app.state.course = course
        app.include_router(course_routes.router)
        for item in course.lessons:
            lesson_app = _api_app("Atlas lesson", settings, templates, None)
            _serve_lesson(lesson_app, course, item)
            mounted.append(lesson_app)
            app.mount(f"/learn/{item.slug}", _OwnAddress(lesson_app))
    else:
        app = _api_app("Atlas lesson", settings, templates, lifespan)
        if course is not None:
            _serve_lesson(app, course, course.lessons[0])
    app.include_router(health.router)
    # The live class, beside the lesson (or the course): its routes follow the lesson's, so a
    # lesson's requests match theirs first, as fast as without a class.
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


app = create_app()
