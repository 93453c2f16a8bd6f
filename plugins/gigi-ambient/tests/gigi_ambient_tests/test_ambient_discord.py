"""The whole path on Discord (discord.py driven offline by SimCord): an admin turns ambient
mode on with the slash command, a member talks, the persona answers through the outbox
without pinging anyone; a mention stays the surface's to answer."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import discord
import simcord
from gigi_ambient.attempts import Backoff
from gigi_ambient.service import service_of
from gigi_discord import create_bot
from gigi_discord.settings import DiscordSettings

from gigi_ambient_tests.ambient_helpers import envelope
from gigi_core.events import MessageDeleted
from gigi_core.testing import open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep


@asynccontextmanager
async def discord_world(tmp_path: pathlib.Path) -> AsyncIterator[dict[str, Any]]:
    async with (
        FakeOpenAI(api_key="sk-test") as fake,
        open_test_kernel(tmp_path, plugins=["ambient", "openai"]) as kernel,
    ):
        bot = create_bot(kernel, shard_count=1, settings=DiscordSettings(message_content=True))
        # the event router runs outside the bot, as under `gigi run`
        await kernel.publish(MessageDeleted(guild_id="0", channel_id="0", message_ids=()))
        await kernel.events.drain()
        async with simcord.run(bot) as env:
            guild = env.create_guild(name="Test Server")
            channel = guild.create_text_channel("general")
            mods = guild.create_role("Mods", permissions=discord.Permissions(manage_guild=True))
            admin = guild.add_member(env.create_user("ada"), roles=[mods])
            member = guild.add_member(env.create_user("bob"))
            gid = str(guild.id)
            await kernel.enable_plugin(gid, "ambient")
            await kernel.llm.add_credential(
                f"guild:{gid}", "openai", "main", "sk-test", base_url=fake.base_url
            )
            await kernel.llm.set_profile(f"guild:{gid}", "chat", "main", "gpt-main")
            svc = service_of(kernel)
            svc.backoff = Backoff(sleep=RecordingSleep())
            yield {
                "env": env, "kernel": kernel, "bot": bot, "fake": fake, "channel": channel,
                "admin": admin, "member": member, "svc": svc,
            }  # fmt: skip


async def settle(w: dict[str, Any]) -> None:
    await w["env"].settle()  # the bot's handlers ran and published
    await w["kernel"].events.drain()
    await w["svc"].drain()
    await w["env"].settle()


def bot_messages(w: dict[str, Any]) -> list[discord.Message]:
    me = w["bot"].user.id
    return [m for m in w["channel"].history() if m.author.id == me]


async def test_ambient_answers_on_discord_without_pings(tmp_path) -> None:
    async with discord_world(tmp_path) as w:
        channel, member = w["channel"], w["member"]
        done = await w["admin"].slash(
            channel, "ambient enable", channel=channel, persona="You are Luma."
        )
        text = done.followups[-1].content if done.followups else done.response.content
        assert "Ambient mode is on" in text
        [root] = [c for c in await w["bot"].tree.fetch_commands() if c.name == "ambient"]
        assert root.default_member_permissions is not None  # admins only (Manage Server)
        w["fake"].reply_text(
            envelope(answer=f"Hi <@{member.id}> and @everyone!", answer_needed=True)
        )
        await member.send(channel, "hello folks")
        await settle(w)
        [answer] = bot_messages(w)
        assert answer.content == f"Hi <@{member.id}> and @everyone!"
        posts = [r for r in w["env"].http_requests if r.method == "POST" and "/messages" in r.path]
        assert posts[-1].json["allowed_mentions"] == {"parse": []}  # never pings
        sent = w["fake"].requests_to("chat")[0].json
        assert sent["response_format"]["json_schema"]["name"] == "envelope"
        assert "hello folks" in sent["messages"][-1]["content"]
        # the persona's own answer is not answered again
        assert len(w["fake"].requests_to("chat")) == 1


async def test_env_13_reaction_clear_events_are_recorded(tmp_path) -> None:
    async with discord_world(tmp_path) as w:
        channel, member = w["channel"], w["member"]
        await w["svc"].enable(str(channel.guild.id), str(channel.id), "You are Luma.", None)
        short = [[".*", ".*"]]  # archive everything: no model call in this test
        await w["kernel"].configure_plugin(str(channel.guild.id), "ambient", {"short_path": short})
        sent = await member.send(channel, "vote with reactions")
        await member.react(sent, "👍")
        await w["admin"].react(sent, "🎉")
        w["env"].backend.clear_reactions(channel.id, sent.id)  # MESSAGE_REACTION_REMOVE_ALL
        await settle(w)
        texts = [e.text for e in w["svc"].history(str(channel.guild.id)).entries]
        assert texts == [
            "vote with reactions",
            f"(all 2 reactions were removed from message {sent.id})",
        ]
        assert w["env"].errors == []  # the handler took discord.py's (message, reactions)
