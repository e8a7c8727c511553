"""The ASGI application: ``app.main:app``."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from app.confirm.service import ConfirmService
from app.lab import routes as lab
from app.lesson.loader import LessonLoadError, load_lesson
from app.limits import RequestLimits, validation_error
from app.routes import api, confirm, docs, health, pages
from app.secretkey import signing_key
from app.security import SameOriginMiddleware, SecurityHeadersMiddleware
from app.settings import Settings, get_settings
from app.templating import AssetFiles

log = logging.getLogger("atlas")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: settings, lifespan (load the lesson once), middleware, static, routers."""
    settings = settings or get_settings()
    if not settings.secret_key:
        key = signing_key(settings.confirm_runtime_dir)
        settings = settings.model_copy(update={"secret_key": key})

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            app.state.lesson = load_lesson(settings.lesson_path)
        except LessonLoadError as exc:
            log.error("refusing to start: %s", exc)
            raise
        # The torch pool starts in the background: the server answers at once.
        app.state.confirm = ConfirmService(settings)
        await app.state.confirm.start()
        try:
            yield
        finally:
            await app.state.confirm.stop()

    app = FastAPI(
        title="Atlas lab: uneven batches and the global gradient",
        version="0.1.0",
        lifespan=lifespan,
        # /docs is app.routes.docs (vendored Swagger UI); FastAPI's own pages load from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.add_middleware(GZipMiddleware, minimum_size=500)
    app.add_middleware(SameOriginMiddleware)
    app.add_middleware(
        RequestLimits,
        max_url_bytes=settings.max_url_bytes,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.trusted_hosts)
    # Outermost: every answer below, refusals and a 500 included, carries the headers.
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.mount("/static", AssetFiles(directory=settings.static_dir), name="static")
    for module in (pages, lab, api, confirm, health, docs):
        app.include_router(module.router)
    return app


app = create_app()
