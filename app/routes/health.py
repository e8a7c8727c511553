"""Liveness and what this server runs: the lessons served, the records skipped, torch, and
whether the live classes' database and broker answer."""

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.confirm.host import torch_installed
from app.lesson.course import ServedLessons
from app.live.database import reachable
from app.live.redis_broker import RedisBroker
from app.live.service import LiveService

router = APIRouter(tags=["health"])


class LessonServed(BaseModel):
    id: str
    version: str
    title: str
    path: str = Field(description="Where the lesson is served, e.g. / or /learn/<slug>/")


class SkippedRecord(BaseModel):
    file: str = Field(description="The record's file name in the lesson folder")
    error: str = Field(description="Why it is not served (the field at fault)")


class Health(BaseModel):
    status: Literal["ok", "degraded"] = Field(
        description=(
            "degraded: a record in the lesson folder could not be served (see skipped), or the"
            " classes' database or Redis does not answer (see database, redis)"
        )
    )
    lesson_id: str | None = Field(description="The lesson, when exactly one is served")
    lesson_version: str | None = Field(description="Its version, when exactly one is served")
    lessons: list[LessonServed]
    skipped: list[SkippedRecord]
    torch_installed: bool
    database: Literal["sqlite", "postgresql", "other"] = Field(
        description="Where the live classes are kept (ATLAS_DATABASE_URL; SQLite by default)"
    )
    database_reachable: bool = Field(description="The database answered a query just now")
    redis: Literal["off", "ok", "unreachable"] = Field(
        description="The live classes' broker: off without ATLAS_REDIS_URL"
    )


async def _redis(live: LiveService) -> Literal["off", "ok", "unreachable"]:
    if not isinstance(live.broker, RedisBroker):
        return "off"
    return "ok" if await live.broker.ping() else "unreachable"


@router.get("/healthz", response_model=Health)
async def healthz(request: Request) -> Health:
    """Liveness: the lessons served, records skipped, whether the torch extra is installed,
    whether the classes' database and Redis answer (each within 2 s)."""
    course: ServedLessons = request.app.state.course
    root = request.scope.get("root_path", "").rstrip("/")
    lessons = [
        LessonServed(
            id=item.lesson.record.id,
            version=item.lesson.record.version,
            title=item.lesson.record.title,
            path=root + course.path(item.slug),
        )
        for item in course.lessons
    ]
    only = course.lessons[0].lesson.record if len(course.lessons) == 1 else None
    live: LiveService = request.app.state.live
    dialect = live.db.engine.dialect.name
    database_reachable = await reachable(live.db.engine)
    redis = await _redis(live)
    healthy = not course.skipped and database_reachable and redis != "unreachable"
    return Health(
        status="ok" if healthy else "degraded",
        lesson_id=only.id if only else None,
        lesson_version=only.version if only else None,
        lessons=lessons,
        skipped=[SkippedRecord(file=s.file, error=s.error) for s in course.skipped],
        torch_installed=torch_installed(),
        database=dialect if dialect in ("sqlite", "postgresql") else "other",
        database_reachable=database_reachable,
        redis=redis,
    )
