"""The audience of a public answer, and the channels all of it may read.

Everyone who can view the answer's channel reads the answer, so a channel may be quoted into
it only if every one of those members may view it and read its history, with their roles and
the channels' role and member overwrites. Computed from Discord's permissions (discord.py's
``permissions_for``), failing closed wherever the cache cannot tell:

- without a complete member list (no members intent, or not chunked yet) only the channels
  that provably every member of the server may read are listed (a role-level proof: the
  ``@everyone`` permissions and no role or member overwrite taking View Channel or Read
  Message History away), besides the answer's own channel and its public threads;
- with it, members are grouped by what decides their permissions (their roles; their id
  when a member overwrite or ownership names them), and each group is checked once, within
  ``BUDGET`` permission evaluations: past it, nothing more is listed.

Results are cached per guild and channel and dropped by the gateway events that change them
(``forget``, called from the bot's ``dispatch``): roles, channels, members, the guild itself.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import discord

log = logging.getLogger(__name__)

BUDGET = 50_000  # permission evaluations per computation (members grouped by their roles)
MAX_GUILDS = 256  # guilds whose audiences are cached at once (least recently used leave)

# Gateway events after which a guild's cached audiences may be wrong (discord.py names).
_GUILD_EVENTS = frozenset(
    {
        "guild_role_create",
        "guild_role_update",
        "guild_role_delete",
        "guild_channel_create",
        "guild_channel_update",
        "guild_channel_delete",
        "member_join",
        "member_remove",
        "raw_member_remove",
        "member_update",
        "guild_update",
        "guild_join",
        "guild_remove",
        "guild_available",
        "guild_unavailable",
    }
)
_EVERY_GUILD_EVENTS = frozenset({"ready", "resumed", "shard_ready", "shard_resumed"})


@dataclass
class _Guild:
    """One guild's cached audiences, valid while ``stamp`` holds for the same Guild object."""

    guild: discord.Guild
    stamp: tuple[Any, ...]
    roots: dict[int, frozenset[str]] = field(default_factory=dict)


_CACHE: OrderedDict[int, _Guild] = OrderedDict()


def audience(guild: discord.Guild, shown_in: Any) -> frozenset[str]:
    """Channels (and threads) every reader of ``shown_in`` may read, ``shown_in`` included.

    The answer's own channel is always in: its readers see the answer posted there.
    """
    here = guild.get_channel_or_thread(getattr(shown_in, "id", 0))
    if here is None or isinstance(here, discord.CategoryChannel):
        return frozenset({str(shown_in.id)})
    root = here.parent if isinstance(here, discord.Thread) else here
    if root is None:  # a thread whose parent is not cached: nobody can tell who reads it
        return frozenset({str(here.id)})
    # A private thread's readers are some of its parent's: the parent's readers bound them.
    listed = set(_roots(guild, root))
    if not isinstance(here, discord.Thread):
        listed.add(str(here.id))
    threads = {
        str(t.id)
        for t in guild.threads
        if str(t.parent_id) in listed and t.type is not discord.ChannelType.private_thread
    }
    return frozenset(listed | threads | {str(here.id)})


def forget(event: str, args: Iterable[Any]) -> None:
    """Drop what a gateway event may have changed: that guild's audiences, or every guild's."""
    if event in _EVERY_GUILD_EVENTS:
        _CACHE.clear()
        return
    if event not in _GUILD_EVENTS:
        return
    args = tuple(args)
    if event == "member_update" and len(args) == 2 and _same_roles(*args):
        return  # a nickname or avatar: nobody's permissions changed
    guild_id = _guild_of(args)
    if guild_id is None:
        _CACHE.clear()
    else:
        _CACHE.pop(guild_id, None)


def _roots(guild: discord.Guild, root: Any) -> frozenset[str]:
    """The guild's channels (no threads) that every reader of ``root`` may read, cached."""
    stamp = (guild.chunked, guild.member_count, guild.owner_id, len(guild.roles))
    entry = _CACHE.get(guild.id)
    if entry is None or entry.guild is not guild or entry.stamp != stamp:
        entry = _CACHE[guild.id] = _Guild(guild, stamp)
    _CACHE.move_to_end(guild.id)
    while len(_CACHE) > MAX_GUILDS:
        _CACHE.popitem(last=False)
    found = entry.roots.get(root.id)
    if found is None:
        found = entry.roots[root.id] = _compute(guild, root)
    return found


def _compute(guild: discord.Guild, root: Any) -> frozenset[str]:
    readers = _readers(guild, root)
    listed: set[str] = set()
    spent = 0
    over = False
    for channel in guild.channels:
        if isinstance(channel, discord.CategoryChannel):
            continue
        if everyone_reads(guild, channel):
            listed.add(str(channel.id))
            continue
        if readers is None:
            continue  # nobody can say who reads the answer: fail closed
        if spent + len(readers) > BUDGET:
            over = True  # past the bound: fail closed
            continue
        spent += len(readers)
        if all(_reads(channel, member) for member in readers):
            listed.add(str(channel.id))
    if over:
        log.info(
            "audience of channel %s in guild %s: %d member groups are past the budget; "
            "channels not every member may read are not listed there",
            root.id,
            guild.id,
            len(readers or ()),
        )
    return frozenset(listed)


def everyone_reads(guild: discord.Guild, channel: Any) -> bool:
    """Provably every member may view ``channel`` and read its history, whatever their roles.

    Roles only add permissions at the server level, so ``@everyone``'s permissions (with its
    overwrite) are everyone's floor; only a role or member overwrite can take them away.
    """
    if isinstance(channel, discord.Thread):
        if channel.type is discord.ChannelType.private_thread or channel.parent is None:
            return False
        channel = channel.parent
    default = guild.default_role
    if default is None:
        return False
    floor = channel.permissions_for(default)
    if not (floor.view_channel and floor.read_message_history):
        return False
    for target, overwrite in channel.overwrites.items():
        if isinstance(target, discord.Role) and target.is_default():
            continue
        deny = overwrite.pair()[1]
        if deny.view_channel or deny.read_message_history:
            return False
    return True


def _readers(guild: discord.Guild, root: Any) -> list[discord.Member] | None:
    """One member per permission group among those who can view ``root``; None when the
    member list is incomplete (then nobody can say who reads it)."""
    if not guild.chunked:
        return None
    named = {guild.owner_id}
    for channel in guild.channels:
        named.update(t.id for t in channel.overwrites if not isinstance(t, discord.Role))
    me = guild.me.id if guild.me is not None else None
    groups: dict[Any, discord.Member] = {}
    for member in guild.members:
        if member.id == me:
            continue  # Gigi writes the answer; it is not a reader to protect
        # discord.py keeps a member's role ids in ``_roles``; ``roles`` would build and
        # sort Role objects for every member of a large guild.
        key = member.id if member.id in named else member._roles.tobytes()
        groups.setdefault(key, member)
    if len(groups) > BUDGET:
        return None  # as many groups as members, nearly: not worth checking one by one
    readers = []
    for member in groups.values():
        try:
            if root.permissions_for(member).view_channel:
                readers.append(member)
        except discord.ClientException:
            return None
    return readers


def _reads(channel: Any, member: discord.Member) -> bool:
    try:
        perms = channel.permissions_for(member)
    except discord.ClientException:
        return False
    return bool(perms.view_channel and perms.read_message_history)


def _same_roles(before: Any, after: Any) -> bool:
    if not isinstance(before, discord.Member) or not isinstance(after, discord.Member):
        return False
    return bool(before._roles == after._roles)


def _guild_of(args: tuple[Any, ...]) -> int | None:
    """The guild an event is about, from its objects or raw payload; None when not found."""
    for arg in args:
        if isinstance(arg, discord.Guild):
            return arg.id
        guild = getattr(arg, "guild", None)
        if isinstance(guild, discord.Guild):
            return guild.id
        guild_id = getattr(arg, "guild_id", None)
        if isinstance(guild_id, int):
            return guild_id
    return None
