"""Liveness and what this server runs: the lessons served, the records skipped, torch, whether
the live classes' database answers and how this worker follows the others' changes."""

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.confirm.host import torch_installed
from app.lesson.course import ServedLessons
from app.live.database import reachable
from app.live.notify import Listen, Source

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
            "degraded: a record in the lesson folder could not be served (see skipped), the"
            " classes' database does not answer (see database_reachable), or this worker's"
            " LISTEN is lost (see changes)"
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
    changes: Literal["polled", "listening", "unreachable"] = Field(
        description="How this worker learns of the classes' changes made through the other"
        " workers: polling the database's versions (SQLite), PostgreSQL's LISTEN, or that"
        " LISTEN is lost (it reconnects by itself)"
    )


async def _changes(source: Source) -> Literal["polled", "listening", "unreachable"]:
    if not await source.ping():
        return "unreachable"
    return "listening" if isinstance(source, Listen) else "polled"


@router.get("/healthz", response_model=Health)
async def healthz(request: Request) -> Health:
    """Liveness: the lessons served, records skipped, whether the torch extra is installed,
    whether the classes' database answers (within 2 s) and how changes are followed."""
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
    engine = request.app.state.live_store.engine
    dialect = engine.dialect.name
    database_reachable = await reachable(engine)
    changes = await _changes(request.app.state.live_source)
    healthy = not course.skipped and database_reachable and changes != "unreachable"
    return Health(
        status="ok" if healthy else "degraded",
        lesson_id=only.id if only else None,
        lesson_version=only.version if only else None,
        lessons=lessons,
        skipped=[SkippedRecord(file=s.file, error=s.error) for s in course.skipped],
        torch_installed=torch_installed(),
        database=dialect if dialect in ("sqlite", "postgresql") else "other",
        database_reachable=database_reachable,
        changes=changes,
    )
