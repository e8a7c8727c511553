"""The lesson page and its quiz answers: one URL, a whole page or (htmx) one question's feedback."""

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from jinja2 import TemplateNotFound
from markupsafe import Markup
from starlette.responses import Response

from app.lesson.quiz import (
    AnswerError,
    Verdict,
    check,
    read_answer,
    read_results,
    score,
    sign_results,
)
from app.lesson.render import RenderedLesson
from app.routes import lab
from app.templating import Lru, RenderCache, origin, templates

SCORE_COOKIE = "atlas_quiz"
SCORE_COOKIE_AGE = 60 * 60 * 24 * 365
LAB_TEMPLATE = "_lesson_lab.html"
# The page shows this visitor's score (from the cookie): no shared cache may keep it.
PERSONAL = "private, no-cache"


def _template_exists(name: str) -> bool:
    try:
        templates.get_template(name)
    except TemplateNotFound:
        return False
    return True


# Whole pages kept per app (about 40 KB each), and one skeleton per origin (see Skeleton).
PAGE_CACHE_BYTES = 8 * 2**20
SKELETON_CACHE_BYTES = 2 * 2**20
# Where a per-request part goes in the skeleton; NUL never occurs in the rendered lesson.
SLOT = "\x00slot:{}\x00"
SLOT_PATTERN = re.compile(r"\x00slot:(\w+)\x00")
SLOTS = ("score", "lab")


@asynccontextmanager
async def _render_once(app: FastAPI) -> AsyncIterator[None]:
    # Runs inside the app's lifespan, after the lesson is loaded and rendered once (the course).
    app.state.lab_available = app.state.lesson_parts.any and _template_exists(LAB_TEMPLATE)
    app.state.lesson_pages = RenderCache(PAGE_CACHE_BYTES)
    app.state.page_skeletons = Lru[Skeleton](SKELETON_CACHE_BYTES, Skeleton.size)
    yield


router = APIRouter(tags=["pages"], lifespan=_render_once)


@dataclass(frozen=True, slots=True)
class Feedback:
    """What one question shows after a submission: a verdict, or why none could be given."""

    verdict: Verdict | None = None
    error: AnswerError | None = None


@dataclass(frozen=True, slots=True)
class Skeleton:
    """The lesson page as rendered once: its fixed text, split where a per-request part goes.

    ``texts`` has one more entry than ``names``; the page is texts[0], the part for names[0],
    texts[1], … Everything but the score and the lab is the same for every GET (no feedback
    shows before an answer is posted), so a request renders only those two.
    """

    texts: tuple[str, ...]
    names: tuple[str, ...]

    @classmethod
    def split(cls, html: str) -> "Skeleton":
        pieces = SLOT_PATTERN.split(html)
        names = tuple(pieces[1::2])
        if not set(names) <= set(SLOTS) or len(set(names)) != len(names):
            raise ValueError(f"the page's slots are {names}, expected each of {SLOTS} at most once")
        return cls(tuple(pieces[0::2]), names)

    def fill(self, parts: Mapping[str, str]) -> str:
        out = [self.texts[0]]
        for name, text in zip(self.names, self.texts[1:], strict=True):
            out += (parts[name], text)
        return "".join(out)

    def size(self) -> int:
        return sum(len(text) for text in self.texts)


def _rendered(request: Request) -> RenderedLesson:
    rendered: RenderedLesson = request.app.state.rendered_lesson
    return rendered


def _context(
    request: Request,
    results: Mapping[str, bool],
    feedback: Mapping[str, Feedback] | None = None,
    quiz_error: AnswerError | None = None,
    query: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    lesson = _rendered(request)
    questions = [q.question for q in lesson.questions]
    return {
        **lab.page_context(request.query_params if query is None else query),
        "lesson": lesson,
        "lab_after": request.app.state.lesson_parts.after_section,
        "lesson_parts": request.app.state.lesson_parts,
        "lab_available": request.app.state.lab_available,
        "feedback": feedback or {},
        "quiz_error": quiz_error,
        "score": score(results, questions),
    }


def page_context(request: Request, query: Mapping[str, str]) -> dict[str, Any]:
    """The whole page's context with the lab in the state of ``query`` (e.g. a posted form)."""
    return _context(request, _results(request), query=query)


def _results(request: Request) -> dict[str, bool]:
    questions = [q.question for q in _rendered(request).questions]
    secret = request.app.state.settings.secret_key
    lesson_id = request.app.state.lesson.record.id
    return read_results(request.cookies.get(SCORE_COOKIE), secret, questions, lesson_id)


def _skeleton(request: Request) -> Skeleton:
    """The page's skeleton for this request's origin (the URLs in it are absolute)."""
    skeletons: Lru[Skeleton] = request.app.state.page_skeletons
    key = origin(request)
    skeleton = skeletons.get(key)
    if skeleton is None:
        context = {
            **_context(request, {}, query={}),
            "request": request,
            "slots": {name: Markup(SLOT.format(name)) for name in SLOTS},
        }
        skeleton = Skeleton.split(templates.get_template("lesson.html").render(context))
        skeletons.put(key, skeleton)
    return skeleton


def _render_page(request: Request, results: Mapping[str, bool]) -> Response:
    context = {**_context(request, results), "request": request}
    parts = {
        "score": templates.get_template("_quiz_score.html").render(context),
        "lab": (
            templates.get_template(LAB_TEMPLATE).render(context)
            if request.app.state.lab_available
            else ""
        ),
    }
    html = _skeleton(request).fill(parts)
    # A lab state in the query that cannot be computed still renders, with its message: 422.
    status = context.get("lab_status_code", 200)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": PERSONAL})


def render_page(request: Request) -> Response:
    """The whole lesson page for a GET, kept for the next request with the same key.

    The key is what the page is rendered from: the raw query, this visitor's verified results
    (never the cookie itself: a forged or stale cookie reads as no results), the origin of its
    URLs, and whether the confirmation panel is off.
    """
    results = _results(request)
    key = (
        request.scope["query_string"],
        tuple(sorted(results.items())),
        *origin(request),
        request.app.state.confirm.off_message,
    )
    pages: RenderCache = request.app.state.lesson_pages
    return pages.answer(key, lambda: _render_page(request, results))


@router.get("/", response_class=HTMLResponse, name="lesson_page")
async def lesson_page(request: Request) -> Response:
    """The whole lesson: text, formulas, tables, quizzes with the score so far, the lab."""
    return render_page(request)


# Uptime checks and link checkers ask with HEAD; kept out of the schema (one operation per path).
@router.head("/", include_in_schema=False)
async def lesson_page_head(request: Request) -> Response:
    """The lesson page's headers."""
    return render_page(request)


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
    lesson = _rendered(request)
    results = _results(request)
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
            **_context(request, results),
            "item": lesson.question(target.id) if target else None,
            "state": feedback,
            "oob_score": True,
        }
        response = templates.TemplateResponse(
            request, "_quiz.html", context, block_name="feedback", status_code=status
        )
    else:
        if target is None:
            context = _context(request, results, quiz_error=feedback.error)
        else:
            context = _context(request, results, feedback={target.id: feedback})
        response = templates.TemplateResponse(request, "lesson.html", context, status_code=status)
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
