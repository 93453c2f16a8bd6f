"""ambient: enabled channels with their persona, and per-guild daily counters.

Revision ID: ambient_0001

The persona text is an admin's instructions, not chat content; the counters are metadata
only (numbers of calls, answers, silences, tokens).
"""

import sqlalchemy as sa
from alembic import op

revision = "ambient_0001"
down_revision = None
branch_labels = ("ambient",)
depends_on = "kernel_0001"


def upgrade() -> None:
    op.create_table(
        "ambient_channels",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), primary_key=True),
        sa.Column("persona", sa.Text, nullable=False),
        sa.Column("enabled_by", sa.String(64), nullable=True),
        sa.Column("enabled_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "ambient_daily",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        *(
            sa.Column(name, sa.Integer, nullable=False, server_default="0")
            for name in ("calls", "answers", "silences", "staff_notes", "skipped", "failures")
        ),
        sa.Column("tokens", sa.BigInteger, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("ambient_daily")
    op.drop_table("ambient_channels")
