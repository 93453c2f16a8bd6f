"""Where a message or command was made, as the kernel's place policies read it, and when
Gigi answers there.

Discord knows the chain (a thread's parent channel or forum, that one's category); the
kernel never asks Discord, so the surface hands it over, nearest first.
"""

from __future__ import annotations

from typing import Any

import discord

from gigi_core.llm import Place

THREADS = (
    discord.ChannelType.public_thread,
    discord.ChannelType.news_thread,
    discord.ChannelType.private_thread,
)


def _kind(channel: Any) -> str:
    if isinstance(channel, discord.CategoryChannel):
        return "category"
    if isinstance(channel, discord.ForumChannel):
        return "forum"
    if getattr(channel, "type", None) in THREADS:
        return "thread"
    return "channel"


def places_of(channel: Any, client: discord.Client | None = None) -> tuple[Place, ...]:
    """The channel and its parents, nearest first; empty outside a guild."""
    if channel is None or getattr(channel, "guild", None) is None:
        return ()
    out: list[Place] = [Place(_kind(channel), str(channel.id))]  # type: ignore[arg-type]
    current = channel
    if out[0].kind == "thread":
        parent = getattr(channel, "parent", None)
        parent_id = getattr(channel, "parent_id", None)
        if parent is None and parent_id is not None and client is not None:
            parent = client.get_channel(parent_id)
        if parent is not None:
            out.append(Place(_kind(parent), str(parent.id)))  # type: ignore[arg-type]
            current = parent
        elif parent_id is not None:
            out.append(Place("channel", str(parent_id)))
            return tuple(out)
    category = getattr(current, "category_id", None)
    if out[-1].kind != "category" and category is not None:
        out.append(Place("category", str(category)))
    return tuple(out)


def mentioned(bot: Any, message: discord.Message) -> bool:
    """An @mention of Gigi or of its role (a reply that pings Gigi is one too)."""
    me = bot.user
    if me is None:
        return False
    if me.id in message.raw_mentions or any(u.id == me.id for u in message.mentions):
        return True
    own = message.guild.self_role if message.guild is not None else None
    return own is not None and own.id in message.raw_role_mentions


async def answers_replies(bot: Any, message: discord.Message) -> bool:
    """Whether a reply to Gigi that does not mention it is answered here: the place's
    answer mode (``replies`` or ``every``), inherited from its parents."""
    guild = message.guild
    if guild is None:
        return True
    effective = await bot.kernel.llm.places.effective(
        str(guild.id), places_of(message.channel, bot)
    )
    return bool(effective.answer.value != "mention")
