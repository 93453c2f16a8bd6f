"""The visible-channel set a tool gets (``ctx.visible_channels()``) comes from Discord's
permissions at the time of the call, and the request's own channel is checked too."""

from __future__ import annotations

import discord
from discord_world import world
from gigi_discord.identity import channel_lister

from gigi_core.testing.scripted import call, say

HIDDEN = discord.PermissionOverwrite(view_channel=False)


async def _bob(w):
    guild = w.bot.get_guild(w.guild.id)
    return guild, await guild.fetch_member(w.member.id)


async def test_the_set_holds_only_channels_whose_history_the_member_may_read(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        staff = discord.PermissionOverwrite(view_channel=True, read_message_history=True)
        hidden = w.guild.create_text_channel(
            "staff", overwrites={w.guild.default_role: HIDDEN, w.admin: staff}
        )
        nohist = w.guild.create_text_channel(
            "nohist", overwrites={w.member: discord.PermissionOverwrite(read_message_history=False)}
        )
        parent = w.bot.get_channel(w.channel.id)
        private = await parent.create_thread(name="hr", type=discord.ChannelType.private_thread)
        public = await parent.create_thread(name="release", type=discord.ChannelType.public_thread)
        await w.env.settle()
        guild, bob = await _bob(w)
        seen = await channel_lister(guild, bob)()
        assert str(w.channel.id) in seen and str(public.id) in seen
        assert {str(hidden.id), str(nohist.id), str(private.id)}.isdisjoint(seen)
        ada = await guild.fetch_member(w.admin.id)
        assert str(hidden.id) in await channel_lister(guild, ada)()


async def test_a_tool_sees_the_requesters_channels_at_call_time(tmp_path) -> None:
    async with world(tmp_path, [call(("notes.count", {})), say("3 notes")]) as w:
        staff = discord.PermissionOverwrite(view_channel=True, read_message_history=True)
        hidden = w.guild.create_text_channel(
            "staff",
            overwrites={w.guild.default_role: HIDDEN, w.admin: staff, w.guild.me: staff_bot()},
        )
        await w.env.settle()
        await w.mention(w.member, "how many notes?")
        [seen] = w.notes.visible
        assert str(w.channel.id) in seen and str(hidden.id) not in seen
        w.model.turns.extend([call(("notes.count", {})), say("3 notes")] * 2)
        await w.mention(w.admin, "how many notes?")  # answered in #general, for everyone there
        assert str(hidden.id) not in w.notes.visible[1]
        await w.mention(w.admin, "how many notes?", channel=hidden)  # answered in #staff
        assert str(hidden.id) in w.notes.visible[2] and str(w.channel.id) in w.notes.visible[2]


def staff_bot() -> discord.PermissionOverwrite:
    return discord.PermissionOverwrite(
        view_channel=True, send_messages=True, read_message_history=True
    )


async def test_a_slash_command_tool_gets_the_set_too(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        hidden = w.guild.create_text_channel("staff", overwrites={w.guild.default_role: HIDDEN})
        await w.env.settle()
        await w.member.slash(w.channel, "agent call", action="notes.count", args="{}")
        [seen] = w.notes.visible
        assert str(w.channel.id) in seen and str(hidden.id) not in seen


async def test_a_channel_the_member_sees_but_cannot_read_back_is_not_read(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        nohist = w.guild.create_text_channel(
            "nohist", overwrites={w.member: discord.PermissionOverwrite(read_message_history=False)}
        )
        await w.env.settle()
        w.model.turns.extend([call(("notes.peek", {"channel": str(nohist.id)})), say("peeked")])
        await w.mention(w.member, "peek here", channel=nohist)
        assert w.notes.ran == []
