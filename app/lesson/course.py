"""The lessons a server serves: one record file, or a folder of them (a course).

Each record is verified as :func:`app.lesson.loader.load_lesson` verifies one (hash, length,
offsets) and rendered once. In a folder, a record that fails either is reported and skipped and
the others are served; a lone file that fails stops the server, as does a folder with nothing
to serve. Each lesson of a folder gets an address segment (its slug), and links between lessons
of the same folder ("Continue exploring") point to the local copy.
"""

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from app.lesson.loader import Lesson, LessonLoadError, load_lesson
from app.lesson.markdown import link_key
from app.lesson.parts import LessonParts, parts_for
from app.lesson.quiz import QuizParseError
from app.lesson.render import RenderedLesson, render_lesson

log = logging.getLogger("atlas")

_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$")
_ID_PREFIX = "atlas-lesson-"


@dataclass(frozen=True, slots=True)
class CourseLesson:
    """One lesson served: its record, its rendering, its interactive parts and its slug."""

    slug: str
    lesson: Lesson
    rendered: RenderedLesson
    parts: LessonParts


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record in the folder that is not served, and why (``error`` names the field)."""

    file: str
    error: str


@dataclass(frozen=True, slots=True)
class ServedLessons:
    """What the server serves. ``folder`` False: one lesson at the site's root, as always."""

    lessons: tuple[CourseLesson, ...]
    skipped: tuple[Skipped, ...]
    folder: bool

    def lesson(self, slug: str) -> CourseLesson | None:
        return next((item for item in self.lessons if item.slug == slug), None)

    def path(self, slug: str) -> str:
        """Where a lesson is served: the root for a lone file, else ``/learn/<slug>/``."""
        return f"/learn/{slug}/" if self.folder else "/"


def slug_of(lesson: Lesson) -> str:
    """The lesson's address segment: the last segment of its canonical URL, else of its id.

    ``https://semiaifoundry.com/learn/atlas/floating-point-reduction-order/`` →
    ``floating-point-reduction-order``.
    """
    record = lesson.record
    segments = [s for s in urlsplit(record.canonical_url).path.split("/") if s]
    for candidate in (segments[-1] if segments else "", record.id.removeprefix(_ID_PREFIX)):
        if _SLUG.match(candidate):
            return candidate
    raise LessonLoadError(
        f"{lesson.path}: field id: {record.id!r} gives no address segment"
        " (lower-case letters, digits and hyphens)"
    )


def load_course(path: Path) -> ServedLessons:
    """The lesson at ``path``, or every ``*.json`` record in the folder ``path``.

    Raises :class:`LessonLoadError` for a lone file that cannot be served, or for a folder in
    which no record can.
    """
    if not path.is_dir():
        lesson = load_lesson(path)
        rendered = render_lesson(lesson)
        return ServedLessons(
            (CourseLesson("", lesson, rendered, parts_for(lesson)),), (), folder=False
        )
    loaded: list[tuple[str, Lesson]] = []
    skipped: list[Skipped] = []
    for file in sorted(path.glob("*.json")):
        try:
            lesson = load_lesson(file)
            slug = slug_of(lesson)
        except LessonLoadError as exc:
            # The message without the server's folder: /healthz shows it.
            skipped.append(Skipped(file.name, str(exc).removeprefix(f"{file}: ")))
            continue
        taken = next(
            (other for s, other in loaded if s == slug or other.record.id == lesson.record.id), None
        )
        if taken is not None:
            message = f"lesson {lesson.record.id} ({slug}) is already served from {taken.path.name}"
            skipped.append(Skipped(file.name, message))
            continue
        loaded.append((slug, lesson))
    local = {link_key(lesson.record.canonical_url): f"../{slug}/" for slug, lesson in loaded}
    lessons: list[CourseLesson] = []
    for slug, lesson in loaded:
        try:
            rendered = render_lesson(lesson, local_links=local)
        except QuizParseError as exc:
            skipped.append(Skipped(lesson.path.name, f"field content: {exc}"))
            continue
        lessons.append(CourseLesson(slug, lesson, rendered, parts_for(lesson)))
    for item in skipped:
        log.error("skipping the lesson record %s: %s", path / item.file, item.error)
    if not lessons:
        raise LessonLoadError(f"{path}: no lesson record in this folder can be served")
    return ServedLessons(tuple(lessons), tuple(skipped), folder=True)
