"""The live class's streams (app/live/events.py): a page's live parts as Server-Sent Events,
through the real app on SQLite: what each stream sends first, on a change, and when its page has
nothing left to show. Written for the survivors of its mutation run (docs/testing.md, "The live
class")."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests import test_live
from tests.test_live import settings_for, start_class, student
from tests.test_live_refusals import events, next_event, student_ids

data_dir = test_live.data_dir


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir))) as host:
        yield host


def test_a_removed_students_stream_says_gone(client: TestClient) -> None:
    code = start_class(client)
    ada = student(client, code, "Ada")
    with ada.stream("GET", f"/class/{code}/events") as stream:
        assert stream.status_code == 200
        watching = events(stream)
        next_event(watching, lambda e: e.name == "class", "Ada's page")
        who = student_ids(client, code)["Ada"]
        removed = client.post(f"/class/{code}/remove", data={"participant": who})
        assert removed.status_code == 200, removed.text[:300]
        assert next_event(watching, lambda e: e.name != "class", "the end").name == "gone"
