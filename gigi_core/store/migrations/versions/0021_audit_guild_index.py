"""An index on the audit log by server and id, for the dashboard's audit page.

Revision ID: kernel_0021
Revises: kernel_0020

The audit page reads one keyset page of a server's rows, newest first
(``guild_id = ? [AND id < ?] ORDER BY id DESC LIMIT n``). With ``ix_audit_events_guild_id``
alone, PostgreSQL without fresh statistics read every row of the server and sorted them
(258 ms for 900k rows); ``(guild_id, id)`` serves the page from the index walked backwards
(0.03 ms), and pages deep in a small server's history too (docs/benchmarks.md).
"""

from alembic import op

revision = "kernel_0021"
down_revision = "kernel_0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_audit_events_guild_id_id", "audit_events", ["guild_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_events_guild_id_id", table_name="audit_events")
