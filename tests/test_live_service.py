"""The class's operations and their refusals (app/live/service.py), through the real app on
SQLite and on the module's own readers: the words of each refusal and where the page shows it
(beside its field, or above the form), its status, the bounds of what a form may hold, and what
each operation leaves in the class. Written for the survivors of its mutation run
(docs/testing.md, "The live class")."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from app.live import service, store
from app.live.codes import new_code
from app.live.service import InvalidError, read_seconds
from app.main import create_app
from tests import test_live, test_live_refusals
from tests.test_course import course_folder
from tests.test_live import (
    node,
    other_browser,
    questions,
    settings_for,
    soup,
    start_class,
    student,
    words,
    wrong,
)
from tests.test_live_refusals import events, next_event, quiet_other_workers

data_dir = test_live.data_dir

FIRST = questions()[0]
SECOND = questions()[1]
LOOK_ALIKE = "\u0410da"  # "Ada" with a Cyrillic A


client = test_live_refusals.sqlite_client


def refusal(answer: Response) -> tuple[int, str, str]:
    """A refused request's status, where its page shows the reason (the field it names, or
    "above" the form), and the reason's words."""
    [shown] = soup(answer.text).select(".live-error")
    where = str(shown.get("id", "")).removesuffix("-error") or "above"
    if where == "above":
        assert shown.get("role") == "alert"
    return answer.status_code, where, words(shown)


def test_a_discussion_timer_runs_from_10_seconds_to_an_hour() -> None:
    assert read_seconds("10") == 10
    assert read_seconds(" 3600 ") == 3600
    for outside in ("9", "3601", "", "ten", "\u0661\u0660", "000010"):
        with pytest.raises(InvalidError) as refused:
            read_seconds(outside)
        assert refused.value.field == "seconds"
        assert refused.value.message == (
            "The field “seconds” must be a whole number of seconds from 10 to 3600"
            f" (got {outside.strip()!r})."
        )


def test_pacing_before_any_question_is_refused_in_words(client: TestClient) -> None:
    code = start_class(client)
    for action in ("pause", "resume", "reveal", "revote"):
        assert refusal(client.post(f"/class/{code}/{action}")) == (
            409,
            "above",
            "No question has been asked yet.",
        )
    assert refusal(client.post(f"/class/{code}/timer", data={"seconds": "60"})) == (
        409,
        "above",
        "No question has been asked yet: a timer times its discussion.",
    )
    assert refusal(client.post(f"/class/{code}/timer", data={"seconds": "5"})) == (
        422,
        "seconds",
        "The field “seconds” must be a whole number of seconds from 10 to 3600 (got '5').",
    )


def test_asking_names_a_question_of_the_lesson_and_one_or_two_votes(client: TestClient) -> None:
    code = start_class(client)
    known = ", ".join(question.id for question in questions())
    unknown = "q" * 50
    assert refusal(client.post(f"/class/{code}/ask", data={"question": unknown})) == (
        422,
        "question",
        f"Unknown question {unknown[:40]!r} (one of {known}).",
    )
    for rounds in ("3", "0", "x", "12345678"):
        assert refusal(
            client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": rounds})
        ) == (
            422,
            "rounds",
            "The field “rounds” must be 1 (one vote) or 2 (vote, discuss, re-vote)"
            f" (got {rounds!r}).",
        )
    for rounds in ("1", "2", "", " 2 "):
        asked = client.post(
            f"/class/{code}/ask",
            data={"question": FIRST.id, "rounds": rounds},
            follow_redirects=False,
        )
        assert asked.status_code == 303, asked.text[:300]


def test_a_one_vote_question_has_no_re_vote_and_a_revealed_one_stays_closed(
    client: TestClient,
) -> None:
    code = start_class(client)
    assert client.post(f"/class/{code}/ask", data={"question": FIRST.id}).status_code == 200
    assert refusal(client.post(f"/class/{code}/revote")) == (
        409,
        "above",
        "This question was asked for one vote: ask it for two votes to re-vote.",
    )
    assert client.post(f"/class/{code}/reveal").status_code == 200
    for action in ("pause", "resume"):
        assert refusal(client.post(f"/class/{code}/{action}")) == (
            409,
            "above",
            "The answer has been revealed: answering this question stays closed."
            " Ask it again for a new vote.",
        )
    assert refusal(client.post(f"/class/{code}/timer", data={"seconds": "60"})) == (
        409,
        "above",
        "The answer has been revealed: there is nothing left to discuss.",
    )
    # Revealing again is no refusal.
    assert client.post(f"/class/{code}/reveal", follow_redirects=False).status_code == 303

    two = {"question": FIRST.id, "rounds": "2"}
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert client.post(f"/class/{code}/revote", follow_redirects=False).status_code == 303
    assert refusal(client.post(f"/class/{code}/revote")) == (
        409,
        "above",
        "Vote 2 is open already.",
    )
    assert client.post(f"/class/{code}/reveal").status_code == 200
    assert refusal(client.post(f"/class/{code}/revote")) == (
        409,
        "above",
        "The answer has been revealed: ask the question again for a new vote.",
    )
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert client.post(f"/class/{code}/end").status_code == 200
    assert refusal(client.post(f"/class/{code}/revote")) == (409, "above", "The class has ended.")
    assert refusal(client.post(f"/class/{code}/timer", data={"seconds": "60"})) == (
        409,
        "above",
        "The class has ended.",
    )


def answer(pupil: TestClient, code: str, **form: str) -> Response:
    return pupil.post(f"/class/{code}/answer", data=form, follow_redirects=False)


def test_an_answer_out_of_turn_is_refused_in_words(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    choice = str(wrong(FIRST))
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice)) == (
        409,
        "above",
        "That is not the question being asked now; the page shows the current one.",
    )
    assert client.post(f"/class/{code}/ask", data={"question": FIRST.id}).status_code == 200
    assert refusal(answer(ada, code, question=SECOND.id, choice="1")) == (
        409,
        "above",
        "That is not the question being asked now; the page shows the current one.",
    )
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice, round="2")) == (
        409,
        "above",
        "Vote 2 of this question is not open; the page shows the vote that is.",
    )
    for vote in ("3", "0", "two", "22222222222222222222222"):
        assert refusal(answer(ada, code, question=FIRST.id, choice=choice, round=vote)) == (
            422,
            "above",
            f"The field “round” must be 1 or 2 (got {vote[:20]!r}).",  # quoted up to 20
        )
    for said in ("maybe", "Sure", "sure and certain, absolutely"):
        assert refusal(answer(ada, code, question=FIRST.id, choice=choice, confidence=said)) == (
            422,
            "above",
            f"The field “confidence” must be “sure”, “unsure” or empty (got {said[:20]!r}).",
        )
    count = len(FIRST.choices)
    assert refusal(answer(ada, code, question=FIRST.id, choice="9")) == (
        422,
        "above",
        f"option 9 does not exist (1 to {count})",
    )
    assert refusal(answer(ada, code, question="nope", choice=choice)) == (
        422,
        "above",
        f"unknown question 'nope' (expected one of {', '.join(q.id for q in questions())})",
    )
    assert client.post(f"/class/{code}/pause").status_code == 200
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice)) == (
        409,
        "above",
        "The instructor has paused answering; wait for them to open it again.",
    )
    assert client.post(f"/class/{code}/resume").status_code == 200
    assert answer(ada, code, question=FIRST.id, choice=choice, round="1").status_code == 303
    assert client.post(f"/class/{code}/reveal").status_code == 200
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice)) == (
        409,
        "above",
        "The answer has been revealed: answers to this question are closed.",
    )
    two = {"question": FIRST.id, "rounds": "2"}
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert client.post(f"/class/{code}/revote").status_code == 200
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice)) == (
        409,
        "above",
        "Vote 1 has closed and vote 2 is open: the page now shows vote 2.",
    )
    assert answer(ada, code, question=FIRST.id, choice=choice, round="2").status_code == 303
    assert client.post(f"/class/{code}/end").status_code == 200
    assert refusal(answer(ada, code, question=FIRST.id, choice=choice, round="2")) == (
        409,
        "above",
        "The class has ended: answers are closed.",
    )


def test_a_join_refused_says_why_beside_its_field(data_dir: Path) -> None:
    with TestClient(create_app(settings_for(data_dir, class_size=2))) as host:
        code = start_class(host)

        def join(nickname: str, typed: str = code, browser: TestClient | None = None) -> Response:
            return (browser or other_browser(host)).post(
                "/join", data={"code": typed, "nickname": nickname}, follow_redirects=False
            )

        assert refusal(join("Ada", "ZZZZZZ")) == (
            404,
            "code",
            "There is no class with the code ZZZZZZ.",
        )
        ada = student(host, code, "Ada")
        assert refusal(join("ada")) == (
            409,
            "nickname",
            "“ada” is taken in this class (as “Ada”); choose another.",
        )
        assert refusal(join("Ada")) == (
            409,
            "nickname",
            "“Ada” is taken in this class; choose another.",
        )
        assert refusal(join(LOOK_ALIKE)) == (
            409,
            "nickname",
            f"“{LOOK_ALIKE}” looks like “Ada”, already in this class (one could not be told"
            " from the other); choose another.",
        )
        student(host, code, "Bo")
        assert refusal(join("Cy")) == (
            409,
            "code",
            "This class is full: it has 2 students, the most a class takes (ATLAS_CLASS_SIZE).",
        )
        assert host.post(f"/class/{code}/lock").status_code == 200
        assert refusal(join("Cy")) == (
            409,
            "code",
            "The instructor has closed joining for this class; ask them to open it.",
        )
        back = join("Ada", browser=ada)  # back, by her cookie, though joining is closed
        assert back.status_code == 303
        assert back.headers["location"] == f"/class/{code}"
        assert "set-cookie" not in back.headers  # the cookie she holds, not a new one
        assert host.post(f"/class/{code}/end").status_code == 200
        assert refusal(join("Cy")) == (
            409,
            "code",
            "This class has ended; ask your instructor for a new code.",
        )
        assert refusal(join("Ada", browser=ada)) == (
            409,
            "code",
            "This class has ended; ask your instructor for a new code.",
        )


def remove_button(host: TestClient, code: str, nickname: str) -> str:
    [button] = soup(host.get(f"/class/{code}/host").text).select(
        f"button[aria-label='Remove {nickname}']"
    )
    return str(button["value"])


def readmit_value(host: TestClient, code: str, nickname: str) -> str:
    [button] = soup(host.get(f"/class/{code}/host").text).select(
        f"#removed-list button[aria-label='Let {nickname} back in']"
    )
    form = button.find_parent("form")
    assert form is not None
    [removed] = form.select("input[name=removed]")
    return str(removed["value"])


def test_the_host_acts_only_on_students_of_their_class(client: TestClient) -> None:
    code, other = start_class(client), start_class(client)
    student(client, code, "Ada")
    bo = student(client, other, "Bo")
    ada_id, bo_id = remove_button(client, code, "Ada"), remove_button(client, other, "Bo")
    no_student = (422, "above", "No such student in this class.")
    assert refusal(client.post(f"/class/{code}/remove", data={"participant": bo_id})) == (
        no_student
    )
    assert refusal(client.post(f"/class/{code}/remove", data={"participant": "999999"})) == (
        no_student
    )
    no_state = (422, "above", "That student has shared no lab state.")
    assert refusal(client.post(f"/class/{code}/project", data={"participant": ada_id})) == (
        no_state
    )
    state = {"counts": "1,3", "means": "2,2", "eta": "0.5", "w": "1"}
    assert bo.post(f"/class/{other}/share", data=state).status_code == 200
    assert refusal(client.post(f"/class/{code}/project", data={"participant": bo_id})) == (no_state)
    assert client.post(f"/class/{other}/project", data={"participant": bo_id}).status_code == 200
    # Bo, removed from his class, cannot be let back into another.
    assert client.post(f"/class/{other}/remove", data={"participant": bo_id}).status_code == 200
    removal = readmit_value(client, other, "Bo")
    no_removed = (422, "above", "No such removed student in this class.")
    assert refusal(client.post(f"/class/{code}/readmit", data={"removed": removal})) == (no_removed)
    assert refusal(client.post(f"/class/{code}/readmit", data={"removed": "999999"})) == (
        no_removed
    )
    assert refusal(other_browser(bo).post("/join", data={"code": other, "nickname": "Bo"})) == (
        403,
        "nickname",
        "The instructor removed you from this class; only they can let you back in.",
    )
    let_in = client.post(f"/class/{other}/readmit", data={"removed": removal})
    assert let_in.status_code == 200
    assert bo.post("/join", data={"code": other, "nickname": "Bo"}).status_code == 200


def test_a_class_follows_a_lesson_served_here(client: TestClient) -> None:
    start_class(client)  # the device is the instructor's from now on
    for slug in ("no-such-lesson", "x" * 60):
        assert (
            refusal(client.post("/class/new", data={"lesson": slug}))
            == (
                422,
                "above",  # a single lesson: the form has no choice of lesson
                f"The field “lesson” names no lesson served here ({slug[:40]!r}); choose one of"
                " those listed.",
            )
        )


@pytest.mark.parametrize("limit", [1, 2])
def test_the_class_limit_is_said_in_words(data_dir: Path, limit: int) -> None:
    with TestClient(create_app(settings_for(data_dir, class_limit=limit))) as host:
        for _ in range(limit):
            start_class(host)
        kept = "1 class" if limit == 1 else f"{limit} classes"
        assert refusal(host.post("/class/new")) == (
            429,
            "above",
            f"This server already keeps {kept}, its limit (ATLAS_CLASS_LIMIT). Delete a finished"
            " class; a class no student has joined stops counting 24 hours after it started.",
        )


def test_a_code_that_is_no_code_is_quoted_back_trimmed(client: TestClient) -> None:
    for typed, shown in (("  abc  ", "abc"), ("0123456789ABCDEF", "0123456789AB")):
        assert refusal(
            other_browser(client).post("/join", data={"code": typed, "nickname": "Ada"})
        ) == (
            404,
            "code",
            f"There is no class with the code “{shown}”: A class code has 6 letters and digits,"
            " as shown on the instructor's screen.",
        )


def test_a_code_drawn_again_is_drawn_anew_up_to_eight_times(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new class's code is random: drawn as a class's already, it is drawn again (the class
    is never refused for it, nor given the other's code); eight draws all taken are a 503."""
    taken = start_class(client)
    fresh = next(code for code in iter(new_code, "") if code != taken)
    draws = iter([taken] * 7 + [fresh])
    monkeypatch.setattr(service, "new_code", lambda: next(draws))
    assert start_class(client) == fresh
    assert next(draws, None) is None  # all eight drawn
    draws = iter([taken, fresh] * 4)  # both taken now
    monkeypatch.setattr(service, "new_code", lambda: next(draws))
    assert refusal(client.post("/class/new")) == (
        503,
        "above",
        "Could not find a free class code; try again.",
    )
    assert next(draws, None) is None
    # Each class has the lesson, its own host and its questions: the other's kept.
    for code in (taken, fresh):
        assert client.get(f"/class/{code}/host").status_code == 200


def timer_end(html: str) -> datetime | None:
    """When the page's discussion timer ends (None: the page shows no timer)."""
    found = soup(html).select_one("#timer")
    if found is None:
        return None
    return datetime.strptime(str(found["data-ends"]), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def test_a_timer_ends_its_seconds_after_it_starts_and_a_new_vote_clears_it(
    client: TestClient,
) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    two = {"question": FIRST.id, "rounds": "2"}

    def timed(seconds: int) -> None:
        before = datetime.now(UTC).replace(microsecond=0)
        assert (
            client.post(f"/class/{code}/timer", data={"seconds": str(seconds)}).status_code == 200
        )
        after = datetime.now(UTC)
        for html in (client.get(f"/class/{code}/host").text, ada.get(f"/class/{code}").text):
            ends = timer_end(html)
            assert ends is not None
            assert before + timedelta(seconds=seconds) <= ends <= after + timedelta(seconds=seconds)

    def cleared() -> bool:
        return all(
            timer_end(html) is None
            for html in (client.get(f"/class/{code}/host").text, ada.get(f"/class/{code}").text)
        )

    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    timed(90)
    assert client.post(f"/class/{code}/pause").status_code == 200
    assert not cleared()  # a pause keeps the discussion going
    assert client.post(f"/class/{code}/resume").status_code == 200
    assert not cleared()
    assert client.post(f"/class/{code}/revote").status_code == 200
    assert cleared()
    timed(3600)
    assert client.post(f"/class/{code}/reveal").status_code == 200
    assert cleared()
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    timed(10)
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert cleared()


def test_a_new_vote_opens_and_takes_each_students_answer_afresh(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    choice = str(wrong(FIRST))
    two = {"question": FIRST.id, "rounds": "2"}

    def summary() -> str:
        return words(node(client.get(f"/class/{code}/host").text, ".live-summary"))

    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert answer(ada, code, question=FIRST.id, choice=choice).status_code == 303
    assert client.post(f"/class/{code}/pause").status_code == 200
    assert client.post(f"/class/{code}/revote").status_code == 200  # opens, though paused
    assert answer(ada, code, question=FIRST.id, choice=choice, round="2").status_code == 303
    assert summary() == "The one student here answered."
    # Asked again, the question starts at vote 1; its earlier vote 2 counts for nothing.
    assert client.post(f"/class/{code}/ask", data=two).status_code == 200
    assert answer(ada, code, question=FIRST.id, choice=choice, round="1").status_code == 303
    assert client.post(f"/class/{code}/revote").status_code == 200
    assert summary() == "No answers yet from the 1 student here."
    # Asked for one vote after a re-vote: vote 1 again, open.
    assert client.post(f"/class/{code}/pause").status_code == 200
    assert client.post(f"/class/{code}/ask", data={"question": FIRST.id}).status_code == 200
    assert answer(ada, code, question=FIRST.id, choice=choice, round="1").status_code == 303


def test_a_lab_state_too_long_to_share_names_its_longest_field(client: TestClient) -> None:
    code = start_class(client)
    # 400 targets of 12 digits: 400 * 12 + 399 commas and semicolons = 5,199 characters; the
    # link adds "targets=" and "&eta=0.1&w=10&steps=30": 5,229.
    value = "1" + "3" * 11
    targets = ";".join(",".join([value] * 100) for _ in range(4))
    state = {"targets": targets, "eta": "0.1", "w": "10", "steps": "30"}
    assert refusal(client.post(f"/class/{code}/lab", data=state)) == (
        422,
        "above",
        "This lab state is 5,229 characters long as a link; a shared state holds at most 4,000."
        " Its field “targets” alone has 5,199: use fewer ranks, items or digits.",
    )


def test_a_nickname_taken_at_the_same_moment_is_refused_by_the_database_in_words(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two students joining as one nickname at once: each checks before either is stored, and
    the database's unique key refuses the second; it is told its nickname is taken, as when
    the check sees the other (staged here by a check that finds no one)."""
    code = start_class(client)
    student(client, code, "Ada")

    async def no_one(*_: object) -> None:
        return None

    monkeypatch.setattr(store, "nickname_clash", no_one)
    late = other_browser(client)
    for typed in ("ada", LOOK_ALIKE):
        assert refusal(late.post("/join", data={"code": code, "nickname": typed})) == (
            409,
            "nickname",
            f"“{typed}” is taken in this class; choose another.",
        )
    assert late.post("/join", data={"code": code, "nickname": "Bo"}).status_code == 200
    roster = soup(client.get(f"/class/{code}/host").text).select("#host-roster .live-nickname")
    assert sorted(tag.get_text() for tag in roster) == ["Ada", "Bo"]


def test_a_deleted_class_ends_its_open_pages_at_once(client: TestClient) -> None:
    """Deleting the class tells this worker's streams (no other worker's word needed): each
    open page is told its class is gone."""
    code = start_class(client)
    ada = student(client, code, "Ada")
    quiet_other_workers(client)
    with ada.stream("GET", f"/class/{code}/events") as page:
        assert page.status_code == 200
        watching = events(page)
        next_event(watching, lambda event: event.name != "gone", "Ada's page")
        assert client.post(f"/class/{code}/delete").status_code == 200
        next_event(watching, lambda event: event.name == "gone", "the class gone")


def test_a_removed_students_open_page_ends_at_once(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    quiet_other_workers(client)
    with ada.stream("GET", f"/class/{code}/events") as page:
        assert page.status_code == 200
        watching = events(page)
        next_event(watching, lambda event: event.name != "gone", "Ada's page")
        ada_id = remove_button(client, code, "Ada")
        assert client.post(f"/class/{code}/remove", data={"participant": ada_id}).status_code == 200
        next_event(watching, lambda event: event.name == "gone", "Ada removed")


def test_the_projector_shows_a_students_state_until_told_to_show_none(client: TestClient) -> None:
    code = start_class(client)
    zelda = student(client, code, "Zelda")
    state = {"counts": "1,3", "means": "2,2", "eta": "0.5", "w": "1"}
    assert zelda.post(f"/class/{code}/share", data=state).status_code == 200

    def figures() -> dict[str, str]:
        screen = soup(client.get(f"/class/{code}/screen").text)
        return {str(dd["data-value"]): dd.get_text(strip=True) for dd in screen.select("dd")}

    assert figures() == {}
    who = remove_button(client, code, "Zelda")
    assert client.post(f"/class/{code}/project", data={"participant": who}).status_code == 200
    assert figures()["w-new"] == "0"  # 1 - 0.5 * 2
    assert client.post(f"/class/{code}/project", data={"participant": ""}).status_code == 200
    assert figures() == {}


def test_a_lesson_without_the_lab_shares_no_lab_state(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    settings = settings_for(tmp_path / "data", lesson_path=course_folder(tmp_path / "course"))
    with TestClient(create_app(settings)) as host:
        start_class(host)  # the device is the instructor's from now on
        assert refusal(host.post("/class/new", data={"lesson": "no-such-lesson"})) == (
            422,
            "lesson",  # a course: the form has a choice of lesson
            "The field “lesson” names no lesson served here ('no-such-lesson'); choose one of"
            " those listed.",
        )
        started = host.post("/class/new", data={"lesson": test_live.SHARD}, follow_redirects=False)
        code = started.headers["location"].split("/")[2]
        pupil = student(host, code, "Ada")
        no_lab = "This class's lesson has no gradient lab to share a state of."
        state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
        assert refusal(host.post(f"/class/{code}/lab", data=state)) == (409, "above", no_lab)
        assert refusal(pupil.post(f"/class/{code}/share", data=state)) == (409, "above", no_lab)


def test_a_lab_state_of_exactly_4000_characters_is_shared(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    # 304 targets of 12 digits and 3,951 characters, then ",7" nine times and "3" (the last
    # target 73): 3,970 characters, and 4,000 with "targets=" and "&eta=0.1&w=10&steps=30".
    targets = ";".join(",".join(["1" + "3" * 11] * 76) for _ in range(4)) + ",7" * 9 + "3"
    state = {"targets": targets, "eta": "0.1", "w": "10", "steps": "30"}
    assert client.post(f"/class/{code}/lab", data=state, follow_redirects=False).status_code == 303
    shared = ada.post(f"/class/{code}/share", data=state, follow_redirects=False)
    assert shared.status_code == 303
    longer = {**state, "targets": targets + "3"}
    assert refusal(client.post(f"/class/{code}/lab", data=longer)) == (
        422,
        "above",
        "This lab state is 4,001 characters long as a link; a shared state holds at most 4,000."
        " Its field “targets” alone has 3,971: use fewer ranks, items or digits.",
    )


def test_a_class_whose_lesson_is_no_longer_served_follows_the_first_one(tmp_path: Path) -> None:
    """A server restarted with another lesson (or course) keeps its classes: one whose lesson it
    no longer serves follows the first lesson it serves."""
    (tmp_path / "course").mkdir()
    course = settings_for(tmp_path / "data", lesson_path=course_folder(tmp_path / "course"))
    with TestClient(create_app(course)) as host:
        start_class(host)
        started = host.post("/class/new", data={"lesson": test_live.SHARD}, follow_redirects=False)
        code = started.headers["location"].split("/")[2]
        cookies = dict(host.cookies)
    with TestClient(create_app(settings_for(tmp_path / "data"))) as host:
        host.cookies.update(cookies)
        page = host.get(f"/class/{code}/host")
        assert page.status_code == 200
        asked = [str(option["value"]) for option in soup(page.text).select("#question option")]
        assert asked == [question.id for question in questions()]


# "Sisyphus" in Greek, in lower case and in capitals: one nickname by case (casefolded, the
# final sigma too), though the two do not look alike (their skeletons differ).
SISYPHUS = "\u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2"
CAPITALS = "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3"


def test_a_nickname_in_other_capitals_is_taken_and_stays_out_once_removed(
    client: TestClient,
) -> None:
    code = start_class(client)
    student(client, code, SISYPHUS)
    assert refusal(
        other_browser(client).post("/join", data={"code": code, "nickname": CAPITALS})
    ) == (
        409,
        "nickname",
        f"“{CAPITALS}” is taken in this class (as “{SISYPHUS}”); choose another.",
    )
    who = remove_button(client, code, SISYPHUS)
    assert client.post(f"/class/{code}/remove", data={"participant": who}).status_code == 200
    assert refusal(
        other_browser(client).post("/join", data={"code": code, "nickname": CAPITALS})
    ) == (
        403,
        "nickname",
        "The instructor removed you from this class; only they can let you back in.",
    )


def test_a_student_who_joins_shows_on_an_open_dashboard_at_once(client: TestClient) -> None:
    code = start_class(client)
    quiet_other_workers(client)
    with client.stream("GET", f"/class/{code}/events?view=host") as dashboard:
        assert dashboard.status_code == 200
        watching = events(dashboard)
        next_event(watching, lambda event: event.name == "host", "the dashboard")
        student(client, code, "Ada")
        next_event(watching, lambda event: "Ada" in event.data, "Ada joined")


def test_a_new_class_has_sent_no_lab_state(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    assert soup(ada.get(f"/class/{code}").text).select_one("#class-lab-sent") is None
