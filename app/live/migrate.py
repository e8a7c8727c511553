"""Alembic's history applied when the server starts, by one worker at a time: a file lock in
the data folder for SQLite, PostgreSQL's own advisory lock for replicas on several machines.

An empty database is built from the declared tables and stamped with the newest revision, as
Alembic recommends, rather than replayed through every revision (SQLite's batch mode rebuilds a
table per change: 94 ms a start against 16 ms); tests/test_live_migrations.py holds the history
and the declared tables to the same schema on SQLite and PostgreSQL."""

import asyncio
import fcntl
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, inspect, text

from app import PROJECT_DIR
from app.live.database import MIGRATION_LOCK
from app.live.store import Base, Store

MIGRATIONS = PROJECT_DIR / "migrations"
LOCK_FILE = ".migrate.lock"


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration of this project's history, run on ``connection`` where given."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def replay(connection: Connection, to: str = "head") -> None:
    """Alembic's history applied on ``connection``, up to revision ``to``."""
    if connection.dialect.name == "sqlite":
        # Alembic alters a SQLite table by rebuilding it (a copy, then a DROP of the old one):
        # with foreign keys on, that DROP would delete every row hanging on it by its cascade
        # (a class's answers, when its students' table changes). Off for this connection, which
        # is thrown away afterwards (see upgrade); before any write, as outside a transaction
        # it must be.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    command.upgrade(alembic_config(connection), to)


def _upgrade(connection: Connection) -> None:
    if inspect(connection).get_table_names():
        replay(connection)
    else:
        Base.metadata.create_all(connection)
        command.stamp(alembic_config(connection), "head")


async def revision(store: Store) -> str:
    """The revision the database is at (Alembic's own record of it)."""
    async with store.engine.connect() as connection:
        return str(await connection.scalar(text("SELECT version_num FROM alembic_version")))


async def upgrade(store: Store, data_dir: Path) -> None:
    """Bring the database to the newest revision. Workers start together: the first takes the
    lock and migrates, the others wait for it and find nothing left to do."""
    if store.engine.dialect.name == "postgresql":
        async with store.engine.begin() as connection:
            # Held until this transaction ends; PostgreSQL's DDL is transactional, so a replica
            # that dies half-way leaves the schema as it was.
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK}
            )
            await connection.run_sync(_upgrade)
        return
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(data_dir / LOCK_FILE, "a") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            async with store.engine.begin() as connection:
                await connection.run_sync(_upgrade)
            await store.engine.dispose()  # the next connections have their foreign keys on
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
