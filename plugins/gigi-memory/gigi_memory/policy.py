"""Guild policies and channel modes: stored in the plugin's tables, cached in memory.

The event handler decides from the cache alone (it never awaits the database): the cache
is loaded at start-up, changed at once by this process's admin commands, and reloaded
every ``GIGI_MEMORY_POLICY_SECONDS`` (default 5) so changes made by another process apply
within that time. Until the first load succeeds nothing is ingested (fail closed).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.ingest.text import DEFAULT_RULES, RedactionRules

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

STORAGE_MODES = ("encrypted", "index_only", "metadata_only")  # loosest to strictest
# local: only a keyless embedder inside Gigi; profile: the server's (or tenant's) embedding
# profile, which may send message text to that provider; off: full text only.
EMBEDDING_SOURCES = ("local", "profile", "off")
MODES = ("off", "on")
DAY_MS = 86_400_000
ENABLE_SLACK_MS = 5_000  # a live message this much older than the channel's enabling still counts
SECURE_HOLD_SECONDS = 15.0  # longer than the kernel's guild-facts cache (5 s by default)


def refresh_seconds() -> float:
    raw = os.environ.get("GIGI_MEMORY_POLICY_SECONDS", "")
    try:
        value = float(raw) if raw else 5.0
    except ValueError:
        value = 5.0
    return value if value > 0 else 5.0


def millis(when: datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class GuildPolicy:
    enabled: bool = True  # the server-wide switch; channels still start off
    retention_days: int | None = None  # the default; a channel may override it
    storage: str = "encrypted"
    bots_allowed: bool = False
    embeddings: str = "local"
    redaction: RedactionRules = DEFAULT_RULES
    last_purge_at: datetime | None = None
    last_purge_count: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "retention_days": self.retention_days,
            "storage": self.storage,
            "allow_bots": self.bots_allowed,
            "embeddings": self.embeddings,
            "redaction": self.redaction.as_dict(),
        }


@dataclass(frozen=True)
class ChannelMode:
    mode: str = "off"
    retention_days: int | None = None  # None: the guild's default
    enabled_at_ms: int | None = None


@dataclass(frozen=True)
class Gate:
    """Why a message is (not) ingested, decided from the cache."""

    ingest: bool
    reason: str
    retention_days: int | None = None
    storage: str = "encrypted"


_GATES: dict[tuple[bool, str, int | None, str], Gate] = {}


def _gate(
    ingest: bool, reason: str, retention: int | None = None, storage: str = "encrypted"
) -> Gate:
    """One shared instance per outcome: the event handler allocates nothing for its verdict
    (fewer allocations, fewer garbage collections inside the handler: bench P4)."""
    key = (ingest, reason, retention, storage)
    gate = _GATES.get(key)
    if gate is None:
        gate = _GATES[key] = Gate(ingest, reason, retention, storage)
    return gate


@dataclass
class PolicyCache:
    loaded: bool = False
    guilds: dict[str, GuildPolicy] = field(default_factory=dict)
    channels: dict[str, dict[str, ChannelMode]] = field(default_factory=dict)
    secured: dict[tuple[str, str], float] = field(default_factory=dict)  # until (monotonic)
    loaded_at: float = 0.0
    version: int = 0  # bumped by every change made here; a reload that raced one is discarded

    # -- reading ---------------------------------------------------------------------------

    def guild(self, guild_id: str) -> GuildPolicy:
        return self.guilds.get(guild_id) or GuildPolicy()

    def channel(self, guild_id: str, channel_id: str | None) -> ChannelMode | None:
        if channel_id is None:
            return None
        return self.channels.get(guild_id, {}).get(channel_id)

    def effective(
        self, guild_id: str, channel_id: str, parent_id: str | None
    ) -> tuple[ChannelMode | None, str | None]:
        """The channel's own mode, else its parent's (a thread follows its channel)."""
        own = self.channel(guild_id, channel_id)
        if own is not None:
            return own, channel_id
        parent = self.channel(guild_id, parent_id)
        if parent is not None:
            return parent, parent_id
        return None, None

    def known(self, guild_id: str, channel_id: str, parent_id: str | None = None) -> bool:
        """Whether memory may hold anything for this channel (it has, or had, a mode)."""
        if not self.loaded:
            return True  # unsure: let the writer look (deletes must never be lost)
        return self.effective(guild_id, channel_id, parent_id)[0] is not None

    def retention_of(self, guild_id: str, mode: ChannelMode) -> int | None:
        return mode.retention_days or self.guild(guild_id).retention_days

    def is_secured(self, guild_id: str, channel_ids: tuple[str | None, ...]) -> bool:
        if not self.secured:
            return False
        now = time.monotonic()
        for key in [k for k, until in self.secured.items() if until <= now]:
            del self.secured[key]
        return any((guild_id, c) in self.secured for c in channel_ids if c)

    def gate(
        self,
        *,
        guild_id: str | None,
        channel_id: str,
        parent_id: str | None,
        kind: str,
        is_bot: bool,
        created_ms: int,
        live: bool,
    ) -> Gate:
        """Every rule that keeps a message out of memory, in memory only."""
        if guild_id is None or kind in ("dm", "group_dm"):
            return _gate(False, "direct message")
        if kind == "private_thread":
            return _gate(False, "private thread")
        if not self.loaded:
            return _gate(False, "policy not loaded yet")
        policy = self.guild(guild_id)
        if not policy.enabled:
            return _gate(False, "memory is off in this server")
        if is_bot and not policy.bots_allowed:
            return _gate(False, "bot or webhook")
        mode, _ = self.effective(guild_id, channel_id, parent_id)
        if mode is None or mode.mode != "on":
            return _gate(False, "channel is off")
        retention = self.retention_of(guild_id, mode)
        if not retention:
            return _gate(False, "no retention")  # retention before ingest
        if (
            live
            and mode.enabled_at_ms is not None
            and created_ms < mode.enabled_at_ms - ENABLE_SLACK_MS
        ):
            return _gate(False, "before the channel was enabled")
        if self.is_secured(guild_id, (channel_id, parent_id)):
            return _gate(False, "channel secured")
        if created_ms + retention * DAY_MS <= now_ms():
            return _gate(False, "past retention")
        return _gate(True, "ok", retention, policy.storage)

    # -- changing (this process) -------------------------------------------------------------

    def set_guild(self, guild_id: str, policy: GuildPolicy) -> None:
        self.version += 1
        self.guilds[guild_id] = policy

    def set_channel(self, guild_id: str, channel_id: str, mode: ChannelMode | None) -> None:
        self.version += 1
        modes = self.channels.setdefault(guild_id, {})
        if mode is None:
            modes.pop(channel_id, None)
        else:
            modes[channel_id] = mode

    def forget_guild(self, guild_id: str) -> None:
        self.version += 1
        self.guilds.pop(guild_id, None)
        self.channels.pop(guild_id, None)

    def secure(self, guild_id: str, channel_id: str) -> None:
        self.secured[(guild_id, channel_id)] = time.monotonic() + SECURE_HOLD_SECONDS

    # -- loading ---------------------------------------------------------------------------

    async def load(self, engine: AsyncEngine) -> bool:
        """Read every policy and channel mode (small tables) and swap them in at once.

        A change made in this process while the rows were read wins: that load is dropped
        (returns False) and the next one picks the change up from the tables.
        """
        started = self.version
        guilds: dict[str, GuildPolicy] = {}
        chans: dict[str, dict[str, ChannelMode]] = {}
        async with engine.connect() as conn:
            for row in await conn.execute(sa.select(tables.policies)):
                guilds[row.guild_id] = policy_from_row(row)
            for row in await conn.execute(sa.select(tables.channels)):
                chans.setdefault(row.guild_id, {})[row.channel_id] = ChannelMode(
                    row.mode, row.retention_days, row.enabled_at_ms
                )
        if self.version != started:
            return False
        self.guilds, self.channels = guilds, chans
        self.loaded = True
        self.loaded_at = time.monotonic()
        return True


def policy_from_row(row: Any) -> GuildPolicy:
    return GuildPolicy(
        enabled=bool(row.enabled),
        retention_days=row.default_retention_days,
        storage=row.raw_storage_mode,
        bots_allowed=bool(row.bots_allowed),
        embeddings=row.embedding_source if row.embedding_source in EMBEDDING_SOURCES else "local",
        redaction=RedactionRules.from_json(row.redaction),
        last_purge_at=_aware(row.last_purge_at),
        last_purge_count=row.last_purge_count,
    )


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


async def read_policy(conn: Any, guild_id: str) -> GuildPolicy:
    row = (
        await conn.execute(sa.select(tables.policies).where(tables.policies.c.guild_id == guild_id))
    ).first()
    return policy_from_row(row) if row is not None else GuildPolicy()


async def save_policy(
    conn: Any, dialect: str, guild_id: str, policy: GuildPolicy, by: str | None
) -> None:
    values = {
        "guild_id": guild_id,
        "enabled": policy.enabled,
        "default_retention_days": policy.retention_days,
        "raw_storage_mode": policy.storage,
        "bots_allowed": policy.bots_allowed,
        "embeddings_enabled": policy.embeddings != "off",
        "embedding_source": policy.embeddings,
        "redaction": policy.redaction.to_json(),
        "updated_by": by,
        "updated_at": datetime.now(UTC),
    }
    await conn.execute(tables.upsert_for(dialect, tables.policies, ["guild_id"], values))


async def save_channel(
    conn: Any, dialect: str, guild_id: str, channel_id: str, mode: ChannelMode, by: str | None
) -> None:
    values = {
        "guild_id": guild_id,
        "channel_id": channel_id,
        "mode": mode.mode,
        "retention_days": mode.retention_days,
        "enabled_at_ms": mode.enabled_at_ms,
        "updated_by": by,
        "updated_at": datetime.now(UTC),
    }
    await conn.execute(
        tables.upsert_for(dialect, tables.channels, ["guild_id", "channel_id"], values)
    )
