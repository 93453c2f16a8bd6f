"""Durable agent runs: runs (with sealed state), steps, confirmations; agent audit columns.

Revision ID: kernel_0003
Revises: kernel_0002
"""

import sqlalchemy as sa
from alembic import op

revision = "kernel_0003"
down_revision = "kernel_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tz = sa.DateTime(timezone=True)
    op.add_column("audit_events", sa.Column("tool_kind", sa.String(16)))
    op.add_column("audit_events", sa.Column("input_tokens", sa.Integer))
    op.add_column("audit_events", sa.Column("output_tokens", sa.Integer))
    op.add_column("audit_events", sa.Column("termination_reason", sa.String(40)))
    op.create_table(
        "agent_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("request_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("guild_id", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(64)),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("termination_reason", sa.String(40)),
        sa.Column("steps_used", sa.Integer, nullable=False),
        sa.Column("tool_calls_used", sa.Integer, nullable=False),
        sa.Column("llm_calls_used", sa.Integer, nullable=False),
        sa.Column("tokens_used", sa.Integer, nullable=False),
        sa.Column("state_key_id", sa.String(32)),
        sa.Column("state_nonce", sa.LargeBinary),
        sa.Column("state_sealed", sa.LargeBinary),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
        sa.Column("finished_at", tz),
    )
    op.create_index("ix_agent_runs_guild_created", "agent_runs", ["guild_id", "created_at"])
    op.create_table(
        "agent_run_steps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "run_id",
            sa.String(32),
            sa.ForeignKey("agent_runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("tool", sa.String(128)),
        sa.Column("capability", sa.String(128)),
        sa.Column("decision", sa.String(16)),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("duration_ms", sa.Float),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("created_at", tz, nullable=False),
    )
    op.create_index("ix_agent_run_steps_run_id", "agent_run_steps", ["run_id"])
    op.create_table(
        "agent_run_confirmations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "run_id",
            sa.String(32),
            sa.ForeignKey("agent_runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("action", sa.String(128), nullable=False),
        sa.Column("args_hash", sa.String(64), nullable=False),
        sa.Column("manifest_version", sa.String(64), nullable=False),
        sa.Column("requester_id", sa.String(64), nullable=False),
        sa.Column("approver_rule", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("decided_by", sa.String(64)),
        sa.Column("expires_at", tz, nullable=False),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("updated_at", tz, nullable=False),
    )
    op.create_index("ix_agent_run_confirmations_run_id", "agent_run_confirmations", ["run_id"])


def downgrade() -> None:
    for table in ("agent_run_confirmations", "agent_run_steps", "agent_runs"):
        op.drop_table(table)
    with op.batch_alter_table("audit_events") as batch:
        for column in ("termination_reason", "output_tokens", "input_tokens", "tool_kind"):
            batch.drop_column(column)
