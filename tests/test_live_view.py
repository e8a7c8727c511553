"""The sentences and numbers the live class's pages show (app/live/view.py), through the real app
on SQLite, each for none, one and many: the dashboard's and the projector's count of answers,
each bar's share and its split by confidence, the class's state, the vote open, the shift of
both votes, the discussion timer, the roster's rows and captions, and a student's note in every
phase. Written for the survivors of its mutation run (docs/testing.md, "The live class")."""

from datetime import datetime

from bs4 import Tag
from fastapi.testclient import TestClient

from tests import test_live, test_live_refusals
from tests.test_live import node, questions, soup, start_class, student, words

data_dir = test_live.data_dir

FIRST = questions()[0]  # three options
RIGHT = FIRST.answer_number
WRONG = [n for n, _ in FIRST.choices if n != RIGHT]


client = test_live_refusals.sqlite_client


def answer(pupil: TestClient, code: str, choice: int, confidence: str = "", vote: int = 1) -> None:
    form = {"question": FIRST.id, "choice": str(choice), "round": str(vote)}
    if confidence:
        form["confidence"] = confidence
    sent = pupil.post(f"/class/{code}/answer", data=form)
    assert sent.status_code == 200, sent.text[:300]


def said(html: str, selector: str) -> str:
    """The words of the element ``selector`` finds ("" when the page has none)."""
    found = soup(html).select_one(selector)
    return words(found) if found is not None else ""


def dashboard(host: TestClient, code: str) -> str:
    return host.get(f"/class/{code}/host").text


def screen(host: TestClient, code: str) -> str:
    return host.get(f"/class/{code}/screen").text


def bar(html: str, option: int) -> Tag:
    return node(html, f"[data-choice='{option}']")


def segments(html: str, option: int) -> list[tuple[str, str, str]]:
    """A dashboard bar's segments: (kind, x, width) on a track of 100."""
    return [
        (" ".join(rect["class"]), str(rect["x"]), str(rect["width"]))
        for rect in bar(html, option).select("rect")
    ]


def test_the_count_of_answers_is_said_for_no_one_one_and_many(client: TestClient) -> None:
    code = start_class(client)
    assert said(dashboard(client, code), ".live-state") == "No question asked yet."
    assert client.post(f"/class/{code}/ask", data={"question": FIRST.id}).status_code == 200
    host = dashboard(client, code)
    assert said(host, ".live-state") == "Question 1: Answering is open."
    assert said(host, ".live-vote") == ""  # one vote: no "Vote 1 of 1"
    assert said(host, ".live-summary") == "No one has joined yet."
    assert said(screen(client, code), ".live-screen-answered") == "No one has joined yet."
    # Nothing answered: every bar empty, 0 %.
    assert said(host, ".live-bar-count") == "0 (0 %)"
    assert {segment[2] for n, _ in FIRST.choices for segment in segments(host, n)} == {"0"}

    ada = student(client, code, "Ada")
    host = dashboard(client, code)
    assert said(host, ".live-summary") == "No answers yet from the 1 student here."
    answer(ada, code, RIGHT, "sure")
    host = dashboard(client, code)
    assert said(host, ".live-summary") == "The one student here answered."
    assert said(screen(client, code), ".live-screen-answered") == "The one student here answered."
    assert said(host, f"[data-choice='{RIGHT}'] .live-bar-count") == "1 (100 %)"
    assert said(host, f"[data-choice='{WRONG[0]}'] .live-bar-count") == "0 (0 %)"
    assert said(host, f"[data-choice='{RIGHT}'] .live-bar-confidence") == "1 sure, 0 guessing"
    assert segments(host, RIGHT) == [
        ("live-sure", "0.00", "100.00"),
        ("live-unsure", "100.00", "0.00"),
        ("live-unsaid", "100.00", "0.00"),
    ]

    bo = student(client, code, "Bo")
    assert said(dashboard(client, code), ".live-summary") == "1 of 2 students answered."
    answer(bo, code, WRONG[0], "unsure")
    assert said(dashboard(client, code), ".live-summary") == "All 2 students answered."
    cy = student(client, code, "Cy")
    assert said(dashboard(client, code), ".live-summary") == "2 of 3 students answered."
    answer(cy, code, RIGHT)  # unsaid
    host = dashboard(client, code)
    assert said(host, ".live-summary") == "All 3 students answered."
    assert said(host, "#answer-count") == "3"
    # Shares of the 3 answers, rounded to whole percent: 2 of 3 is 67 %, 1 of 3 is 33 %.
    assert said(host, f"[data-choice='{RIGHT}'] .live-bar-count") == "2 (67 %)"
    assert said(host, f"[data-choice='{WRONG[0]}'] .live-bar-count") == "1 (33 %)"
    assert said(host, f"[data-choice='{WRONG[1]}'] .live-bar-count") == "0 (0 %)"
    # The split: each said part of the track of 100, a third for each of the three answers.
    assert said(host, f"[data-choice='{RIGHT}'] .live-bar-confidence") == (
        "1 sure, 0 guessing, 1 did not say"
    )
    assert segments(host, RIGHT) == [
        ("live-sure", "0.00", "33.33"),
        ("live-unsure", "33.33", "0.00"),
        ("live-unsaid", "33.33", "33.33"),
    ]
    assert said(host, f"[data-choice='{WRONG[0]}'] .live-bar-confidence") == "0 sure, 1 guessing"
    assert segments(host, WRONG[0]) == [
        ("live-sure", "0.00", "0.00"),
        ("live-unsure", "0.00", "33.33"),
        ("live-unsaid", "33.33", "0.00"),
    ]
    assert said(host, f"[data-choice='{WRONG[1]}'] .live-bar-confidence") == ""
    assert (bar(host, RIGHT)["data-sure"], bar(host, RIGHT)["data-unsure"]) == ("1", "0")
    # The projector, once revealed: the same shares as bars, the answer marked.
    client.post(f"/class/{code}/reveal")
    projected = screen(client, code)
    assert str(node(projected, f"[data-choice='{RIGHT}'] rect")["width"]) == "67"
    assert said(projected, f"[data-choice='{RIGHT}'] .live-bar-count") == "2 (67 %)"
    assert said(projected, ".live-bar-correct .live-bar-label").endswith("(the answer)")
    assert said(projected, ".live-screen-answered") == "All 3 students answered."

    # The next question: no one has answered it yet.
    client.post(f"/class/{code}/ask", data={"question": questions()[1].id})
    assert said(dashboard(client, code), ".live-summary") == (
        "No answers yet from the 3 students here."
    )


def note(pupil: TestClient, code: str) -> str:
    return said(pupil.get(f"/class/{code}").text, ".live-note")


def test_a_students_note_and_the_class_state_follow_each_phase(client: TestClient) -> None:
    code = start_class(client)
    ada, bo = student(client, code, "Ada"), student(client, code, "Bo")
    assert note(ada, code) == "Waiting for the instructor's first question."
    client.post(f"/class/{code}/ask", data={"question": FIRST.id})
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-note") == "Choose one answer."
    assert said(page, ".live-vote") == ""
    assert node(page, "#class-question fieldset").get("disabled") is None
    assert said(page, "#class-question button") == "Send my answer"
    answer(ada, code, WRONG[0], "unsure")
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-note") == (
        f"Your answer: option {WRONG[0]}. You may change it while answering is open."
    )
    assert node(page, "input[name=choice][checked]")["value"] == str(WRONG[0])
    assert node(page, "input[name=confidence][checked]")["value"] == "unsure"
    assert said(page, "#class-question button") == "Change my answer"
    assert soup(page).select_one("[data-first]") is None  # a first answer only during vote 2
    assert said(bo.get(f"/class/{code}").text, ".live-note") == "Choose one answer."

    client.post(f"/class/{code}/pause")
    assert said(dashboard(client, code), ".live-state") == "Question 1: Answering is paused."
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-note") == "The instructor has paused answering."
    assert node(page, "#class-question fieldset").get("disabled") is not None
    assert soup(page).select_one("#class-question button") is None

    client.post(f"/class/{code}/resume")
    client.post(f"/class/{code}/reveal")
    assert said(dashboard(client, code), ".live-state") == (
        "Question 1: The answer is revealed; answering is closed."
    )
    assert said(screen(client, code), ".live-screen-status > span") == (
        "Question 1: The answer is revealed; answering is closed."
    )
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-note") == ""  # the verdict says it
    assert node(page, "#class-verdict")["data-correct"] == "false"
    assert node(page, "input[name=choice][checked]")["value"] == str(WRONG[0])
    assert node(page, "#class-question fieldset").get("disabled") is not None
    assert said(bo.get(f"/class/{code}").text, ".live-note") == "You did not answer this vote."

    client.post(f"/class/{code}/end")
    assert said(dashboard(client, code), ".live-state") == (
        "This class has ended: no one can join or answer."
    )
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-note") == "This class has ended. Thank you for taking part."
    assert node(page, "#class-question fieldset").get("disabled") is not None


def roster_rows(html: str) -> dict[str, tuple[str, str]]:
    """The dashboard's rows: each nickname's answer now and right so far."""
    return {
        words(row.select_one("th")): tuple(words(cell) for cell in row.select("td")[:2])  # type: ignore[arg-type,misc]
        for row in soup(html).select("#roster-rows tr")
    }


def shift_widths(html: str) -> dict[int, tuple[str, ...]]:
    """The shift's bars: each option's widths in vote 1 and vote 2 on a track of 100."""
    return {
        int(str(row["data-option"])): tuple(str(rect["width"]) for rect in row.select("rect"))
        for row in soup(html).select("#shift [data-option]")
    }


def test_two_votes_say_which_vote_each_answer_and_how_the_votes_moved(
    client: TestClient,
) -> None:
    code = start_class(client)
    ada, bo = student(client, code, "Ada"), student(client, code, "Bo")
    client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    assert said(dashboard(client, code), ".live-vote") == "Vote 1 of 2"
    assert said(ada.get(f"/class/{code}").text, ".live-vote") == "Vote 1 of 2"
    assert said(screen(client, code), ".live-vote") == "Vote 1 of 2"
    assert roster_rows(dashboard(client, code)) == {
        "Ada": ("—", "no answers yet"),
        "Bo": ("—", "no answers yet"),
    }
    answer(ada, code, WRONG[0])
    assert roster_rows(dashboard(client, code))["Ada"] == (f"option {WRONG[0]}", "0 of 1 correct")

    client.post(f"/class/{code}/revote")
    host = dashboard(client, code)
    assert said(host, ".live-state") == "Question 1, vote 2 of 2: Answering is open."
    assert said(host, ".live-vote") == "Vote 2 of 2"
    assert said(screen(client, code), ".live-vote") == "Vote 2 of 2"
    page = ada.get(f"/class/{code}").text
    assert said(page, ".live-vote") == "Vote 2 of 2"
    assert said(page, ".live-note") == "Vote 2: answer again, after talking it over."
    assert node(page, "[data-first]")["data-first"] == str(WRONG[0])
    assert soup(page).select_one("input[name=choice][checked]") is None
    assert note(bo, code) == "You did not answer vote 1. Answer vote 2, after talking it over."
    # Vote 2 is what is answered now: no one has answered it yet.
    assert shown_counts(host) == {
        "all": "2 joined",
        "waiting": "2 not answered yet",
        "answered": "0 answered",
        "shared": "0 shared a lab state",
    }
    # Each row: vote 1 → vote 2; right so far counts vote 1 alone.
    assert roster_rows(host) == {
        "Ada": (f"option {WRONG[0]} → none", "0 of 1 correct"),
        "Bo": ("none → none", "no answers yet"),
    }
    # The shift, on the dashboard as soon as vote 2 opens.
    assert roster_rows(client.get(f"/class/{code}/students").text) == roster_rows(host)
    assert said(host, ".live-shift-summary") == (
        "Right: 0 of 1 right (0 %) in vote 1, no answers in vote 2. No one answered both votes."
    )
    # Each option's row: its words as the students read them, the answer marked; the bars on
    # one scale, the longest (a single answer) spanning the track.
    options = [
        words(label)
        for label in soup(page).select("#class-question fieldset:not(.live-confidence) label")
    ]
    rows = soup(host).select("#shift [data-option]")
    assert [said(str(row), ".live-bar-label") for row in rows] == [
        f"{n}. {text}" + (" (the answer)" if n == RIGHT else "")
        for n, text in zip((n for n, _ in FIRST.choices), options, strict=True)
    ]
    assert [n for n, _ in FIRST.choices if n == RIGHT] == [
        int(str(row["data-option"])) for row in soup(host).select("#shift .live-shift-correct")
    ]
    assert shift_widths(host)[WRONG[0]] == ("100.00", "0.00")
    answer(bo, code, RIGHT, vote=2)
    host = dashboard(client, code)
    assert roster_rows(host)["Bo"] == (f"none → option {RIGHT}", "no answers yet")
    # Bo has answered vote 2, Ada not yet: she is listed first, as waiting.
    assert list(roster_rows(host)) == ["Ada", "Bo"]
    assert caption(host) == "All 2 students: who has not answered, then the others; newest first."
    assert list(roster_rows(client.get(f"/class/{code}/students?show=answered").text)) == ["Bo"]
    assert list(roster_rows(client.get(f"/class/{code}/students?show=waiting").text)) == ["Ada"]
    assert said(host, ".live-shift-summary") == (
        "Right: 0 of 1 right (0 %) in vote 1, 1 of 1 right (100 %) in vote 2."
        " No one answered both votes."
    )
    answer(ada, code, RIGHT, vote=2)
    host = dashboard(client, code)
    assert roster_rows(host)["Ada"] == (f"option {WRONG[0]} → option {RIGHT}", "0 of 1 correct")
    assert said(host, ".live-shift-summary") == (
        "Right: 0 of 1 right (0 %) in vote 1, 2 of 2 right (100 %) in vote 2."
        " Of 1 student who answered both votes, 1 moved to the answer and 0 away from it."
    )
    # The bars of both votes on one scale: the longest (2 answers) spans the track.
    assert shift_widths(host) == {
        WRONG[0]: ("50.00", "0.00"),
        RIGHT: ("0.00", "100.00"),
        WRONG[1]: ("0.00", "0.00"),
    }
    assert said(host, f"#shift [data-option='{RIGHT}'] .live-bar-count") == "0 → 2"
    # The class ends with vote 2 open: no one can answer any more.
    client.post(f"/class/{code}/end")
    page = ada.get(f"/class/{code}").text
    assert node(page, "#class-question fieldset").get("disabled") is not None
    assert soup(page).select_one("#class-question button") is None


def test_students_who_keep_their_answer_moved_neither_way(client: TestClient) -> None:
    code = start_class(client)
    ada, bo = student(client, code, "Ada"), student(client, code, "Bo")
    client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    answer(ada, code, RIGHT)
    answer(bo, code, WRONG[0])
    client.post(f"/class/{code}/revote")
    answer(ada, code, RIGHT, vote=2)  # right both times
    answer(bo, code, WRONG[1], vote=2)  # wrong both times, though not the same wrong option
    client.post(f"/class/{code}/reveal")
    for html in (dashboard(client, code), screen(client, code)):
        assert said(html, ".live-shift-summary") == (
            "Right: 1 of 2 right (50 %) in vote 1, 1 of 2 right (50 %) in vote 2."
            " Of 2 students who answered both votes, 0 moved to the answer and 0 away from it."
        )


def test_the_discussion_timer_says_its_end_and_goes_when_the_class_ends(
    client: TestClient,
) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    client.post(f"/class/{code}/ask", data={"question": FIRST.id, "rounds": "2"})
    assert client.post(f"/class/{code}/timer", data={"seconds": "90"}).status_code == 200
    for html in (dashboard(client, code), screen(client, code), ada.get(f"/class/{code}").text):
        ends = datetime.strptime(str(node(html, "#timer")["data-ends"]), "%Y-%m-%dT%H:%M:%SZ")
        assert said(html, "#timer time") == ends.strftime("%H:%M:%S") + " UTC"
    client.post(f"/class/{code}/end")
    for html in (dashboard(client, code), screen(client, code), ada.get(f"/class/{code}").text):
        assert soup(html).select_one("#timer") is None


def caption(html: str) -> str:
    return said(html, "#roster-caption")


def shown_counts(html: str) -> dict[str, str]:
    """The roster's counts, each with the words after it, by the filter it links to."""
    return {str(link["data-filter"]): words(link) for link in soup(html).select("[data-filter]")}


def test_the_rosters_captions_and_counts_for_no_one_one_and_many(client: TestClient) -> None:
    code = start_class(client)
    roster = f"/class/{code}/students"
    assert said(dashboard(client, code), "#host-roster") == "No one has joined yet."
    assert caption(client.get(roster).text) == "No one has joined yet."
    ada = student(client, code, "Ada")
    assert caption(dashboard(client, code)) == "The one student here."
    assert caption(client.get(roster).text) == "1 of 1 student, in the order they joined."
    assert caption(client.get(f"{roster}?show=shared").text) == "None of the 1 student."
    bo = student(client, code, "Bo")
    host = dashboard(client, code)
    assert caption(host) == "All 2 students, newest first."
    # No question asked: no one is waiting for an answer.
    assert shown_counts(host) == {"all": "2 joined", "shared": "0 shared a lab state"}
    assert caption(client.get(f"{roster}?show=waiting").text) == "None of the 2 students."

    client.post(f"/class/{code}/ask", data={"question": FIRST.id})
    answer(ada, code, RIGHT)
    host = dashboard(client, code)
    assert caption(host) == "All 2 students: who has not answered, then the others; newest first."
    assert list(roster_rows(host)) == ["Bo", "Ada"]
    assert shown_counts(host) == {
        "all": "2 joined",
        "waiting": "1 not answered yet",
        "answered": "1 answered",
        "shared": "0 shared a lab state",
    }
    assert roster_rows(client.get(f"{roster}?show=shared").text) == {}
    for kind, listed in (("waiting", "Bo"), ("answered", "Ada"), ("all", "Ada Bo")):
        page = client.get(f"{roster}?show={kind}").text
        assert " ".join(roster_rows(page)) == listed, kind
        assert roster_rows(page) == {name: roster_rows(host)[name] for name in listed.split()}
        expected = "1 of 2 students" if kind != "all" else "2 of 2 students"
        assert caption(page) == f"{expected}, in the order they joined.", kind
        assert shown_counts(page) == shown_counts(host)
    state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    assert ada.post(f"/class/{code}/share", data=state).status_code == 200
    host = dashboard(client, code)
    assert caption(host) == (
        "All 2 students: who shared a lab state, then who has not answered, then the others;"
        " newest first."
    )
    assert list(roster_rows(host)) == ["Ada", "Bo"]
    assert shown_counts(host)["shared"] == "1 shared a lab state"
    assert list(roster_rows(client.get(f"{roster}?show=shared").text)) == ["Ada"]
    answer(bo, code, WRONG[0])
    host = dashboard(client, code)
    assert caption(host) == "All 2 students: who shared a lab state, then the others; newest first."
    assert roster_rows(host) == {
        "Ada": (f"option {RIGHT}", "1 of 1 correct"),
        "Bo": (f"option {WRONG[0]}", "0 of 1 correct"),
    }
    assert caption(client.get(f"{roster}?show=waiting").text) == "None of the 2 students."

    # A filter or a page the roster has not: the refusal names the field and what it takes.
    wrong = client.get(f"{roster}?show=late", headers={"Accept": "text/html"})
    assert wrong.status_code == 422
    assert "The field “show” must be one of all, waiting, answered, shared." in words(
        soup(wrong.text)
    )
    beyond = client.get(f"{roster}?page=2", headers={"Accept": "text/html"})
    assert beyond.status_code == 422
    assert (
        "The field “page” must be a page from 1 to 1: this list of the roster has 1 page."
        in words(soup(beyond.text))
    )
    assert client.get(f"{roster}?page=0").status_code == 422
    assert client.get(f"{roster}?page=1").status_code == 200


def test_the_dashboards_link_opens_the_state_sent_in_the_lab(client: TestClient) -> None:
    code = start_class(client)
    state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    assert client.post(f"/class/{code}/lab", data=state).status_code == 200
    link = [
        a for a in soup(dashboard(client, code)).select("a") if words(a) == "Open it in the lab"
    ]
    assert len(link) == 1
    href = str(link[0]["href"])
    assert href.endswith("#lab")  # the lab itself, not the top of the lesson
    lab = node(client.get(href).text, "#lab-form")
    assert [str(i["value"]) for i in lab.select("input[name=counts]")] == ["2", "6"]
    assert [str(i["value"]) for i in lab.select("input[name=means]")] == ["1", "3"]
    assert (
        node(str(lab), "input[name=eta]")["value"],
        node(str(lab), "input[name=w]")["value"],
    ) == (
        "0.1",
        "10",
    )
