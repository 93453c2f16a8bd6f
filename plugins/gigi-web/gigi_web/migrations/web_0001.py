"""web: the dashboard's sign-in sessions.

Revision ID: web_0001

One row per browser session that holds something (a sign-in in flight or a signed-in
member): the SHA-256 hash of the random id the cookie carries, never the id; who signed
in; the CSRF token; the expiry; and, sealed with the kernel's state key, the Discord
access token and the pending sign-in (state + PKCE verifier). The index serves the caps
(count and evict per kind, soonest to expire first) and the sweep of expired rows.
"""

import sqlalchemy as sa
from alembic import op

revision = "web_0001"
down_revision = None
branch_labels = ("web",)
depends_on = "kernel_0001"


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("signed_in", sa.Boolean, nullable=False),
        sa.Column("expires", sa.Float, nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=True),
        sa.Column("username", sa.String(200), nullable=True),
        sa.Column("token_key", sa.String(32), nullable=True),
        sa.Column("token_nonce", sa.LargeBinary, nullable=True),
        sa.Column("token_sealed", sa.LargeBinary, nullable=True),
        sa.Column("pending_key", sa.String(32), nullable=True),
        sa.Column("pending_nonce", sa.LargeBinary, nullable=True),
        sa.Column("pending_sealed", sa.LargeBinary, nullable=True),
        sa.Column("pending_expires", sa.Float, nullable=True),
    )
    op.create_index("ix_web_sessions_kind_expires", "web_sessions", ["signed_in", "expires"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_kind_expires", table_name="web_sessions")
    op.drop_table("web_sessions")
