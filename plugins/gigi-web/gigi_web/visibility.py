"""Which channels a member can see, as Discord decides it: the member's server-wide
permissions, then the channel's overwrites for @everyone, for their roles, for them.
Pure logic over what the Discord API reports; the dashboard asks again every few seconds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

VIEW_CHANNEL = 1 << 10
ADMINISTRATOR = 1 << 3
MANAGE_THREADS = 1 << 34
CATEGORY = 4  # Discord's channel type of a category: a folder, never a place to talk
THREADS = frozenset({10, 11, 12})  # announcement, public and private threads
PRIVATE_THREAD = 12


@dataclass(frozen=True)
class Overwrite:
    """A channel's permission overwrite for a role (kind 0) or a member (kind 1)."""

    id: str
    kind: int
    allow: int
    deny: int


@dataclass(frozen=True)
class GuildChannel:
    id: str
    name: str
    type: int
    overwrites: tuple[Overwrite, ...] = ()
    parent_id: str | None = None  # a thread's channel (a channel's category)
    guild_id: str | None = None  # as ``GET /channels/{id}`` says; the list leaves it out


def channel_of(raw: dict[str, Any]) -> GuildChannel:
    """One channel of ``GET /guilds/{id}/channels``; unreadable overwrites deny nothing more
    but grant nothing either (they are dropped, so the server-wide permissions decide)."""
    overwrites = []
    for o in raw.get("permission_overwrites") or []:
        try:
            overwrites.append(
                Overwrite(str(o["id"]), int(o.get("type", 0)), int(o["allow"]), int(o["deny"]))
            )
        except (KeyError, TypeError, ValueError):
            continue
    try:
        kind = int(raw.get("type") or 0)
    except (TypeError, ValueError):
        kind = 0
    parent, guild = raw.get("parent_id"), raw.get("guild_id")
    return GuildChannel(
        str(raw["id"]), str(raw.get("name", "")), kind, tuple(overwrites),
        str(parent) if parent else None, str(guild) if guild else None,
    )  # fmt: skip


def can_view(
    channel: GuildChannel,
    *,
    guild_id: str,
    user_id: str,
    roles: Iterable[str],
    permissions: int,
    owner: bool,
) -> bool:
    """Discord's rule: the owner and administrators see everything; otherwise the server-wide
    permissions, then @everyone's overwrite, then the member's roles' (denies, then allows),
    then the member's own."""
    if owner or permissions & ADMINISTRATOR:
        return True
    allowed = permissions
    held = set(roles)
    by_id = {o.id: o for o in channel.overwrites}
    everyone = by_id.get(guild_id)
    if everyone is not None:
        allowed = (allowed & ~everyone.deny) | everyone.allow
    deny = allow = 0
    for o in channel.overwrites:
        if o.kind == 0 and o.id in held and o.id != guild_id:
            deny |= o.deny
            allow |= o.allow
    allowed = (allowed & ~deny) | allow
    mine = next((o for o in channel.overwrites if o.kind == 1 and o.id == user_id), None)
    if mine is not None:
        allowed = (allowed & ~mine.deny) | mine.allow
    return bool(allowed & VIEW_CHANNEL)
