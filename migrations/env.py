"""Alembic's environment: the app hands it an open connection (app/live/migrate.py), so the same
history runs on SQLite and PostgreSQL, in batch mode where SQLite cannot alter a table."""

from alembic import context

from app.live.store import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
