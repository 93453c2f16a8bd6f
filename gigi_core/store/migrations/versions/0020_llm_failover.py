"""Provider failover lists per owner and purpose, usage rows saying which entry served and
why, and the model listing of each credential.

Revision ID: kernel_0020
Revises: kernel_0019

``llm_failover`` holds each owner's ordered list (credential ids and models, and the error
classes that move on); ``llm_usage_events`` gains ``failover_step`` (1 for the list's first
entry, ...; NULL for the profile's own call) and ``failover_reason`` (the error class that
moved the call on). ``llm_model_catalogue`` keeps each credential's last model listing
with the key fingerprint it was fetched with (``gigi_core.llm.catalogue``). Metadata only.
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0020"
down_revision = "kernel_0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_failover",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("owner_type", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("entries", sa.JSON, nullable=False),
        sa.Column("on_errors", sa.JSON, nullable=False),
        sa.Column("updated_by", sa.String(64)),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("owner_type", "owner_id", "purpose", name="uq_llm_failover"),
    )
    op.create_table(
        "llm_model_catalogue",
        sa.Column("credential_id", sa.String(32), primary_key=True),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("models", sa.JSON, nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("llm_usage_events") as batch:
        batch.add_column(sa.Column("failover_step", sa.Integer))
        batch.add_column(sa.Column("failover_reason", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("llm_usage_events") as batch:
        batch.drop_column("failover_reason")
        batch.drop_column("failover_step")
    op.drop_table("llm_model_catalogue")
    op.drop_table("llm_failover")
