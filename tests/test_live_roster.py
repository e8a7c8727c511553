"""The roster of a class as a lecture hall needs it, through the real app on SQLite: the
dashboard counts the class and lists a dozen students, those who need attention first; the
whole roster is a page of its own, page by page and filtered, refusing a filter or page it has
not by name; the dashboard's stream sends a part only when it changed (an answer counted is not
a row re-sent)."""

import re

from fastapi.testclient import TestClient

from app.live.view import ATTENTION_ROWS, ROSTER_PAGE
from tests import test_live, test_live_refusals
from tests.test_live import node, other_browser, questions, soup, start_class, words
from tests.test_live_refusals import events, next_event, quiet_other_workers

data_dir = test_live.data_dir


client = test_live_refusals.sqlite_client


def join_many(host: TestClient, code: str, count: int) -> list[TestClient]:
    """``count`` students, "S000", "S001", … in the order they joined."""
    students = []
    for n in range(count):
        pupil = other_browser(host)
        joined = pupil.post("/join", data={"code": code, "nickname": f"S{n:03}"})
        assert joined.status_code == 200, joined.text[:200]
        students.append(pupil)
    return students


def asked(host: TestClient, count: int) -> tuple[str, list[TestClient]]:
    """A class of ``count`` students (see join_many), its first question asked."""
    code = start_class(host)
    students = join_many(host, code, count)
    host.post(f"/class/{code}/ask", data={"question": questions()[0].id})
    return code, students


def answer(pupil: TestClient, code: str, choice: int = 1) -> None:
    sent = pupil.post(
        f"/class/{code}/answer", data={"question": questions()[0].id, "choice": choice}
    )
    assert sent.status_code == 200, sent.text[:200]


def listed(html: str) -> list[str]:
    return [words(row.select_one("th")) for row in soup(html).select("#roster-rows tr")]  # type: ignore[arg-type]


def counts(html: str) -> dict[str, int]:
    return {
        str(link["data-filter"]): int(words(link.select_one(".live-number")))  # type: ignore[arg-type]
        for link in soup(html).select("[data-filter]")
    }


def test_the_dashboard_counts_the_class_and_lists_those_who_need_attention_first(
    client: TestClient,
) -> None:
    code, students = asked(client, 15)
    for pupil in students[10:]:  # the newest five
        answer(pupil, code)
    state = {"counts": "2,6", "means": "1,3", "eta": "0.1", "w": "10"}
    assert students[1].post(f"/class/{code}/share", data=state).status_code == 200
    page = client.get(f"/class/{code}/host").text
    assert counts(page) == {"all": 15, "waiting": 10, "answered": 5, "shared": 1}
    # Who shared a lab state, then who has not answered (newest first), then the others.
    waiting = [f"S{n:03}" for n in (9, 8, 7, 6, 5, 4, 3, 2, 0)]
    assert listed(page) == ["S001", *waiting, "S014", "S013"]
    assert len(listed(page)) == ATTENTION_ROWS
    assert words(node(page, "#roster-caption")) == (
        "12 of 15 students: who shared a lab state, then who has not answered, then the"
        " others; newest first."
    )
    everyone = node(page, "#host-roster a[href$='/students']")
    assert words(everyone) == "All 15 students, page by page"


def test_the_roster_page_lists_everyone_page_by_page_and_as_filtered(
    client: TestClient,
) -> None:
    code, students = asked(client, ROSTER_PAGE + 5)
    for pupil in students[:3]:
        answer(pupil, code)
    first = client.get(f"/class/{code}/students")
    assert first.status_code == 200
    assert listed(first.text) == [f"S{n:03}" for n in range(ROSTER_PAGE)]
    assert words(node(first.text, "#roster-caption")) == (
        f"{ROSTER_PAGE + 5} of {ROSTER_PAGE + 5} students, in the order they joined:"
        f" 1-{ROSTER_PAGE} on page 1 of 2."
    )
    following = node(first.text, "a[rel=next]")["href"]
    assert listed(client.get(str(following)).text) == [
        f"S{n:03}" for n in range(ROSTER_PAGE, ROSTER_PAGE + 5)
    ]
    answered = client.get(f"/class/{code}/students?show=answered").text
    assert listed(answered) == ["S000", "S001", "S002"]
    assert node(answered, "[aria-current=page]")["data-filter"] == "answered"
    waiting = client.get(f"/class/{code}/students?show=waiting&page=1").text
    assert listed(waiting)[0] == "S003"
    # Each row removes or projects its student, as on the dashboard.
    form = node(first.text, "#roster-rows").find_parent("form")
    assert form is not None
    assert form["action"] == f"/class/{code}/remove"
    # A filter or a page the roster has not: 422 naming the field, never another list.
    for query, field in (("show=late", "show"), ("page=3", "page"), ("page=x", "page")):
        refused = client.get(f"/class/{code}/students?{query}", headers={"Accept": "text/html"})
        assert refused.status_code == 422, query
        assert f"“{field}”" in refused.text, query
    # The host's page alone.
    assert other_browser(client).get(f"/class/{code}/students").status_code == 403
    assert students[0].get(f"/class/{code}/students").status_code == 403


def test_an_answer_from_a_student_not_listed_is_counted_without_a_row(
    client: TestClient,
) -> None:
    code, students = asked(client, ATTENTION_ROWS + 2)
    quiet_other_workers(client)
    newest = f"S{ATTENTION_ROWS + 1:03}"

    def answered(count: int) -> re.Pattern[str]:
        return re.compile(rf'id="answer-count"[^>]*>{count}<')

    with client.stream("GET", f"/class/{code}/events?view=host") as dashboard:
        assert dashboard.status_code == 200
        watching = events(dashboard)
        opened = next_event(watching, lambda e: e.name == "host", "the dashboard")
        assert newest in listed(opened.data)
        assert "S000" not in listed(opened.data)
        # The oldest student is not listed (the dozen newest are still to answer): their answer
        # moves the counts and the bars, and no row.
        # The answered count comes at once; the counts of each kind with it or within the
        # dashboard's gap for details (app/live/events.py); no row in any of them.
        answer(students[0], code)
        event = next_event(watching, lambda e: bool(answered(1).search(e.data)), "one answer")
        sent = [event]
        while soup(event.data).select_one("#host-counts") is None:
            event = next_event(watching, lambda e: e.name == "host", "the counts of each kind")
            sent.append(event)
        assert counts(event.data)["waiting"] == ATTENTION_ROWS + 1
        for each in sent:
            assert soup(each.data).select_one("#host-roster") is None
            assert "<tr" not in each.data
        # The newest student answers: they leave the dozen, the next one still to answer comes.
        answer(students[-1], code)
        event = next_event(watching, lambda e: bool(answered(2).search(e.data)), "two answers")
        if soup(event.data).select_one("#host-roster") is None:
            event = next_event(
                watching, lambda e: soup(e.data).select_one("#host-roster") is not None, "rows"
            )
        shown = listed(event.data)
        assert newest not in shown
        assert "S001" in shown
