"""Who is acting and what they may see, taken from Discord itself, never from message text."""

from __future__ import annotations

from typing import Any

import discord

from gigi_core.surfaces import Actor, ChannelCheck, ChannelLister
from gigi_discord.audience import audience


def is_guild_admin(user: discord.abc.User, permissions: discord.Permissions | None = None) -> bool:
    """Manage Server (or Administrator) makes a guild admin, as Discord's own settings do."""
    if permissions is None:
        if not isinstance(user, discord.Member):
            return False
        permissions = user.guild_permissions
    return bool(permissions.manage_guild or permissions.administrator)


def actor_for(user: discord.abc.User, permissions: discord.Permissions | None = None) -> Actor:
    """An Actor with role ids and the admin flag; DMs give no roles and no admin."""
    roles: frozenset[str] = frozenset()
    if isinstance(user, discord.Member):
        roles = frozenset(str(r.id) for r in user.roles if not r.is_default())
    return Actor(
        id=str(user.id),
        roles=roles,
        is_admin=is_guild_admin(user, permissions) if isinstance(user, discord.Member) else False,
        display_name=getattr(user, "display_name", None) or user.name,
    )


async def resolve_actor(
    kernel: Any, user: discord.abc.User, permissions: discord.Permissions | None = None
) -> Actor:
    """Plugins may answer ``actor_from_event`` first (e.g. to map roles); else Discord's view."""
    try:
        found = await kernel.actor_from_event(user, "discord")
    except Exception:  # a broken hook must not lock users out; our own view is safe
        found = None
    return found if isinstance(found, Actor) else actor_for(user, permissions)


def guild_key(guild: discord.Guild | None, user: discord.abc.User) -> str:
    """Runs need a guild id; a DM gets its own per-user scope where no guild plugin is enabled."""
    return str(guild.id) if guild is not None else f"dm:{user.id}"


def channel_checker(guild: discord.Guild | None, user: discord.abc.User) -> ChannelCheck:
    """``Request.channel_visible``: may this user view that channel, per Discord permissions?

    Unknown channels, channels of other guilds and anything in a DM are not visible.
    """

    async def visible(channel_id: str) -> bool:
        if guild is None:
            return False
        try:
            wanted = int(channel_id)
        except (TypeError, ValueError):
            return False
        channel = guild.get_channel_or_thread(wanted)
        member = user if isinstance(user, discord.Member) else guild.get_member(user.id)
        if channel is None or member is None:
            return False
        try:
            perms = channel.permissions_for(member)
        except discord.ClientException:  # a thread whose parent is not cached
            return False
        if not (perms.view_channel and perms.read_message_history):
            return False
        if (
            isinstance(channel, discord.Thread)
            and channel.type is discord.ChannelType.private_thread
        ):
            # discord.py copies the parent's permissions: private-thread membership is not in them.
            if perms.manage_threads:
                return True
            try:
                await channel.fetch_member(member.id)
            except discord.HTTPException:
                return False
        return True

    return visible


def channel_lister(
    guild: discord.Guild | None, user: discord.abc.User, shown_in: Any = None
) -> ChannelLister:
    """``Request.visible_channels``: every cached channel whose history this user may read.

    Same rules as ``channel_checker`` without an HTTP call per channel: a private thread is
    listed only for thread managers or where the member is in the cached thread members
    (fail closed); archived threads are not in the cache, and a public one follows its parent.

    ``shown_in``: the channel where the answer is posted for everyone there to read. Then
    only channels every member of that audience may read too are listed
    (``gigi_discord.audience``): a moderator asking in #general must not have #mods quoted
    to the whole server, nor #lounge to the members a Muted role keeps out of it.
    """

    async def listed() -> frozenset[str] | None:
        seen = await _readable(guild, user)
        if shown_in is not None and guild is not None:
            seen &= audience(guild, shown_in)
        return frozenset(seen)

    return listed


async def _readable(guild: discord.Guild | None, user: discord.abc.User) -> set[str]:
    """Every cached channel whose history ``user`` may read (see ``channel_lister``)."""
    if guild is None:
        return set()
    member = user if isinstance(user, discord.Member) else guild.get_member(user.id)
    if member is None:
        return set()
    seen: set[str] = set()
    for channel in guild.channels:
        if isinstance(channel, discord.CategoryChannel):
            continue
        perms = channel.permissions_for(member)
        if perms.view_channel and perms.read_message_history:
            seen.add(str(channel.id))
    for thread in guild.threads:
        if str(thread.parent_id) not in seen:
            continue
        if thread.type is discord.ChannelType.private_thread:
            try:
                manages = thread.permissions_for(member).manage_threads
            except discord.ClientException:
                continue
            if not manages and all(m.id != member.id for m in thread.members):
                continue
        seen.add(str(thread.id))
    return seen
