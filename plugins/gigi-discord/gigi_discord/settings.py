"""Deployment settings read from the environment, so `gigi run` needs no config file."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gigi_core import ConfigError

TOKEN_VAR = "GIGI_DISCORD_TOKEN"


def _ints(raw: str | None, var: str) -> list[int] | None:
    if raw is None or not raw.strip():
        return None
    try:
        return [int(part) for part in raw.replace(" ", "").split(",") if part]
    except ValueError:
        raise ConfigError(f"{var} must be a comma-separated list of numbers, got {raw!r}") from None


def _shards(raw: str | None) -> int | None:
    """``auto`` is 0 (count found at start), a number is the count, empty is off."""
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() == "auto":
        return 0
    if not raw.strip().isdigit() or int(raw) < 1:
        raise ConfigError(f"GIGI_DISCORD_SHARDS must be auto or a shard count, got {raw!r}")
    return int(raw)


def _flag(var: str) -> bool:
    return os.environ.get(var, "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class DiscordSettings:
    """What the operator chose: token, sharding, where to sync commands, optional intents.

    ``message_content`` stays off unless asked for: mentions, DMs and slash commands work
    without the privileged intent; `/ask context:channel` and plugins that observe messages
    (memory, knowledge) see the text of other messages only with it. ``members`` (also
    privileged, off by default) tells plugins when a member leaves, and gives the member
    list that a public answer's audience is computed from (``gigi_discord.audience``).
    """

    token: str | None = None
    # ``auto`` or a count: shard ids are claimed from leases shared through the database
    # (GIGI_DISCORD_SHARDS, ``gigi run --shards``); 0 means N from auto, None means off.
    shards: int | None = None
    shard_ids: list[int] | None = None
    shard_count: int | None = None
    sync_guilds: list[int] | None = None  # instant sync to these guilds (development)
    sync_commands: bool = True
    force_sync: bool = False  # sync even when the stored hash says nothing changed
    message_content: bool = False
    members: bool = False
    runs_per_minute: int = 6  # per person per server; 0 turns the limit off

    @classmethod
    def from_env(cls) -> DiscordSettings:
        count = _ints(os.environ.get("GIGI_DISCORD_SHARD_COUNT"), "GIGI_DISCORD_SHARD_COUNT")
        ids = _ints(os.environ.get("GIGI_DISCORD_SHARD_IDS"), "GIGI_DISCORD_SHARD_IDS")
        if ids is not None and not count:
            raise ConfigError(
                "GIGI_DISCORD_SHARD_IDS needs GIGI_DISCORD_SHARD_COUNT (the total across processes)"
            )
        sync = os.environ.get("GIGI_DISCORD_SYNC", "1").lower()
        shards = _shards(os.environ.get("GIGI_DISCORD_SHARDS"))
        if shards is not None and ids is not None:
            raise ConfigError(
                "GIGI_DISCORD_SHARDS (shards claimed through the database) and "
                "GIGI_DISCORD_SHARD_IDS (fixed shards) exclude each other; set one"
            )
        return cls(
            token=os.environ.get(TOKEN_VAR) or None,
            shards=shards,
            shard_ids=ids,
            shard_count=count[0] if count else None,
            sync_guilds=_ints(
                os.environ.get("GIGI_DISCORD_SYNC_GUILDS"), "GIGI_DISCORD_SYNC_GUILDS"
            ),
            sync_commands=sync not in ("0", "false", "no"),
            force_sync=sync == "force",
            message_content=_flag("GIGI_DISCORD_MESSAGE_CONTENT"),
            members=_flag("GIGI_DISCORD_MEMBERS"),
            runs_per_minute=(
                _ints(
                    os.environ.get("GIGI_DISCORD_RUNS_PER_MINUTE"), "GIGI_DISCORD_RUNS_PER_MINUTE"
                )
                or [6]
            )[0],
        )
