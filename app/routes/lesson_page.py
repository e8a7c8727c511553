"""The lesson page: the lesson (rendered once at start), this visitor's score, and the lab.

It knows nothing of the lab's state: callers pass the lab's template context in (from
``app.lab.panel.page_context``), so the lab's routes and the pages' routes both render the page
through here and nothing below imports them.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from jinja2_fragments.fastapi import Jinja2Blocks
from markupsafe import Markup
from starlette.responses import Response

from app.lesson.attempts import Attempts, Progress, progress, read_log
from app.lesson.quiz import AnswerError, read_results, score
from app.lesson.render import RenderedLesson, RenderedSection
from app.web.templating import templates_of

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
    rendered once, through the template a request would use. A question's form names the app's
    address (a lesson in a course is mounted under its own), so questions render per request;
    so does a section's 'See it in the lab' link (templates/lesson.html)."""
    template = templates.get_template(SECTION_TEMPLATE)
    # Markup: the template's own output, escaped as it was rendered.
    return {
        section.id: Markup(template.render(node=section, state=None))
        for section in _sections(lesson.sections)
        if not section.question
    }


def prepare(app: FastAPI) -> None:
    """Render each section's text once (the lesson was loaded and rendered once, with its
    course)."""
    app.state.section_html = _section_html(app.state.templates, app.state.rendered_lesson)


def rendered(request: Request) -> RenderedLesson:
    lesson: RenderedLesson = request.app.state.rendered_lesson
    return lesson


def results(request: Request) -> dict[str, bool]:
    """This visitor's verified answers (a forged or stale cookie reads as none)."""
    questions = [q.question for q in rendered(request).questions]
    secret = request.app.state.settings.secret_key
    lesson_id = request.app.state.lesson.record.id
    return read_results(request.cookies.get(SCORE_COOKIE), secret, questions, lesson_id)


def attempts(request: Request) -> dict[str, Attempts]:
    """This visitor's attempts per question (a forged or stale cookie reads as none)."""
    questions = [q.question for q in rendered(request).questions]
    secret = request.app.state.settings.secret_key
    return read_log(request.cookies.get(ATTEMPTS_COOKIE), secret, questions)


def feedback_for(request: Request, log: Mapping[str, Attempts]) -> dict[str, Feedback]:
    """Each attempted question's feedback, as it showed when last answered."""
    found: dict[str, Feedback] = {}
    for item in rendered(request).questions:
        shown = progress(item.question, log.get(item.question.id, Attempts()))
        if shown is not None:
            found[item.question.id] = Feedback(progress=shown)
    return found


def context(
    request: Request,
    lab: Mapping[str, Any],
    answers: Mapping[str, bool],
    feedback: Mapping[str, Feedback] | None = None,
    quiz_error: AnswerError | None = None,
) -> dict[str, Any]:
    """The whole page's template context: the lab's (``lab``), the lesson's and the score's."""
    lesson = rendered(request)
    return {
        **lab,
        "lesson": lesson,
        "lab_after": request.app.state.lesson_parts.after_section,
        "lesson_parts": request.app.state.lesson_parts,
        "lab_available": request.app.state.lesson_parts.any,
        "section_html": request.app.state.section_html,
        "feedback": feedback or {},
        "quiz_error": quiz_error,
        "score": score(answers, [q.question for q in lesson.questions]),
    }


def render(request: Request, lab: Mapping[str, Any], status_code: int | None = None) -> Response:
    """The whole lesson page for a GET, with the lab in the state its context was built from.

    A lab state that cannot be computed still renders, with its message: 422.
    """
    page = context(request, lab, results(request), feedback_for(request, attempts(request)))
    status = status_code if status_code is not None else page.get("lab_status_code", 200)
    response = templates_of(request).TemplateResponse(
        request, PAGE_TEMPLATE, page, status_code=status
    )
    response.headers["Cache-Control"] = PERSONAL
    return response
