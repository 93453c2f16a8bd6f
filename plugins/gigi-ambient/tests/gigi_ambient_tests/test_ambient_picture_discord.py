"""The persona's picture on Discord, end to end: an admin asks in an ambient channel, the
guild's image profile draws on the wire-level fake, and the picture arrives in the channel
as an attached image under the message, never as a link; usage keeps no prompt."""

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
from sqlalchemy import text

from gigi_ambient_tests.ambient_helpers import envelope
from gigi_core.evalharness.canary import Canaries, scan_database
from gigi_core.testing import open_test_kernel, start_event_router
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep, png_bytes


@asynccontextmanager
async def painting_server(
    tmp_path: pathlib.Path, database_url: str
) -> AsyncIterator[dict[str, Any]]:
    """Ambient on in #general, the images plugin enabled, chat and image profiles on the fake."""
    async with (
        FakeOpenAI(api_key="sk-test") as fake,
        open_test_kernel(
            tmp_path, plugins=["ambient", "openai", "images"], database_url=database_url
        ) as kernel,
    ):
        bot = create_bot(kernel, shard_count=1, settings=DiscordSettings(message_content=True))
        await start_event_router(kernel)
        async with simcord.run(bot) as env:
            guild = env.create_guild(name="Test Server")
            channel = guild.create_text_channel("general")
            mods = guild.create_role("Mods", permissions=discord.Permissions(manage_guild=True))
            admin = guild.add_member(env.create_user("ada"), roles=[mods])
            member = guild.add_member(env.create_user("bob"))
            gid = str(guild.id)
            for plugin in ("ambient", "images"):
                await kernel.enable_plugin(gid, plugin)
            owner = f"guild:{gid}"
            await kernel.llm.add_credential(
                owner, "openai", "main", "sk-test", base_url=fake.base_url
            )
            await kernel.llm.set_profile(owner, "chat", "main", "gpt-main")
            await kernel.llm.set_profile(owner, "image", "main", "gpt-image-1")
            svc = service_of(kernel)
            svc.backoff = Backoff(sleep=RecordingSleep())
            await svc.enable(gid, str(channel.id), "You are Luma.", None)
            yield {
                "env": env, "kernel": kernel, "bot": bot, "fake": fake, "channel": channel,
                "admin": admin, "member": member, "svc": svc, "gid": gid,
            }  # fmt: skip


async def settle(w: dict[str, Any]) -> None:
    await w["env"].settle()
    await w["kernel"].events.drain()
    await w["svc"].drain()
    await w["env"].settle()


def bot_messages(w: dict[str, Any]) -> list[discord.Message]:
    me = w["bot"].user.id
    return [m for m in w["channel"].history() if m.author.id == me]


async def test_the_persona_posts_the_picture_as_an_attached_image(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    canaries = Canaries()
    prompt = f"a red cat called {canaries.new('picture prompt')}"
    async with painting_server(tmp_path, database_url) as w:
        picture = png_bytes(7, 5)
        w["fake"].reply_image(picture)
        w["fake"].reply_text(envelope(answer="Here you go!", answer_needed=True, picture=prompt))
        asked = await w["admin"].send(w["channel"], "draw me a red cat please")
        await settle(w)

        answer, drawn = bot_messages(w)
        assert answer.content == "Here you go!"
        [file] = drawn.attachments
        assert (file.filename, file.content_type) == ("picture-1.png", "image/png")
        assert await file.read() == picture
        assert drawn.reference is not None and drawn.reference.message_id == asked.id
        assert "http" not in drawn.content and "http" not in answer.content  # no links
        assert w["fake"].requests_to("images")[0].json["prompt"] == prompt

        async with w["kernel"].db.engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT model, purpose, status FROM llm_usage_events WHERE purpose = 'image'")
            )
            assert [tuple(r) for r in rows] == [("gpt-image-1", "image", "ok")]
        assert (await w["svc"].today(w["gid"]))["pictures"] == 1
        assert await scan_database(w["kernel"].db.engine, canaries) == []


async def test_a_member_without_the_capability_gets_the_answer_and_no_picture(
    tmp_path: pathlib.Path, database_url: str
) -> None:
    async with painting_server(tmp_path, database_url) as w:
        w["fake"].reply_text(envelope(answer="Sure!", answer_needed=True, picture="a red cat"))
        await w["member"].send(w["channel"], "draw me a red cat please")
        await settle(w)
        [answer] = bot_messages(w)
        assert answer.content == "Sure!" and answer.attachments == []
        assert w["fake"].requests_to("images") == []
