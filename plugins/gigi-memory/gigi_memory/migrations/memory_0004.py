"""memory: marks for deletes and edits of messages not (yet) stored.

Revision ID: memory_0004

A backfill page read before a message was deleted or edited may reach the writer after the
delete or edit did: without a mark it would bring the text back. A delete of an unknown
message in a remembered channel leaves a ``deleted`` mark (ids and times only), an edit an
``edited`` mark (``withheld``: edited while the channel was paused or secure); a later sync
or import honours them until ``until_ms``, the latest the message could still be retained.
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0004"
down_revision = "memory_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_tombstones",
        sa.Column("guild_id", sa.String(64), primary_key=True),
        sa.Column("message_id", sa.String(64), primary_key=True),
        sa.Column("channel_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),  # deleted | edited | withheld
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("until_ms", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_memory_tombstones_until", "memory_tombstones", ["until_ms"])


def downgrade() -> None:
    op.drop_index("ix_memory_tombstones_until", "memory_tombstones")
    op.drop_table("memory_tombstones")
