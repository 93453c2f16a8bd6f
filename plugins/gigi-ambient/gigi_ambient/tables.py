"""The plugin's tables as SQLAlchemy Core objects (created by ``migrations/ambient_0001``)."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

channels = sa.Table(
    "ambient_channels",
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("channel_id", sa.String(64), primary_key=True),
    sa.Column("persona", sa.Text, nullable=False),
    sa.Column("enabled_by", sa.String(64)),
    sa.Column("enabled_at", sa.DateTime(timezone=True), nullable=False),
)

daily = sa.Table(
    "ambient_daily",
    metadata,
    sa.Column("guild_id", sa.String(64), primary_key=True),
    sa.Column("day", sa.String(10), primary_key=True),
    sa.Column("calls", sa.Integer, nullable=False),
    sa.Column("answers", sa.Integer, nullable=False),
    sa.Column("silences", sa.Integer, nullable=False),
    sa.Column("staff_notes", sa.Integer, nullable=False),
    sa.Column("skipped", sa.Integer, nullable=False),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("tokens", sa.BigInteger, nullable=False),
    sa.Column("pictures", sa.Integer, nullable=False),  # ambient_0002
    # tokens held by calls under way, settled into ``tokens`` after each (ambient_0003)
    sa.Column("reserved", sa.BigInteger, nullable=False, server_default="0"),
)

COUNTERS = (
    "calls",
    "answers",
    "silences",
    "staff_notes",
    "skipped",
    "failures",
    "tokens",
    "pictures",
)

history = sa.Table(
    "ambient_history",
    metadata,
    sa.Column("key", sa.String(32), primary_key=True),
    sa.Column("guild_id", sa.String(64), nullable=False),
    sa.Column("channel_id", sa.String(64), nullable=False),
    sa.Column("message_id", sa.String(64)),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("author_id", sa.String(64), nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("key_id", sa.String(32), nullable=False),
    sa.Column("nonce", sa.LargeBinary, nullable=False),
    sa.Column("sealed", sa.LargeBinary, nullable=False),
)
