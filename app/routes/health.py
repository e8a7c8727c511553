"""Liveness and what this server runs: the lessons served, the records skipped, torch."""

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.confirm.host import torch_installed
from app.lesson.course import ServedLessons

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
        description="degraded: a record in the lesson folder could not be served (see skipped)"
    )
    lesson_id: str | None = Field(description="The lesson, when exactly one is served")
    lesson_version: str | None = Field(description="Its version, when exactly one is served")
    lessons: list[LessonServed]
    skipped: list[SkippedRecord]
    torch_installed: bool


def lesson_path(course: ServedLessons, slug: str) -> str:
    """The path a lesson is served at: the root for a lone file, else ``/learn/<slug>/``."""
    return f"/learn/{slug}/" if course.folder else "/"


@router.get("/healthz", response_model=Health)
def healthz(request: Request) -> Health:
    """Liveness: the lessons served, records skipped, whether the torch extra is installed."""
    course: ServedLessons = request.app.state.course
    root = request.scope.get("root_path", "").rstrip("/")
    lessons = [
        LessonServed(
            id=item.lesson.record.id,
            version=item.lesson.record.version,
            title=item.lesson.record.title,
            path=root + lesson_path(course, item.slug),
        )
        for item in course.lessons
    ]
    only = course.lessons[0].lesson.record if len(course.lessons) == 1 else None
    return Health(
        status="degraded" if course.skipped else "ok",
        lesson_id=only.id if only else None,
        lesson_version=only.version if only else None,
        lessons=lessons,
        skipped=[SkippedRecord(file=s.file, error=s.error) for s in course.skipped],
        torch_installed=torch_installed(),
    )
