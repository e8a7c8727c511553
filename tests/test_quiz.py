"""Quiz parsing, checking, input validation and the signed score."""

import pytest
from itsdangerous import URLSafeSerializer

from app.lesson.loader import Section, load_lesson
from app.lesson.quiz import (
    AnswerError,
    Question,
    QuizParseError,
    check,
    parse_question,
    read_answer,
    read_results,
    score,
    sign_results,
)
from app.settings import DEFAULT_LESSON
from tests.records import parse_questions

QUESTIONS = parse_questions(load_lesson(DEFAULT_LESSON).sections)
KEY = "test-secret"
LESSON_ID = "atlas-lesson-distributed-gradient-weighting"


def test_three_questions_parsed_from_sections_11_to_13() -> None:
    assert [q.id for q in QUESTIONS] == ["section-11", "section-12", "section-13"]
    assert [q.number for q in QUESTIONS] == [1, 2, 3]
    assert QUESTIONS[0].prompt.startswith("Two ranks have counts 2 and 6")
    assert [q.options for q in QUESTIONS] == [
        ("2", "2.5", "4"),
        ("1 and 1", "2 and 6", "0.5 and 1.5"),
        ("Yes", "No", "Only if the network is fast"),
    ]


def test_parsed_answers_match_the_published_ones() -> None:
    assert [q.answer for q in QUESTIONS] == ["2.5", "0.5 and 1.5", "No"]
    assert [q.answer_number for q in QUESTIONS] == [2, 3, 2]
    for question in QUESTIONS:
        assert question.answer in question.options
        assert question.options[question.answer_number - 1] == question.answer


def test_reasoning_is_the_text_after_the_answer() -> None:
    assert QUESTIONS[0].reasoning == (
        "The weighted numerator is 2\u00d71+6\u00d73=20 across eight items, so the result is 2.5."
    )
    assert QUESTIONS[1].reasoning.startswith("Scaling by P nᵣ/N gives 0.5 and 1.5")
    assert QUESTIONS[2].reasoning == (
        "All replicas can agree on the same incorrectly normalized gradient."
    )


def test_answer_derives_from_the_lesson_arithmetic() -> None:
    # An independent check of question 1 and 2: the global item mean and the scale factors.
    counts, means = (2, 6), (1.0, 3.0)
    total = sum(counts)
    assert (
        float(QUESTIONS[0].answer) == sum(n * m for n, m in zip(counts, means, strict=True)) / total
    )
    factors = [len(counts) * n / total for n in counts]
    assert QUESTIONS[1].answer == f"{factors[0]:g} and {factors[1]:g}"


def test_check_right_and_wrong() -> None:
    first = QUESTIONS[0]
    right = check(first, 2)
    assert right.correct
    assert first.options[right.chosen - 1] == "2.5"
    wrong = check(first, 1)
    assert not wrong.correct
    assert first.options[wrong.chosen - 1] == "2"


def form(**fields: object) -> dict[str, list[object]]:
    return {name: value if isinstance(value, list) else [value] for name, value in fields.items()}


def test_read_answer_accepts_a_valid_choice() -> None:
    question, chosen = read_answer(QUESTIONS, form(question="section-12", choice="3"))
    assert question is QUESTIONS[1]
    assert chosen == 3
    question, chosen = read_answer(QUESTIONS, form(question=" section-13 ", choice=" 1 "))
    assert (question.id, chosen) == ("section-13", 1)


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({}, "question", "missing"),
        ({"question": "section-99", "choice": "1"}, "question", "unknown question 'section-99'"),
        ({"question": "", "choice": "1"}, "question", "missing"),
        ({"question": "section-11"}, "choice", "no option was chosen"),
        ({"question": "section-11", "choice": ""}, "choice", "no option was chosen"),
        ({"question": "section-11", "choice": "4"}, "choice", "option 4 does not exist (1 to 3)"),
        ({"question": "section-11", "choice": "0"}, "choice", "option 0 does not exist"),
        ({"question": "section-11", "choice": "-1"}, "choice", "not an option number"),
        ({"question": "section-11", "choice": "2.5"}, "choice", "not an option number"),
        ({"question": "section-11", "choice": "abc"}, "choice", "not an option number"),
        ({"question": "section-11", "choice": "²"}, "choice", "not an option number"),
        ({"question": "section-11", "choice": ["1", "2"]}, "choice", "sent more than once"),
        ({"question": ["section-11", "section-12"], "choice": "1"}, "question", "more than once"),
        ({"question": "section-11", "choice": b"1"}, "choice", "not a file"),
    ],
)
def test_read_answer_names_the_field_at_fault(
    fields: dict[str, object], field: str, fragment: str
) -> None:
    with pytest.raises(AnswerError) as caught:
        read_answer(QUESTIONS, form(**fields))
    assert caught.value.field == field
    assert fragment in caught.value.message
    assert str(caught.value).startswith(f"{field}: ")


def test_a_choice_error_keeps_its_question() -> None:
    with pytest.raises(AnswerError) as caught:
        read_answer(QUESTIONS, form(question="section-12", choice="9"))
    assert caught.value.question is QUESTIONS[1]


def test_score_counts_correct_and_answered() -> None:
    empty = score({}, QUESTIONS)
    assert (empty.correct, empty.answered, empty.total) == (0, 0, 3)
    result = score({"section-11": True, "section-12": False, "section-13": True}, QUESTIONS)
    assert (result.correct, result.answered, result.total) == (2, 3, 3)
    partial = score({"section-12": True, "elsewhere": True}, QUESTIONS)
    assert (partial.correct, partial.answered, partial.total) == (1, 1, 3)


def test_signed_results_round_trip() -> None:
    results = {"section-11": True, "section-13": False}
    token = sign_results(results, KEY, LESSON_ID)
    assert read_results(token, KEY, QUESTIONS, LESSON_ID) == results


def test_results_are_kept_per_lesson() -> None:
    token = sign_results({"section-11": True}, KEY, "atlas-lesson-sharded-matmul-ownership")
    assert read_results(token, KEY, QUESTIONS, LESSON_ID) == {}


@pytest.mark.parametrize(
    "token",
    [
        None,
        "",
        "garbage",
        sign_results({"section-11": True}, "another-key", LESSON_ID),
        sign_results({"section-11": True}, KEY, LESSON_ID)[:-2] + "xx",
        URLSafeSerializer(KEY, salt=f"atlas-quiz-score:{LESSON_ID}").dumps(["section-11"]),
        URLSafeSerializer(KEY, salt="other-purpose").dumps({"section-11": True}),
    ],
)
def test_forged_or_malformed_cookie_counts_as_no_results(token: str | None) -> None:
    assert read_results(token, KEY, QUESTIONS, LESSON_ID) == {}


def test_cookie_values_of_the_wrong_kind_are_dropped() -> None:
    token = URLSafeSerializer(KEY, salt=f"atlas-quiz-score:{LESSON_ID}").dumps(
        {"section-11": True, "section-12": "yes", "section-99": True, "section-13": 1}
    )
    assert read_results(token, KEY, QUESTIONS, LESSON_ID) == {"section-11": True}


def section(markdown: str) -> Section:
    title = markdown.split("\n", 1)[0].lstrip("# ")
    return Section(id="section-7", title=title, level=3, markdown=markdown)


def test_parse_question_from_a_section() -> None:
    question = parse_question(
        section("### Q?\n\n1.  a\n2.  b\n\nAnswer and reasoning\n\nb\n\nBecause.\n\nMore."), 4
    )
    assert question == Question(
        id="section-7",
        number=4,
        prompt="Q?",
        options=("a", "b"),
        answer_number=2,
        reasoning="Because.\n\nMore.",
    )


@pytest.mark.parametrize(
    ("markdown", "fragment"),
    [
        ("### Q?\n\n1.  a\n2.  b\n\nAnswer and reasoning\n\nc\n\nWhy.", "'c' is not one of"),
        ("### Q?\n\n1.  a\n\nAnswer and reasoning\n\na\n\nWhy.", "at least two items"),
        ("### Q?\n\n1.  a\nb\n\nAnswer and reasoning\n\na\n\nWhy.", "ordered list"),
        ("### Q?\n\n1.  a\n2.  b\n\nAnswer and reasoning\n\na", "answer and its reasoning"),
        ("### Q?\n\n1.  a\n2.  b", "no 'Answer and reasoning' line"),
    ],
)
def test_malformed_question_is_refused_naming_the_section(markdown: str, fragment: str) -> None:
    with pytest.raises(QuizParseError) as caught:
        parse_question(section(markdown), 1)
    assert str(caught.value).startswith("section-7: ")
    assert fragment in str(caught.value)


def test_answer_matches_its_option_with_escapes_set_aside() -> None:
    markdown = (
        "### Q?\n\n1.  \\[14,16\\]\n2.  \\[43,50\\]\n\nAnswer and reasoning\n\n[43,50]\n\nWhy."
    )
    question = parse_question(section(markdown), 1)
    assert question.answer_number == 2
    assert question.options[1] == "\\[43,50\\]"


def test_an_answer_matching_two_options_is_refused() -> None:
    # Neither option is the answer's source text, and both are "[a]" once escapes are resolved.
    markdown = "### Q?\n\n1.  \\[a\\]\n2.  [a\\]\n\nAnswer and reasoning\n\n\\[a]\n\nWhy."
    with pytest.raises(QuizParseError, match="is not one of"):
        parse_question(section(markdown), 1)
