"""The lesson page and its quiz answers: one URL, a whole page or (htmx) one question's feedback."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from app import lesson_page
from app.lab.panel import page_context
from app.lesson.quiz import AnswerError, check, read_answer, sign_results
from app.lesson_page import PERSONAL, SCORE_COOKIE, SCORE_COOKIE_AGE, Feedback
from app.templating import templates


@asynccontextmanager
async def _render_once(app: FastAPI) -> AsyncIterator[None]:
    # Runs inside the app's lifespan, after the lesson is loaded.
    lesson_page.prepare(app)
    yield


router = APIRouter(tags=["pages"], lifespan=_render_once)


@router.get("/", response_class=HTMLResponse, name="lesson_page")
async def lesson_page_get(request: Request) -> Response:
    """The whole lesson: text, formulas, tables, quizzes with the score so far, the lab."""
    return lesson_page.render(request, page_context(request.query_params))


# Uptime checks and link checkers ask with HEAD; kept out of the schema (one operation per path).
@router.head("/", include_in_schema=False)
async def lesson_page_head(request: Request) -> Response:
    """The lesson page's headers."""
    return lesson_page.render(request, page_context(request.query_params))


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
                    },
                }
            }
        },
    },
    "responses": {"422": {"description": "The answer cannot be checked; the field is named."}},
}


@router.post("/quiz", response_class=HTMLResponse, name="answer_quiz", openapi_extra=QUIZ_FORM)
async def answer_quiz(request: Request) -> Response:
    """Check one answer: the question's feedback for htmx, else the whole page at that question."""
    lesson = lesson_page.rendered(request)
    results = lesson_page.results(request)
    lab = page_context(request.query_params)
    form = await request.form()
    fields = {name: form.getlist(name) for name in ("question", "choice")}
    try:
        question, chosen = read_answer([q.question for q in lesson.questions], fields)
    except AnswerError as error:
        target, feedback, status = error.question, Feedback(error=error), 422
    else:
        verdict = check(question, chosen)
        results[question.id] = verdict.correct
        target, feedback, status = question, Feedback(verdict=verdict), 200
    if request.headers.get("HX-Request") == "true":
        context = {
            **lesson_page.context(request, lab, results),
            "item": lesson.question(target.id) if target else None,
            "state": feedback,
            "oob_score": True,
        }
        response = templates.TemplateResponse(
            request, "_quiz.html", context, block_name="feedback", status_code=status
        )
    else:
        if target is None:
            context = lesson_page.context(request, lab, results, quiz_error=feedback.error)
        else:
            context = lesson_page.context(request, lab, results, feedback={target.id: feedback})
        response = templates.TemplateResponse(
            request, lesson_page.PAGE_TEMPLATE, context, status_code=status
        )
    response.headers.add_vary_header("HX-Request")
    response.headers["Cache-Control"] = PERSONAL
    if feedback.verdict is not None:
        response.set_cookie(
            SCORE_COOKIE,
            sign_results(
                results, request.app.state.settings.secret_key, request.app.state.lesson.record.id
            ),
            # Each lesson of a course keeps its own score, under its own address.
            path=request.scope.get("root_path", "") + "/",
            max_age=SCORE_COOKIE_AGE,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
    return response
