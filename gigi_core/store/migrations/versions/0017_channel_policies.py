"""Per-channel and per-role LLM policies, failover lists, model catalogue cache.

Revision ID: kernel_0017
Revises: kernel_0016

PLACEHOLDER (session 13 coordination): filled in by the change that owns it, or removed.
"""

revision = "kernel_0017"
down_revision = "kernel_0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
