"""memory: claims on messages being embedded, so several workers embed one guild at once.

Revision ID: memory_0005

An embedding batch sets ``embed_claim`` (a random token) and ``embed_claimed_ms`` on the
messages it reads and clears them when it writes their segments; other batches skip claimed
rows until the claim is older than its lease (a worker that died). Both NULL: not claimed.
A partial index over messages never embedded hands a batch its oldest rows in id order
(the ``(guild_id, vector_model, id)`` index does not: PostgreSQL sorts every waiting row).
PostgreSQL: new pages of ``memory_messages`` keep 15 % free (fillfactor 85), so setting a
claim, which touches no indexed column, can stay on its page (a HOT update) instead of
adding the message's words to the full-text index again.
"""

import sqlalchemy as sa
from alembic import op

revision = "memory_0005"
down_revision = "memory_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memory_messages", sa.Column("embed_claim", sa.String(32), nullable=True))
    op.add_column("memory_messages", sa.Column("embed_claimed_ms", sa.BigInteger, nullable=True))
    op.create_index(
        "ix_memory_messages_unembedded",
        "memory_messages",
        ["guild_id", "id"],
        postgresql_where=sa.text("vector_model IS NULL"),
        sqlite_where=sa.text("vector_model IS NULL"),
    )

    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE memory_messages SET (fillfactor = 85)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE memory_messages RESET (fillfactor)")
    op.drop_index("ix_memory_messages_unembedded", "memory_messages")
    with op.batch_alter_table("memory_messages") as batch:
        batch.drop_column("embed_claimed_ms")
        batch.drop_column("embed_claim")
