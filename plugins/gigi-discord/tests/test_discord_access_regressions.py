"""Access regressions found in review: private threads, cross-channel decisions, autocomplete,
history without permission, a modal submitted after losing Manage Server."""

from __future__ import annotations

import discord
from discord_world import world
from gigi_discord.identity import channel_checker

from gigi_core.testing.scripted import call, say

KEY = "sk-discord-CANARY-4e8b1d7f2a"


async def _allow_everyone(w, name):
    commands = await w.bot.tree.fetch_commands()
    [command] = [c for c in commands if c.name == name]
    w.guild.set_command_permissions(command, {w.guild.default_role: True})


async def test_autocomplete_shows_nothing_to_a_non_admin(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_LLM_LOCAL_URLS", "1")  # the key's base URL is on loopback
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.admin.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="prod-billing-key",
            base_url="http://127.0.0.1:9/v1",
        )
        await w.admin.submit_modal(shown, {"gigi:llm:key": KEY})
        await _allow_everyone(w, "llm")  # the owner shows the command to everyone
        assert await w.member.autocomplete(w.channel, "llm credential revoke", "label", "") == []
        labels = await w.admin.autocomplete(w.channel, "llm credential revoke", "label", "")
        assert [c["name"] for c in labels] == ["prod-billing-key"]


async def test_decisions_by_slash_command_stay_in_the_runs_channel(tmp_path) -> None:
    turns = [call(("notes__add", {"text": "secret plan"})), say("Added your note: secret plan.")]
    async with world(tmp_path, turns) as w:
        private = w.guild.create_text_channel(
            "private",
            overwrites={
                w.guild.default_role: discord.PermissionOverwrite(view_channel=False),
                w.member: discord.PermissionOverwrite(
                    view_channel=True, send_messages=True, read_message_history=True
                ),
                w.guild.me: discord.PermissionOverwrite(
                    view_channel=True, send_messages=True, read_message_history=True
                ),
            },
        )
        [prompt] = await w.mention(w.member, "add a note secret plan", channel=private)
        run_id = prompt.content.split("run `")[1].split("`")[0]
        refused = await w.admin.slash(w.channel, "agent confirm", run=run_id)
        assert "Decide this in" in str(refused.response.content)
        assert not any("secret plan" in m.content for m in w.channel.history())
        assert w.notes.ran == []


async def test_ask_uses_no_history_the_user_cannot_read(tmp_path) -> None:
    async with world(tmp_path, [say("ok")]) as w:
        channel = w.guild.create_text_channel(
            "nohist", overwrites={w.member: discord.PermissionOverwrite(read_message_history=False)}
        )
        await w.admin.send(channel, "old secret from before bob joined")
        await w.member.slash(channel, "ask", question="what?", context="channel")
        assert "old secret" not in w.model.requests[0].messages[-1].content


async def test_private_threads_are_hidden_from_non_members(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        parent = w.bot.get_channel(w.channel.id)
        thread = await parent.create_thread(
            name="hr-private", type=discord.ChannelType.private_thread
        )
        await w.env.settle()
        guild = w.bot.get_guild(w.guild.id)
        bob = await guild.fetch_member(w.member.id)
        assert await channel_checker(guild, bob)(str(thread.id)) is False
        w.model.turns.extend([call(("notes.peek", {"channel": str(thread.id)})), say("peeked")])
        await w.mention(w.member, "peek at hr thread")
        assert w.notes.ran == []


async def test_credential_modal_rechecks_admin_on_submit(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GIGI_LLM_LOCAL_URLS", "1")  # the key's URL is a loopback one here
    async with world(tmp_path, plugins=["openai"]) as w:
        shown = await w.admin.slash(
            w.channel,
            "llm credential add",
            provider="openai-compatible",
            label="main",
            base_url="http://127.0.0.1:9/v1",
        )
        guild = w.bot.get_guild(w.guild.id)
        ada = await guild.fetch_member(w.admin.id)
        await ada.remove_roles(discord.utils.get(guild.roles, name="Mods"))
        await w.env.settle()
        await w.admin.submit_modal(shown, {"gigi:llm:key": KEY})
        assert await w.kernel.llm.list_credentials(f"guild:{w.gid}") == []


async def test_mentions_beyond_the_limit_are_refused_politely(tmp_path) -> None:
    from gigi_discord.throttle import RunThrottle

    async with world(tmp_path, [say("one"), say("two")]) as w:
        w.bot.throttle = RunThrottle(2, w.kernel.limits)
        await w.mention(w.member, "first")
        await w.mention(w.member, "second")
        [third] = await w.mention(w.member, "third")
        assert "faster than this server allows" in third.content
        assert len(w.model.requests) == 2
