"""The lesson page: the lesson (rendered once at start), this visitor's score, and the lab.

It knows nothing of the lab's state: callers pass the lab's template context in (from
``app.lab.panel.page_context``), so the lab's routes and the pages' routes both render the page
through here and nothing below imports them.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from jinja2_fragments.fastapi import Jinja2Blocks
from markupsafe import Markup
from starlette.responses import Response

from app.lesson.attempts import Attempts, Progress, progress, read_log
from app.lesson.course import CourseLesson
from app.lesson.quiz import AnswerError, read_results, score
from app.lesson.render import RenderedLesson, RenderedSection
from app.web.templating import section_of, templates_of

SCORE_COOKIE = "atlas_quiz"
# Every question's attempts (options chosen, answer shown): its feedback after a reload.
ATTEMPTS_COOKIE = "atlas_quiz_attempts"
SCORE_COOKIE_AGE = 60 * 60 * 24 * 365
PAGE_TEMPLATE = "lesson.html"
SECTION_TEMPLATE = "_section_body.html"
# The page shows this visitor's score (from the cookie): no shared cache may keep it.
PERSONAL = "private, no-cache"


@dataclass(frozen=True, slots=True)
class Feedback:
    """What one question shows: how its attempts went, or why an answer could not be checked."""

    progress: Progress | None = None
    error: AnswerError | None = None


def _sections(sections: Iterable[RenderedSection]) -> Iterator[RenderedSection]:
    for section in sections:
        yield section
        yield from _sections(section.children)


def _section_html(templates: Jinja2Blocks, lesson: RenderedLesson) -> dict[str, Markup]:
    """The text of each section without a question, as HTML: the same for every request, so
    rendered once, through the template a request would use. A question's form names its
    lesson's address (a course's lessons each have their own), so questions render per request;
    so does a section's 'See it in the lab' link (templates/lesson.html)."""
    template = templates.get_template(SECTION_TEMPLATE)
    # Markup: the template's own output, escaped as it was rendered.
    return {
        section.id: Markup(template.render(node=section, state=None))
        for section in _sections(lesson.sections)
        if not section.question
    }


def prepare(app: FastAPI) -> None:
    """Render each lesson's section texts once (each lesson was loaded and rendered once, with
    its course), by its slug."""
    lessons: Mapping[str, CourseLesson] = app.state.lessons
    app.state.section_html = {
        item.slug: _section_html(app.state.templates, item.rendered) for item in lessons.values()
    }


async def served_lesson(request: Request) -> CourseLesson:
    """The lesson a route answers for: the one whose address the request is under (a lesson's
    routes are included under its address alone)."""
    lessons: Mapping[str, CourseLesson] = request.app.state.lessons
    section = section_of(request.scope)
    assert section is not None, "a lesson's route outside every lesson's address"
    return lessons[section]


LessonDep = Annotated[CourseLesson, Depends(served_lesson)]


def results(request: Request, lesson: CourseLesson) -> dict[str, bool]:
    """This visitor's verified answers (a forged or stale cookie reads as none)."""
    questions = [q.question for q in lesson.rendered.questions]
    secret = request.app.state.settings.secret_key
    return read_results(
        request.cookies.get(SCORE_COOKIE), secret, questions, lesson.lesson.record.id
    )


def attempts(request: Request, lesson: CourseLesson) -> dict[str, Attempts]:
    """This visitor's attempts per question (a forged or stale cookie reads as none)."""
    questions = [q.question for q in lesson.rendered.questions]
    secret = request.app.state.settings.secret_key
    return read_log(request.cookies.get(ATTEMPTS_COOKIE), secret, questions)


def feedback_for(lesson: CourseLesson, log: Mapping[str, Attempts]) -> dict[str, Feedback]:
    """Each attempted question's feedback, as it showed when last answered."""
    found: dict[str, Feedback] = {}
    for item in lesson.rendered.questions:
        shown = progress(item.question, log.get(item.question.id, Attempts()))
        if shown is not None:
            found[item.question.id] = Feedback(progress=shown)
    return found


def context(
    request: Request,
    lesson: CourseLesson,
    lab: Mapping[str, Any],
    answers: Mapping[str, bool],
    feedback: Mapping[str, Feedback] | None = None,
    quiz_error: AnswerError | None = None,
) -> dict[str, Any]:
    """The whole page's template context: the lab's (``lab``), the lesson's and the score's."""
    return {
        **lab,
        "lesson": lesson.rendered,
        "lab_after": lesson.parts.after_section,
        "lesson_parts": lesson.parts,
        "lab_available": lesson.parts.any,
        "section_html": request.app.state.section_html[lesson.slug],
        "feedback": feedback or {},
        "quiz_error": quiz_error,
        "score": score(answers, [q.question for q in lesson.rendered.questions]),
    }


def render(
    request: Request, lesson: CourseLesson, lab: Mapping[str, Any], status_code: int | None = None
) -> Response:
    """The whole lesson page for a GET, with the lab in the state its context was built from.

    A lab state that cannot be computed still renders, with its message: 422.
    """
    log = attempts(request, lesson)
    page = context(request, lesson, lab, results(request, lesson), feedback_for(lesson, log))
    status = status_code if status_code is not None else page.get("lab_status_code", 200)
    response = templates_of(request).TemplateResponse(
        request, PAGE_TEMPLATE, page, status_code=status
    )
    response.headers["Cache-Control"] = PERSONAL
    return response
