"""The ASGI application: ``app.main:app``."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.middleware.gzip import GZipMiddleware

from app.confirm.service import ConfirmService
from app.lab import routes as lab
from app.lesson.loader import LessonLoadError, load_lesson
from app.routes import api, confirm, health, pages
from app.security import SecurityHeadersMiddleware
from app.settings import Settings, get_settings
from app.templating import AssetFiles

log = logging.getLogger("atlas")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: settings, lifespan (load the lesson once), middleware, static, routers."""
    settings = settings or get_settings()

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
    )
    app.state.settings = settings
    app.add_middleware(GZipMiddleware, minimum_size=500)
    app.add_middleware(SecurityHeadersMiddleware)
    app.mount("/static", AssetFiles(directory=settings.static_dir), name="static")
    for module in (pages, lab, api, confirm, health):
        app.include_router(module.router)
    return app


app = create_app()
