"""Private PostgreSQL servers for the tests (bench/_stores.py starts them).

Nothing is configured by hand: ``.ci/run`` installs Debian's ``postgresql`` and these fixtures do
the rest, each server stopped (its processes gone, its folder removed) by the fixture that
started it. A missing PostgreSQL skips the test with the reason; under ``CI=true`` it fails (CI
installs it, so a skip there would hide a broken install step).

Registered as a plugin by ``tests/conftest.py``.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import _stores
from bench._stores import POSTGRES_MIN_VERSION, POSTGRES_ROOT, Postgres


def require(found: Path | None, reason: str) -> Path:
    """``found``, or skip with ``reason`` (fail under ``CI=true``, which installs every server)."""
    if found is not None:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def required_postgres_bin() -> Path:
    """The ``bin`` folder of PostgreSQL 15+; skip (or fail under CI) without one."""
    return require(
        _stores.postgres_bin(),
        f"no PostgreSQL {POSTGRES_MIN_VERSION}+ under {POSTGRES_ROOT}"
        " (apt-get install -y postgresql)",
    )


def new_postgres() -> Postgres:
    """Skip (or fail under CI) without PostgreSQL 15+; else a cluster made but not started."""
    return _stores.new_postgres(required_postgres_bin())


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """One PostgreSQL for the session; tests take a database of their own (``postgres_url``)."""
    with _stores.running(new_postgres()) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: Postgres) -> Iterator[str]:
    """The URL of a new, empty database on the session's PostgreSQL, dropped afterwards."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)


@pytest.fixture
def private_postgres() -> Iterator[Postgres]:
    """A PostgreSQL of this test's own, which it may stop and start (fault tests)."""
    with _stores.running(new_postgres()) as server:
        yield server
