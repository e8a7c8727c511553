"""Peer instruction: a question asked for one vote or two, the vote open now, a discussion
timer's end on the class; each answer's vote (round) and the student's confidence.

An answer is unique per student, question and round (it was per student and question).

Revision ID: 0002_peer
Revises: 0002_roster
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_peer"
down_revision: str | None = "0002_roster"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 0001's unique constraint on (participant_id, question) has no name of its own: PostgreSQL
# named it by its rule; SQLite's copy of the table (batch mode) names it by this convention.
CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}
OLD_UNIQUE = {
    "postgresql": "live_answers_participant_id_question_key",
    "sqlite": "uq_live_answers_participant_id",
}
NEW_UNIQUE = "uq_live_answers_participant_question_round"


def upgrade() -> None:
    with op.batch_alter_table("live_classes") as batch:
        batch.add_column(sa.Column("rounds", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("round", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("timer_ends_at", sa.DateTime(), nullable=True))
    old = OLD_UNIQUE[op.get_bind().dialect.name]
    with op.batch_alter_table("live_answers", naming_convention=CONVENTION) as batch:
        batch.add_column(sa.Column("round", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("confidence", sa.String(6), nullable=True))
        batch.drop_constraint(old, type_="unique")
        batch.create_unique_constraint(NEW_UNIQUE, ["participant_id", "question", "round"])


def downgrade() -> None:
    # Vote 2's answers have no place in the old schema.
    op.execute("DELETE FROM live_answers WHERE round <> 1")
    old = OLD_UNIQUE[op.get_bind().dialect.name]
    with op.batch_alter_table("live_answers", naming_convention=CONVENTION) as batch:
        batch.drop_constraint(NEW_UNIQUE, type_="unique")
        batch.create_unique_constraint(old, ["participant_id", "question"])
        batch.drop_column("confidence")
        batch.drop_column("round")
    with op.batch_alter_table("live_classes") as batch:
        batch.drop_column("timer_ends_at")
        batch.drop_column("round")
        batch.drop_column("rounds")
