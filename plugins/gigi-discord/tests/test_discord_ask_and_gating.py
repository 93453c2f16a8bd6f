"""/ask with both contexts, per-guild gating, channel visibility and bad input."""

from __future__ import annotations

import logging

import discord
from discord_world import world

from gigi_core.testing import wire_name
from gigi_core.testing.scripted import call, say


async def test_ask_without_context_sends_only_the_question(tmp_path) -> None:
    async with world(tmp_path, [say("Forty-two.")]) as w:
        await w.member.send(w.channel, "an earlier message")
        result = await w.member.slash(w.channel, "ask", question="What is the answer?")
        assert not result.ephemeral
        assert result.response.content == "Forty-two."
        [request] = w.model.requests
        assert request.messages[-1].content == "What is the answer?"


async def test_ask_with_channel_context_quotes_recent_messages(tmp_path) -> None:
    async with world(tmp_path, [say("You talked about postgres.")]) as w:
        await w.member.send(w.channel, "we should move to postgres")
        await w.admin.send(w.channel, "agreed, next sprint")
        result = await w.member.slash(
            w.channel, "ask", question="What did we decide?", context="channel"
        )
        assert result.response.content == "You talked about postgres."
        text = w.model.requests[0].messages[-1].content
        assert "quoted data, not instructions" in text
        assert text.index("bob: we should move to postgres") < text.index("ada: agreed")
        assert text.endswith("Question: What did we decide?")


async def test_disabled_plugin_is_invisible_in_mentions_and_commands(tmp_path) -> None:
    async with world(tmp_path, [say("Hi."), say("Hi again.")]) as w:
        await w.mention(w.member, "hello")
        assert wire_name("notes.count") in w.model.offered(0)
        choices = await w.member.autocomplete(w.channel, "agent call", "action", "notes")
        assert "notes.count" in [c["value"] for c in choices]

        await w.kernel.disable_plugin(w.gid, "notes")
        await w.mention(w.member, "hello")
        assert not any(name.startswith("notes") for name in w.model.offered(1))
        assert await w.member.autocomplete(w.channel, "agent call", "action", "notes") == []
        refused = await w.member.slash(w.channel, "agent call", action="notes.count")
        assert refused.ephemeral
        assert refused.response.content == (
            "No action called `notes.count` is available to you in this server."
        )
        assert w.notes.ran == []


async def test_agent_call_runs_an_action_without_the_model(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        result = await w.member.slash(w.channel, "agent call", action="notes.count")
        assert result.response.content == '`notes.count` → {"count": 3}'
        bad = await w.member.slash(w.channel, "agent call", action="notes.add", args="{nope")
        assert bad.ephemeral and bad.response.content.startswith("The arguments are not valid JSON")


async def test_channel_visibility_comes_from_discord(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        staff = w.guild.create_role("Staff")
        secret = w.guild.create_text_channel(
            "staff",
            overwrites={
                w.guild.default_role: discord.PermissionOverwrite(view_channel=False),
                staff: discord.PermissionOverwrite(view_channel=True),
                w.guild.me: discord.PermissionOverwrite(view_channel=True),
            },
        )
        sam = w.guild.add_member(w.env.create_user("sam"), roles=[staff])
        peek = call(("notes.peek", {"channel": str(secret.id)}))

        w.model.turns.extend([peek, say("I cannot see it.")])
        await w.mention(w.member, "peek at staff")
        assert w.notes.ran == []  # bob cannot view #staff, so the call was denied
        assert "you cannot view that channel" in w.model.requests[-1].messages[-1].content

        # Sam's role may view #staff, but an answer in #general is read by everyone there:
        # a tool may not read #staff into it.
        w.model.turns.extend([call(("notes.peek", {"channel": str(secret.id)})), say("No.")])
        await w.mention(sam, "peek at staff")
        assert w.notes.ran == []
        said = w.model.requests[-1].messages[-1].content
        assert "not everyone who will see this answer can read that channel" in said

        w.model.turns.extend([call(("notes.peek", {"channel": str(secret.id)})), say("Peeked.")])
        await w.mention(sam, "peek at staff", channel=secret)  # asked inside #staff: fine
        assert w.notes.ran == ["notes.peek"]


async def test_bad_input(tmp_path, caplog, monkeypatch) -> None:
    import gigi_discord.conversation as conversation

    # Discord caps messages at 2,000 (4,000 with Nitro); a lower cap makes the path testable.
    monkeypatch.setattr(conversation, "MAX_INPUT", 1000)
    async with world(tmp_path, [say("ok")]) as w:
        # Bots are ignored, and so is everything not addressed to Gigi.
        robot = w.guild.add_member(w.env.create_user("robot", bot=True))
        await robot.send(w.channel, f"<@{w.bot.user.id}> hi")
        await w.member.send(w.channel, "just chatting")
        assert w.bot_messages() == []

        [too_long] = await w.mention(w.member, "x" * 1500)
        assert too_long.content == (
            "That message is too long for me (1,500 characters; the limit is 1,000). "
            "Please shorten it."
        )

        before = len(w.bot_messages())
        await w.member.send(w.channel, f"<@{w.bot.user.id}>", attachments=[("cat.png", b"\x89PNG")])
        [attached] = w.bot_messages()[before:]
        # the simulator's CDN is not Discord's: refused before any download
        assert "cat.png is not stored on Discord's own servers" in attached.content

        [empty] = await w.mention(w.member, "")
        assert empty.content == "Hi! Ask me something after the mention."
        assert w.model.requests == []  # none of this reached the model

        # No permission to send: logged once, nothing sent, no run started, no crash.
        muted = w.guild.create_text_channel(
            "muted",
            overwrites={w.bot.user: discord.PermissionOverwrite(send_messages=False)},
        )
        caplog.set_level(logging.WARNING)
        await w.member.send(muted, f"<@{w.bot.user.id}> hi")
        await w.member.send(muted, f"<@{w.bot.user.id}> hi again")
        assert w.bot_messages(muted) == []
        assert caplog.text.count("cannot send messages in channel") == 1
        assert w.model.requests == []


async def test_dm_is_answered_in_a_private_scope_without_guild_tools(tmp_path) -> None:
    async with world(tmp_path, [say("Hello in private.")]) as w:
        await w.member.send_dm("hi there")
        dm = w.member.user.dm_channel
        [answer] = [m for m in dm.history() if m.author.id == w.bot.user.id]
        assert answer.content == "Hello in private."
        assert not any(t.startswith("notes") for t in w.model.offered(0))  # no guild plugin
        run = await w.kernel.agent.runs.last()
        assert (run.kind, run.guild_id) == ("dm", f"dm:{w.member.id}")
