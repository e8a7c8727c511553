"""The live class's routes (app/live/routes.py) through the real app on SQLite: what each
address answers, its status, headers and words, for the instructor, the projector and the
students. Written for the survivors of its mutation run (docs/testing.md, "The live class")."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests import test_live
from tests.test_live import settings_for

data_dir = test_live.data_dir


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir))) as host:
        yield host


@pytest.mark.parametrize("address", ["/class/new", "/join"])
def test_a_form_address_answers_another_method_405_naming_get_and_post(
    client: TestClient, address: str
) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        answered = client.request(method, address)
        assert answered.status_code == 405, (method, answered.text[:200])
        assert answered.headers["allow"] == "GET, POST"
