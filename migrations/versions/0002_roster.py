"""The roster is the host's: joining closed or open, the removed students kept out until
readmitted, and each nickname's confusable skeleton, unique per class (look-alikes are one name).

Revision ID: 0002_roster
Revises: 0001
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.live.join import nickname_skeleton

revision: str = "0002_roster"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SKELETON = 255


def upgrade() -> None:
    with op.batch_alter_table("live_classes") as table:
        table.add_column(
            sa.Column("joining_locked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("live_participants") as table:
        table.add_column(sa.Column("nickname_skeleton", sa.String(SKELETON), nullable=True))
    # The students already in: their skeletons; two look-alikes already in one class keep both
    # names (the later one's skeleton made unique with its id).
    participants = sa.table(
        "live_participants",
        sa.column("id", sa.Integer()),
        sa.column("class_id", sa.Integer()),
        sa.column("nickname", sa.String()),
        sa.column("nickname_skeleton", sa.String()),
    )
    connection = op.get_bind()
    seen: set[tuple[int, str]] = set()
    rows = connection.execute(
        sa.select(participants.c.id, participants.c.class_id, participants.c.nickname).order_by(
            participants.c.id
        )
    ).all()
    for row_id, class_id, nickname in rows:
        skeleton = nickname_skeleton(nickname)[: SKELETON - 12]
        if (class_id, skeleton) in seen:
            skeleton = f"{skeleton}#{row_id}"
        seen.add((class_id, skeleton))
        connection.execute(
            participants.update()
            .where(participants.c.id == row_id)
            .values(nickname_skeleton=skeleton)
        )
    with op.batch_alter_table("live_participants") as table:
        table.alter_column("nickname_skeleton", existing_type=sa.String(SKELETON), nullable=False)
        table.create_unique_constraint(
            "uq_live_participants_class_id_nickname_skeleton", ["class_id", "nickname_skeleton"]
        )
    op.create_table(
        "live_removed",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "class_id",
            sa.Integer(),
            sa.ForeignKey("live_classes.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("nickname", sa.String(100), nullable=False),
        sa.Column("nickname_key", sa.String(100), nullable=False),
        sa.Column("nickname_skeleton", sa.String(SKELETON), nullable=False),
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("removed_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_live_removed_class", "live_removed", ["class_id"])


def downgrade() -> None:
    op.drop_index("ix_live_removed_class", "live_removed")
    op.drop_table("live_removed")
    with op.batch_alter_table("live_participants") as table:
        table.drop_constraint("uq_live_participants_class_id_nickname_skeleton", type_="unique")
        table.drop_column("nickname_skeleton")
    with op.batch_alter_table("live_classes") as table:
        table.drop_column("joining_locked")
