"""ambient: tokens reserved for calls under way (the daily budget's check-and-reserve).

Revision ID: ambient_0003

A call reserves its most it may cost in ``reserved`` before it is made, in one statement
that checks ``tokens + reserved`` against the budget; it is settled into ``tokens`` with its
real usage after the call, or released on failure (``gigi_ambient.budget``).
"""

import sqlalchemy as sa
from alembic import op

revision = "ambient_0003"
down_revision = "ambient_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "ambient_daily", sa.Column("reserved", sa.BigInteger, nullable=False, server_default="0")
    )


def downgrade() -> None:
    op.drop_column("ambient_daily", "reserved")
