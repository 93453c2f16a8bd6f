"""Usage per member and UTC day, and the watermark of the events folded into it.

Revision ID: kernel_0023
Revises: kernel_0022

``llm_usage_actor_days`` sums the usage events of each guild per UTC day and member
(``actor_id`` '' for calls no member made); ``llm_usage_actor_watermark`` holds the last
event id folded in. The job ``gigi.usage_members_fold`` fills both from the events already
stored and keeps them current, so the model call's own write is unchanged.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0023"
down_revision = "kernel_0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_usage_actor_days",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("actor_id", sa.String(64), primary_key=True),
        sa.Column("calls", sa.BigInteger, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sqlite_with_rowid=False,  # stored in key order: a guild's days are one range read
    )
    watermark = op.create_table(
        "llm_usage_actor_watermark",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("last_event_id", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(watermark, [{"id": 1, "last_event_id": 0}])


def downgrade() -> None:
    op.drop_table("llm_usage_actor_watermark")
    op.drop_table("llm_usage_actor_days")
