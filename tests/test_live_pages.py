"""The class's pages and their live parts (app/live/pages.py) through the real app on SQLite:
the links, addresses and parts each page shows, for the instructor, the projector and the
students. Written for the survivors of its mutation run (docs/testing.md, "The live class")."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests import test_live
from tests.test_live import node, settings_for, start_class

data_dir = test_live.data_dir


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(data_dir))) as host:
        yield host


def test_every_class_page_is_not_stored(client: TestClient) -> None:
    code = start_class(client)
    for address in (f"/class/{code}/host", f"/class/{code}/screen", f"/class/{code}/students"):
        shown = client.get(address)
        assert shown.status_code == 200, address
        assert shown.headers["cache-control"] == "no-store", address
        assert node(shown.text, "main") is not None
