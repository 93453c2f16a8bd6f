"""Personal keys: remembered billing choices and guild-context disclosures (issue owner: BYOK).

Revision ID: kernel_0016
Revises: kernel_0015

PLACEHOLDER (session 13 coordination): filled in by the change that owns it, or removed.
"""

revision = "kernel_0016"
down_revision = "kernel_0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
