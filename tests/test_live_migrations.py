"""One schema, reached two ways, on SQLite and on PostgreSQL: Alembic's history replayed from an
empty database, and the declared tables created and stamped at the newest revision (what a
first start does, app/live/migrate.py). A revision that forgets a column, an index, a cascade
or a default the tables declare, or a table that declares one no revision makes, shows here.
That the history still carries an old database's rows forward is test_live_peer's
``test_a_database_from_before_keeps_its_answers_as_vote_1``."""

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import Connection, inspect
from sqlalchemy.ext.asyncio import create_async_engine

from app.live.database import engine_url
from app.live.migrate import alembic_config, replay
from app.live.store import SQLITE_FILE, Base
from app.main import create_app
from tests import test_live
from tests.test_live import settings_for

backend = test_live.backend
data_dir = test_live.data_dir


def _differences(connection: Connection) -> list[Any]:
    """What the database holds that the declared tables do not, and the reverse: columns and
    their types, defaults, keys, indexes, constraints and tables."""
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(context, Base.metadata))


def _schema(connection: Connection) -> dict[str, Any]:
    """Each table's columns, foreign keys (with their ON DELETE) and indexes, as the database
    reports them (columns by name: a revision adds a column after the others)."""
    found = inspect(connection)
    return {
        table: (
            sorted(
                (c["name"], str(c["type"]), c["nullable"], c["default"])
                for c in found.get_columns(table)
            ),
            sorted(
                (key["constrained_columns"], key["referred_table"], key["options"].get("ondelete"))
                for key in found.get_foreign_keys(table)
            ),
            sorted((index["name"], index["column_names"]) for index in found.get_indexes(table)),
        )
        for table in sorted(found.get_table_names())
        if table != "alembic_version"
    }


async def _on(url: str, *steps: Any) -> list[Any]:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            return [await connection.run_sync(step) for step in steps]
    finally:
        await engine.dispose()


def _url(data_dir: Path, backend: dict[str, str]) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    return engine_url(backend.get("database_url", ""), data_dir / SQLITE_FILE)


def test_the_history_replayed_from_empty_builds_the_declared_tables(
    data_dir: Path, backend: dict[str, str]
) -> None:
    _, differences = asyncio.run(_on(_url(data_dir, backend), replay, _differences))
    assert differences == []


@pytest.fixture
def another_database(
    request: pytest.FixtureRequest, tmp_path: Path, backend: dict[str, str]
) -> Iterator[str]:
    """An empty database beside the test's own, on the same backend."""
    if not backend:
        yield _url(tmp_path / "another", {})
        return
    server = request.getfixturevalue("postgres_server")
    url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(url)


def test_a_first_start_builds_the_tables_the_history_builds_at_the_newest_revision(
    data_dir: Path, backend: dict[str, str], another_database: str
) -> None:
    with TestClient(create_app(settings_for(data_dir, **backend))):
        pass
    started, differences, revision = asyncio.run(
        _on(
            _url(data_dir, backend),
            _schema,
            _differences,
            lambda c: c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar_one(),
        )
    )
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision == head
    assert differences == []
    # The same schema as the history's, each read back from its database.
    _, replayed = asyncio.run(_on(engine_url(another_database, Path()), replay, _schema))
    assert started == replayed
