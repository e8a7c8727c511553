"""The lesson page and the quiz answers through the real app: full page, htmx fragment, score."""

import json
import re

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient
from httpx import Response

from app.lesson.attempts import Attempts, sign_log
from app.lesson.loader import load_lesson
from app.lesson.quiz import sign_results
from app.routes.lesson_page import ATTEMPTS_COOKIE, SCORE_COOKIE
from app.settings import DEFAULT_LESSON
from tests.records import parse_questions

LESSON = load_lesson(DEFAULT_LESSON)
QUESTIONS = parse_questions(LESSON.sections)
HX = {"HX-Request": "true"}


@pytest.fixture
def fresh(client: TestClient) -> TestClient:
    """The shared client with no quiz cookie: every test starts from an empty score."""
    client.cookies.clear()
    return client


def soup_of(response: Response) -> BeautifulSoup:
    return BeautifulSoup(response.text, "html.parser")


def text(tag: Tag) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())


def score_text(soup: BeautifulSoup) -> str:
    score = soup.find(id="quiz-score")
    assert isinstance(score, Tag)
    return text(score)


def answer(client: TestClient, question: str, choice: str, htmx: bool = False) -> Response:
    data = {"question": question, "choice": choice}
    return client.post("/quiz", data=data, headers=HX if htmx else {})


def test_each_question_is_a_form_with_labelled_radios(fresh: TestClient) -> None:
    soup = soup_of(fresh.get("/"))
    for question in QUESTIONS:
        box = soup.find(id=f"quiz-{question.id}")
        assert isinstance(box, Tag), question.id
        form = box.find("form")
        assert isinstance(form, Tag)
        assert form["method"] == "post"
        assert str(form["action"]).endswith(f"/quiz#{question.id}")
        assert str(form["hx-post"]).endswith("/quiz")
        assert form["hx-target"] == f"#feedback-{question.id}"
        hidden = form.find("input", attrs={"name": "question"})
        assert isinstance(hidden, Tag)
        assert hidden["value"] == question.id
        fieldset = form.find("fieldset")
        assert isinstance(fieldset, Tag)
        assert fieldset.legend is not None
        assert f"Question {question.number} of 3" in text(fieldset.legend)
        radios = fieldset.find_all("input", attrs={"type": "radio", "name": "choice"})
        assert [r["value"] for r in radios] == ["1", "2", "3"]
        labels = [text(r.find_parent("label")) for r in radios]
        assert labels == list(question.options)
        assert not any(r.has_attr("checked") for r in radios)
        assert form.find("button", attrs={"type": "submit"}) is not None
        # The heading above the form is the question itself.
        heading = soup.find(id=question.id)
        assert isinstance(heading, Tag)
        assert text(heading) == question.prompt


def test_page_never_carries_answers_before_submission(fresh: TestClient) -> None:
    page = fresh.get("/").text
    assert "Answer and reasoning" not in page
    for question in QUESTIONS:
        assert question.reasoning not in page
        assert "Correct." not in page
        assert "Incorrect." not in page
    soup = soup_of(fresh.get("/"))
    for question in QUESTIONS:
        box = soup.find(id=f"quiz-{question.id}")
        assert isinstance(box, Tag)
        for tag in box.find_all(True):
            assert not [a for a in tag.attrs if a.startswith("data-")], tag
        feedback = box.find(id=f"feedback-{question.id}")
        assert isinstance(feedback, Tag)
        assert text(feedback) == ""
        assert box.find("details") is None
        assert box.find(attrs={"hidden": True}) is None
    assert score_text(soup) == "Score: 0 of 3 correct (0 of 3 answered)"


def test_right_answer_without_htmx_returns_the_page_at_the_question(fresh: TestClient) -> None:
    response = answer(fresh, "section-11", "2")
    # Post/redirect/get: a 303 to the lesson page at the question (never a page at /quiz).
    (redirect,) = response.history
    assert redirect.status_code == 303
    assert redirect.headers["location"] == "/#section-11"
    assert "HX-Request" in redirect.headers["vary"]
    assert response.status_code == 200
    assert response.url.path == "/"
    soup = soup_of(response)
    assert soup.find("h1") is not None  # the whole page
    feedback = soup.find(id="feedback-section-11")
    assert isinstance(feedback, Tag)
    assert text(feedback).startswith("Correct. The answer is “2.5”.")
    assert QUESTIONS[0].reasoning in text(feedback)
    chosen = soup.find("input", attrs={"name": "choice", "value": "2", "checked": True})
    assert isinstance(chosen, Tag)
    assert chosen.find_parent(id="quiz-section-11") is not None
    # Only the answered question shows feedback.
    for other in ("section-12", "section-13"):
        other_feedback = soup.find(id=f"feedback-{other}")
        assert isinstance(other_feedback, Tag)
        assert text(other_feedback) == ""
    assert score_text(soup) == "Score: 1 of 3 correct (1 of 3 answered)"
    assert SCORE_COOKIE in fresh.cookies


def test_wrong_answer_with_htmx_returns_only_the_feedback(fresh: TestClient) -> None:
    response = answer(fresh, "section-11", "1", htmx=True)
    assert response.status_code == 200
    assert "HX-Request" in response.headers["vary"]
    soup = soup_of(response)
    assert soup.find("html") is None
    assert soup.find("h1") is None
    assert soup.find("form") is None
    verdict = soup.find(class_="verdict")
    assert isinstance(verdict, Tag)
    # A first wrong answer gets a second try: the answer and the reasoning stay hidden.
    assert text(verdict).startswith("Not quite. “2” is not the answer.")
    assert "2.5" not in text(soup).replace("(1 of 3 answered)", "")
    assert QUESTIONS[0].reasoning not in text(soup)
    score = soup.find(id="quiz-score")
    assert isinstance(score, Tag)
    assert score["hx-swap-oob"] == "true"
    assert text(score) == "Score: 0 of 3 correct (1 of 3 answered)"
    # The second wrong answer shows the answer and why.
    second = soup_of(answer(fresh, "section-11", "3", htmx=True))
    assert text(second).startswith("The answer is “2.5”. You chose “4”.")
    assert "The score counts your first answer: not correct." in text(second)
    assert QUESTIONS[0].reasoning in text(second)


def test_right_answer_with_htmx(fresh: TestClient) -> None:
    response = answer(fresh, "section-13", "2", htmx=True)
    soup = soup_of(response)
    assert text(soup).startswith("Correct. The answer is “No”.")
    assert score_text(soup) == "Score: 1 of 3 correct (1 of 3 answered)"


def test_wrong_answer_without_htmx(fresh: TestClient) -> None:
    response = answer(fresh, "section-12", "2")
    assert response.status_code == 200
    feedback = soup_of(response).find(id="feedback-section-12")
    assert isinstance(feedback, Tag)
    assert text(feedback).startswith("Not quite. “2 and 6” is not the answer.")


def test_score_is_kept_in_the_signed_cookie(fresh: TestClient) -> None:
    answer(fresh, "section-11", "2", htmx=True)
    answer(fresh, "section-12", "1", htmx=True)
    last = answer(fresh, "section-13", "2", htmx=True)
    assert score_text(soup_of(last)) == "Score: 2 of 3 correct"
    assert score_text(soup_of(fresh.get("/"))) == "Score: 2 of 3 correct"
    # The score records the first answer: a later one, right or wrong, does not change it.
    answer(fresh, "section-12", "3")
    assert score_text(soup_of(fresh.get("/"))) == "Score: 2 of 3 correct"
    answer(fresh, "section-11", "3")
    assert score_text(soup_of(fresh.get("/"))) == "Score: 2 of 3 correct"


def test_cookie_attributes(fresh: TestClient) -> None:
    headers = answer(fresh, "section-11", "2").history[0].headers.get_list("set-cookie")
    assert sorted(h.split("=")[0] for h in headers) == sorted([SCORE_COOKIE, ATTEMPTS_COOKIE])
    for header in headers:
        assert "HttpOnly" in header
        assert "SameSite=lax" in header
        assert "Path=/" in header


@pytest.mark.parametrize(
    "forged",
    [
        "garbage",
        sign_results({"section-11": True}, "not-the-server-key", LESSON.record.id),
        "e30." + "A" * 27,
        "",
    ],
)
def test_tampered_cookie_is_ignored(fresh: TestClient, forged: str) -> None:
    fresh.cookies.set(SCORE_COOKIE, forged)
    page = fresh.get("/")
    assert page.status_code == 200
    assert score_text(soup_of(page)) == "Score: 0 of 3 correct (0 of 3 answered)"
    response = answer(fresh, "section-11", "2", htmx=True)
    assert response.status_code == 200
    assert score_text(soup_of(response)) == "Score: 1 of 3 correct (1 of 3 answered)"


def test_cookie_signed_with_the_server_key_is_trusted(fresh: TestClient) -> None:
    key = fresh.app.state.settings.secret_key  # type: ignore[attr-defined]
    results = {"section-11": True, "section-12": True}
    fresh.cookies.set(SCORE_COOKIE, sign_results(results, key, LESSON.record.id))
    assert score_text(soup_of(fresh.get("/"))) == "Score: 2 of 3 correct (2 of 3 answered)"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"question": "section-11"}, "choice", "no option was chosen"),
        ({"question": "section-11", "choice": "7"}, "choice", "option 7 does not exist"),
        ({"question": "section-11", "choice": "0"}, "choice", "option 0 does not exist"),
        ({"question": "section-11", "choice": "two"}, "choice", "is not an option number"),
        ({"question": "section-11", "choice": "9" * 5000}, "choice", "option 999999999999… does"),
        ({"question": "section-42", "choice": "1"}, "question", "unknown question"),
        ({"choice": "1"}, "question", "missing"),
        ({}, "question", "missing"),
    ],
)
def test_bad_input_with_htmx_is_422_with_a_message(
    fresh: TestClient, data: dict[str, str], field: str, message: str
) -> None:
    response = fresh.post("/quiz", data=data, headers=HX)
    assert response.status_code == 422
    error = soup_of(response).find(class_="quiz-error")
    assert isinstance(error, Tag)
    assert message in text(error)
    assert f"form field “{field}”" in text(error)
    assert "set-cookie" not in response.headers


def test_bad_choice_without_htmx_shows_the_message_at_the_question(fresh: TestClient) -> None:
    response = fresh.post("/quiz", data={"question": "section-12", "choice": "5"})
    assert response.status_code == 422
    soup = soup_of(response)
    assert soup.find("h1") is not None
    feedback = soup.find(id="feedback-section-12")
    assert isinstance(feedback, Tag)
    assert "option 5 does not exist (1 to 3)" in text(feedback)
    assert "form field “choice”" in text(feedback)
    assert score_text(soup) == "Score: 0 of 3 correct (0 of 3 answered)"


def test_unknown_question_without_htmx_shows_the_message_at_the_quiz(fresh: TestClient) -> None:
    response = fresh.post("/quiz", data={"question": "section-2", "choice": "1"})
    assert response.status_code == 422
    soup = soup_of(response)
    quiz = soup.find(id="section-10")
    assert isinstance(quiz, Tag)
    alert = quiz.parent.find(class_="quiz-error") if quiz.parent else None
    assert isinstance(alert, Tag)
    assert alert["role"] == "alert"
    assert "unknown question 'section-2'" in text(alert)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (json.dumps({"question": "section-11", "choice": 2}), "application/json"),
        ("question=section-11&choice=%FF%FE", "application/x-www-form-urlencoded"),
        ("\x00\x01junk", "text/plain"),
        ("--x\r\nbroken", "multipart/form-data; boundary=x"),
    ],
)
def test_junk_bodies_never_500(fresh: TestClient, body: str, content_type: str) -> None:
    response = fresh.post(
        "/quiz", content=body.encode("latin-1"), headers={"content-type": content_type, **HX}
    )
    assert 400 <= response.status_code < 500


def test_multipart_form_is_accepted(fresh: TestClient) -> None:
    response = fresh.post(
        "/quiz", files={"question": (None, "section-11"), "choice": (None, "2")}, headers=HX
    )
    assert response.status_code == 200
    assert "Correct." in response.text


def test_uploaded_file_as_choice_is_refused(fresh: TestClient) -> None:
    response = fresh.post(
        "/quiz",
        data={"question": "section-11"},
        files={"choice": ("c.txt", b"2", "text/plain")},
        headers=HX,
    )
    assert response.status_code == 422
    assert "not a file" in response.text


def test_get_on_quiz_url_is_not_allowed(fresh: TestClient) -> None:
    # The address never becomes /quiz (answers redirect to the page), so nothing links to a GET.
    assert fresh.get("/quiz").status_code == 405


def test_feedback_survives_a_reload(fresh: TestClient) -> None:
    answer(fresh, "section-11", "1", htmx=True)
    answer(fresh, "section-13", "2", htmx=True)
    page = soup_of(fresh.get("/"))
    retry = page.find(id="feedback-section-11")
    solved = page.find(id="feedback-section-13")
    untouched = page.find(id="feedback-section-12")
    assert isinstance(retry, Tag)
    assert isinstance(solved, Tag)
    assert isinstance(untouched, Tag)
    assert text(retry).startswith("Not quite. “2” is not the answer.")
    assert text(solved).startswith("Correct. The answer is “No”.")
    assert text(untouched) == ""
    checked = page.select('#quiz-section-11 input[name="choice"][checked]')
    assert [c["value"] for c in checked] == ["1"]


def test_show_the_answer_reveals_it_and_counts_an_unanswered_question_wrong(
    fresh: TestClient,
) -> None:
    page = soup_of(fresh.get("/"))
    button = page.select_one('#quiz-section-12 button[name="reveal"]')
    assert button is not None
    assert text(button) == "Show the answer"
    assert button.has_attr("formnovalidate")  # no option needed
    shown = soup_of(fresh.post("/quiz", data={"question": "section-12", "reveal": "1"}, headers=HX))
    assert text(shown).startswith("The answer is “0.5 and 1.5”.")
    assert "Shown before any answer" in text(shown)
    assert QUESTIONS[1].reasoning in text(shown)
    assert score_text(shown) == "Score: 0 of 3 correct (1 of 3 answered)"
    # An answer after that is checked, but the score keeps the first record.
    answer(fresh, "section-12", "3", htmx=True)
    assert score_text(soup_of(fresh.get("/"))) == "Score: 0 of 3 correct (1 of 3 answered)"


def test_reveal_for_an_unknown_question_is_422(fresh: TestClient) -> None:
    response = fresh.post("/quiz", data={"question": "section-2", "reveal": "1"}, headers=HX)
    assert response.status_code == 422
    assert "unknown question" in response.text


def test_see_it_in_the_lab_opens_the_state_the_question_is_about(fresh: TestClient) -> None:
    # Before the answer is shown the link would give it away: it is not there.
    page = soup_of(fresh.get("/"))
    assert page.select("#quiz-section-11 .quiz-lab") == []
    shown = soup_of(answer(fresh, "section-11", "2", htmx=True))
    link = shown.select_one(".quiz-lab a")
    assert link is not None
    assert text(link) == "See it in the lab"
    href = str(link["href"]).removeprefix("http://testserver")
    assert href.startswith("/?counts=2,6&means=1,3")
    assert href.endswith("#lab")
    # The lab in that state shows the question's answer: g = 2.5 (question 1) and the factors
    # 0.5 and 1.5 (question 2).
    lab = soup_of(fresh.get(href.split("#")[0]))
    g = lab.select_one('#lab [data-value="g"]')
    assert g is not None
    assert text(g) == "2.5"
    factors = [text(c.select_one(".lab-value")) for c in lab.select('#lab td[data-col="factor"]')]
    assert factors == ["0.5", "1.5"]
    # The worked example links to the same state.
    example = lab.select_one("p.lesson-lab-link a")
    assert example is not None
    assert str(example["href"]).endswith(href)


def test_pages_with_a_score_are_not_kept_by_shared_caches(fresh: TestClient) -> None:
    assert fresh.get("/").headers["cache-control"] == "private, no-cache"
    assert answer(fresh, "section-11", "1").headers["cache-control"] == "private, no-cache"
    assert answer(fresh, "section-11", "1", htmx=True).headers["cache-control"] == (
        "private, no-cache"
    )


def test_head_on_the_page(fresh: TestClient) -> None:
    response = fresh.head("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


def test_lab_state_from_the_query_reaches_the_page(fresh: TestClient) -> None:
    plain = fresh.get("/")
    with_state = fresh.get("/?counts=4,4&means=1,3&eta=0.1&w=10")
    assert plain.status_code == with_state.status_code == 200
    lab = soup_of(with_state).find(id="lab")
    assert isinstance(lab, Tag)
    # The lab renders the state it was given: the page is not the same as without it.
    assert re.sub(r"\s+", " ", plain.text) != re.sub(r"\s+", " ", with_state.text)


def test_the_lesson_text_is_rendered_once_whatever_the_host(fresh: TestClient) -> None:
    """Every section's text comes from one rendering at start, with relative URLs only."""
    sections = fresh.app.state.section_html[""]  # type: ignore[attr-defined]
    assert len(sections) > len(QUESTIONS)
    pages = [fresh.get("/", headers={"host": host}).text for host in ("a.example", "b.example")]
    for html in sections.values():
        assert all(html in page for page in pages)
        assert "a.example" not in html
    forms = soup_of(fresh.get("/")).select("form.quiz-form")
    assert [form["action"] for form in forms] == [f"/quiz#{q.id}" for q in QUESTIONS]


def test_a_posted_answer_shows_its_feedback_among_the_sections_rendered_once(
    fresh: TestClient,
) -> None:
    question = QUESTIONS[0]
    page = answer(fresh, question.id, "1").text
    sections = fresh.app.state.section_html[""]  # type: ignore[attr-defined]
    assert question.id not in sections  # a question's form is rendered per request
    assert all(html in page for html in sections.values())
    feedback = BeautifulSoup(page, "html.parser").select_one(f"#feedback-{question.id}")
    assert feedback is not None
    assert feedback.select_one(".verdict") is not None


@pytest.mark.parametrize(
    "forged",
    ["garbage", sign_log({"section-11": Attempts((2,), False)}, "not-the-server-key"), ""],
)
def test_tampered_attempts_cookie_is_ignored(fresh: TestClient, forged: str) -> None:
    fresh.cookies.set(ATTEMPTS_COOKIE, forged)
    page = soup_of(fresh.get("/"))
    feedback = page.find(id="feedback-section-11")
    assert isinstance(feedback, Tag)
    assert text(feedback) == ""
