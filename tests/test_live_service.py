"""The class's operations and their refusals (app/live/service.py), through the real app on
SQLite and on the module's own readers: the words and the field of each refusal, the bounds of
what a form may hold, and what each operation leaves in the class. Written for the survivors of
its mutation run (docs/testing.md, "The live class")."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.live.service import InvalidError, read_seconds
from app.main import create_app
from tests import test_live
from tests.test_live import settings_for

data_dir = test_live.data_dir


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir))) as host:
        yield host


def test_a_discussion_timer_runs_from_10_seconds_to_an_hour() -> None:
    assert read_seconds("10") == 10
    assert read_seconds(" 3600 ") == 3600
    for outside in ("9", "3601", "", "ten", "١٠"):
        with pytest.raises(InvalidError) as refused:
            read_seconds(outside)
        assert refused.value.field == "seconds"
        assert refused.value.message == (
            "The field “seconds” must be a whole number of seconds from 10 to 3600"
            f" (got {outside.strip()!r})."
        )
