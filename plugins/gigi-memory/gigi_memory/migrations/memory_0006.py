"""memory: the display names members wrote under, for search ("what did Caroline say").

Revision ID: memory_0006

One row per (guild, author, name): a rename adds a row, so old and new names both find the
member's messages. ``name_words`` is the name as search words (``text.words``), what a
query is matched against. Names are a member's data: exported and deleted with their
messages (``gigi privacy``), dropped with the guild, and by the retention job once none of
the member's messages are left.
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0006"
down_revision = "memory_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_authors",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("author_id", sa.String(64), primary_key=True),
        sa.Column("name_words", sa.String(200), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("first_ms", sa.BigInteger, nullable=False),
        sa.Column("last_ms", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("memory_authors")
