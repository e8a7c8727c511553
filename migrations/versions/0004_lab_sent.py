"""When the instructor last sent a lab state to everyone: a student's drag that reached a server
before that moment, but is written after it, no longer undoes it (app/live/drags.py).

Revision ID: 0004_lab_sent
Revises: 0002_peer
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_lab_sent"
down_revision: str | None = "0002_peer"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("live_classes") as batch:
        batch.add_column(sa.Column("lab_sent_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("live_classes") as batch:
        batch.drop_column("lab_sent_at")
