"""The dashboard's table as a SQLAlchemy Core object (created by ``migrations/web_0001``)."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# One row per stored browser session. ``id_hash`` is the SHA-256 of the random id the
# cookie carries (never the id itself); the Discord access token and a sign-in in flight
# (state + PKCE verifier) are sealed (AES-256-GCM, the kernel's state key), bound to the
# row. Times are seconds since the epoch (UTC), the same on SQLite and PostgreSQL.
sessions = sa.Table(
    "web_sessions",
    metadata,
    sa.Column("id_hash", sa.String(64), primary_key=True),
    sa.Column("signed_in", sa.Boolean, nullable=False),
    sa.Column("expires", sa.Float, nullable=False),
    sa.Column("csrf", sa.String(64), nullable=False),
    sa.Column("user_id", sa.String(64)),
    sa.Column("username", sa.String(200)),
    sa.Column("token_key", sa.String(32)),
    sa.Column("token_nonce", sa.LargeBinary),
    sa.Column("token_sealed", sa.LargeBinary),
    sa.Column("pending_key", sa.String(32)),
    sa.Column("pending_nonce", sa.LargeBinary),
    sa.Column("pending_sealed", sa.LargeBinary),
    sa.Column("pending_expires", sa.Float),
    sa.Index("ix_web_sessions_kind_expires", "signed_in", "expires"),
)
