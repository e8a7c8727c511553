"""The live class: classes, their students, and the students' answers.

Revision ID: 0001
Revises:
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "live_classes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("code", sa.String(6), nullable=False, unique=True),
        sa.Column("lesson", sa.String(200), nullable=False),
        sa.Column("host_token", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("question", sa.String(200), nullable=True),
        sa.Column("phase", sa.String(10), nullable=False),
        sa.Column("show_live", sa.Boolean(), nullable=False),
        sa.Column("lab_query", sa.String(20_000), nullable=False),
        sa.Column("screen_query", sa.String(20_000), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
    )
    op.create_index("ix_live_classes_created_at", "live_classes", ["created_at"])
    op.create_table(
        "live_participants",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "class_id",
            sa.Integer(),
            sa.ForeignKey("live_classes.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("nickname", sa.String(100), nullable=False),
        sa.Column("nickname_key", sa.String(100), nullable=False),
        sa.Column("token", sa.String(64), nullable=False, unique=True),
        sa.Column("joined_at", sa.DateTime(), nullable=False),
        sa.Column("shared_query", sa.String(20_000), nullable=False),
        sa.UniqueConstraint("class_id", "nickname_key"),
    )
    op.create_table(
        "live_answers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "class_id",
            sa.Integer(),
            sa.ForeignKey("live_classes.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "participant_id",
            sa.Integer(),
            sa.ForeignKey("live_participants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("question", sa.String(200), nullable=False),
        sa.Column("choice", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("answered_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("participant_id", "question"),
    )
    op.create_index("ix_live_answers_class_question", "live_answers", ["class_id", "question"])


def downgrade() -> None:
    op.drop_table("live_answers")
    op.drop_table("live_participants")
    op.drop_index("ix_live_classes_created_at", "live_classes")
    op.drop_table("live_classes")
