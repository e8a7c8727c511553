"""The lesson page and its quiz answers: one URL, a whole page or (htmx) one question's feedback."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from app.lab.panel import page_context
from app.lesson.attempts import Attempts, progress, sign_log
from app.lesson.quiz import AnswerError, check, read_answer, read_question, sign_results
from app.routes import lesson_page
from app.routes.lesson_page import (
    ATTEMPTS_COOKIE,
    PERSONAL,
    SCORE_COOKIE,
    SCORE_COOKIE_AGE,
    Feedback,
    LessonDep,
)
from app.web.limits import BODY_RESPONSES
from app.web.templating import route_path, templates_of

router = APIRouter(tags=["pages"])


# Uptime checks and link checkers ask with HEAD; kept out of the schema (one operation per path).
@router.head("/", include_in_schema=False)
@router.get("/", response_class=HTMLResponse, name="lesson_page")
async def lesson_page_get(request: Request, lesson: LessonDep) -> Response:
    """The whole lesson: text, formulas, tables, quizzes with the score so far, the lab."""
    return lesson_page.render(request, lesson, page_context(request.query_params))


# The form is read by hand (to answer every fault with a message at the question); this
# documents it in the OpenAPI schema.
QUIZ_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "required": ["question", "choice"],
                    "properties": {
                        "question": {"type": "string", "description": "e.g. section-11"},
                        "choice": {"type": "string", "description": "option number from 1"},
                        "reveal": {
                            "type": "string",
                            "description": "any value: show the answer (no choice needed)",
                        },
                    },
                }
            }
        },
    },
    "responses": {
        "303": {"description": "Without htmx: the lesson page at the question."},
        "422": {"description": "The answer cannot be checked; the field is named."},
    },
}


@router.post(
    "/quiz",
    response_class=HTMLResponse,
    name="answer_quiz",
    openapi_extra=QUIZ_FORM,
    responses=BODY_RESPONSES,
)
async def answer_quiz(request: Request, lesson: LessonDep) -> Response:
    """Check one answer (or show the answer): the question's feedback for htmx, else a 303 to the
    page at that question, which shows the same feedback from the attempts cookie."""
    questions = [q.question for q in lesson.rendered.questions]
    results = lesson_page.results(request, lesson)
    log = lesson_page.attempts(request, lesson)
    lab = page_context(request.query_params)
    form = await request.form()
    fields = {name: form.getlist(name) for name in ("question", "choice", "reveal")}
    # The lesson's own page: where an answer without htmx goes back to, and its cookies' path.
    page = route_path(request, "lesson_page")
    try:
        if fields["reveal"]:
            question = read_question(questions, fields)
            log[question.id] = log.get(question.id, Attempts()).revealed()
            # Shown before any answer: the score counts it as not correct.
            results.setdefault(question.id, False)
        else:
            question, chosen = read_answer(questions, fields)
            log[question.id] = log.get(question.id, Attempts()).answered(chosen)
            # The score records the first answer only.
            results.setdefault(question.id, check(question, chosen).correct)
    except AnswerError as error:
        target, feedback, status = error.question, Feedback(error=error), 422
    else:
        target, status = question, 200
        feedback = Feedback(progress=progress(question, log[question.id]))
    if request.headers.get("HX-Request") == "true":
        context = {
            **lesson_page.context(request, lesson, lab, results),
            "item": lesson.rendered.question(target.id) if target else None,
            "state": feedback,
            "oob_score": True,
        }
        response: Response = templates_of(request).TemplateResponse(
            request, "_quiz.html", context, block_name="feedback", status_code=status
        )
    elif status == 200 and target is not None:
        # Post/redirect/get: the address stays the lesson's, at the question.
        response = RedirectResponse(f"{page}#{target.id}", status_code=303)
    else:
        if target is None:
            context = lesson_page.context(request, lesson, lab, results, quiz_error=feedback.error)
        else:
            shown = lesson_page.feedback_for(lesson, log)
            context = lesson_page.context(
                request, lesson, lab, results, feedback={**shown, target.id: feedback}
            )
        response = templates_of(request).TemplateResponse(
            request, lesson_page.PAGE_TEMPLATE, context, status_code=status
        )
    response.headers.add_vary_header("HX-Request")
    response.headers["Cache-Control"] = PERSONAL
    if status == 200:
        secret = request.app.state.settings.secret_key
        lesson_id = lesson.lesson.record.id
        for name, value in (
            (SCORE_COOKIE, sign_results(results, secret, lesson_id)),
            (ATTEMPTS_COOKIE, sign_log(log, secret)),
        ):
            response.set_cookie(
                name,
                value,
                # Each lesson of a course keeps its own score and attempts, under its own address.
                path=page,
                max_age=SCORE_COOKIE_AGE,
                httponly=True,
                samesite="lax",
                secure=request.url.scheme == "https",
            )
    return response
