"""Which database the live class keeps its classes in, and what each choice asks of the server.

SQLite in the data folder needs nothing configured. ``ATLAS_DATABASE_URL=postgresql://...`` is
PostgreSQL through asyncpg: shared by several replicas, so the migrations run under a lock that
holds across machines, the replicas must share one signing key and instructor password, and a
database that cannot be reached makes a request answer 503 with ``Retry-After`` rather than 500
or a hang.
"""

import asyncio
import logging
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

log = logging.getLogger("atlas")
# The schemes a PostgreSQL URL is written with, and the one SQLAlchemy's asyncpg driver reads.
POSTGRESQL_SCHEMES = ("postgresql://", "postgres://", "postgresql+asyncpg://")
ASYNCPG_SCHEME = "postgresql+asyncpg://"
# Any number fixed for this app: replicas starting together queue on it in PostgreSQL.
MIGRATION_LOCK = 0x41746C6173  # "Atlas"
# A database that does not answer is given up on within these (asyncpg's own defaults are 60 s
# to connect and no limit on a query: a stopped server must not hold a student's request).
CONNECT_TIMEOUT_S = 3.0
QUERY_TIMEOUT_S = 10.0
PING_TIMEOUT_S = 2.0
RETRY_AFTER_S = 5
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 2.0
# What the drivers raise when the database is away (asyncpg raises its connection errors and
# the socket's own unwrapped while connecting; SQLAlchemy wraps the rest in DBAPIError, and
# asyncpg's server errors, such as too many connections, in an emulated DBAPI error first:
# its ``driver_exception`` is asyncpg's).
AWAY: tuple[type[Exception], ...] = (
    ConnectionError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, starting up
    asyncpg.exceptions.TooManyConnectionsError,
)


class SharedKeyError(RuntimeError):
    """PostgreSQL is configured but ``ATLAS_SECRET_KEY`` or ``ATLAS_INSTRUCTOR_PASSWORD`` is not."""


def is_postgresql(url: str) -> bool:
    return url.startswith(POSTGRESQL_SCHEMES)


def engine_url(configured: str, sqlite_file: Path) -> str:
    """The SQLAlchemy URL: ``postgresql://`` (as PostgreSQL and every host write it) read by
    asyncpg; an empty setting is SQLite in ``sqlite_file``; anything else as given."""
    if not configured:
        return f"sqlite+aiosqlite:///{sqlite_file}"
    if is_postgresql(configured):
        return ASYNCPG_SCHEME + configured.split("://", 1)[1]
    return configured


def require_shared_key(database_url: str, secret_key: str, instructor_password: str) -> None:
    """Refuse PostgreSQL without a configured key and instructor password: each replica would
    make its own, so a cookie signed by one would be refused by the next (the student would be
    a stranger), and the password printed by one would not open the next."""
    missing = [
        name
        for name, value in (
            ("ATLAS_SECRET_KEY", secret_key),
            ("ATLAS_INSTRUCTOR_PASSWORD", instructor_password),
        )
        if not value
    ]
    if is_postgresql(database_url) and missing:
        raise SharedKeyError(
            f"ATLAS_DATABASE_URL names PostgreSQL, which several replicas share: set"
            f" {' and '.join(missing)}, the same on every replica, so that a cookie signed by"
            " one replica is accepted by the others and one password starts a class on any"
            " (e.g. ATLAS_SECRET_KEY=$(python3 -c"
            " 'import secrets; print(secrets.token_urlsafe(32))'))"
        )


def connect_args(url: str) -> dict[str, float]:
    """asyncpg's timeouts for a PostgreSQL URL (none for others)."""
    if url.startswith(ASYNCPG_SCHEME):
        return {"timeout": CONNECT_TIMEOUT_S, "command_timeout": QUERY_TIMEOUT_S}
    return {}


def backoff(attempt: int) -> float:
    """Seconds before retry ``attempt`` (0, 1, 2, ...) at something that was away: soon at
    first, doubling to a ceiling short enough that work resumes within seconds of its return."""
    return float(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2**attempt))


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot be reached now (not that a query is wrong)."""
    if isinstance(error, AWAY):
        return True
    if isinstance(error, DBAPIError):
        return (
            error.connection_invalidated
            or isinstance(error, OperationalError | InterfaceError)
            or (error.orig is not None and unreachable(error.driver_exception))
        )
    return False


async def reachable(engine: AsyncEngine) -> bool:
    """Whether the database answers a trivial query now (for /healthz), within a bound."""
    try:
        async with asyncio.timeout(PING_TIMEOUT_S), engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as error:
        if unreachable(error):
            return False
        raise
    return True


async def answer_unavailable(request: Request, error: Exception) -> Response:
    """A request that met an unreachable database: 503 and when to try again, never a 500;
    anything else goes on to the server's 500."""
    if not unreachable(error):
        raise error
    log.warning("database unreachable for %s %s: %r", request.method, request.url.path, error)
    unsaved = "" if request.method in ("GET", "HEAD") else ", so what you sent was not saved"
    return PlainTextResponse(
        f"The class's database cannot be reached just now{unsaved}."
        f" Try again in {RETRY_AFTER_S} seconds.",
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S), "Cache-Control": "no-store"},
    )


# The exception classes main.py routes to answer_unavailable.
HANDLED: tuple[type[Exception], ...] = (DBAPIError, *AWAY)
