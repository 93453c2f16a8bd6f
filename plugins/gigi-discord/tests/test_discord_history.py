"""``kernel.history`` through the running bot: pages newest first with a resumable cursor,
refusals for channels Gigi may not read, nothing for a guild this process does not serve."""

from __future__ import annotations

import discord
import pytest
from discord_world import world

from gigi_core.events import HistoryForbidden, HistoryUnavailable


async def test_pages_walk_back_to_the_start_of_the_channel(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        channel = w.guild.create_text_channel("history")
        for n in range(5):
            await w.member.send(channel, f"line {n}")
        await w.env.settle()
        seen, before, pages = [], None, 0
        while True:
            page = await w.kernel.history.page(str(w.gid), str(channel.id), before=before, limit=2)
            seen += [m.text for m in page.messages]
            pages += 1
            if page.before is None:
                break
            before = page.before
        assert seen == [f"line {n}" for n in (4, 3, 2, 1, 0)] and pages == 3
        first = (await w.kernel.history.page(str(w.gid), str(channel.id), limit=1)).messages[0]
        assert first.author_id == str(w.member.id) and first.channel_id == str(channel.id)
        assert not first.author_is_self and first.guild_id == str(w.gid)


async def test_a_channel_gigi_may_not_read_is_refused_by_name(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        hidden = w.guild.create_text_channel(
            "hidden",
            overwrites={w.guild.me: discord.PermissionOverwrite(read_message_history=False)},
        )
        await w.env.settle()
        with pytest.raises(HistoryForbidden, match=str(hidden.id)):
            await w.kernel.history.page(str(w.gid), str(hidden.id))
        with pytest.raises(HistoryForbidden, match="not a text channel"):
            await w.kernel.history.page(str(w.gid), "1234")


async def test_a_guild_no_surface_here_serves_is_unavailable(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        assert w.kernel.history.serves(str(w.gid))
        with pytest.raises(HistoryUnavailable, match="no surface"):
            await w.kernel.history.page("999", "1")
        with pytest.raises(ValueError, match="limit"):
            await w.kernel.history.page(str(w.gid), str(w.channel.id), limit=101)
        await w.bot.close()
        assert not w.kernel.history.serves(str(w.gid))


async def test_gigis_own_replies_are_marked_as_its_own(tmp_path) -> None:
    from gigi_core.testing.scripted import say

    async with world(tmp_path, [say("hello there")]) as w:
        await w.mention(w.member, "hi")
        page = await w.kernel.history.page(str(w.gid), str(w.channel.id), limit=10)
        own = {m.text: m.author_is_self for m in page.messages}
        assert own["hello there"] is True
        assert [v for t, v in own.items() if t != "hello there"] == [False]
