"""Entry point, surface registration, sharding options, intents and settings."""

from __future__ import annotations

import discord
import pytest
from discord_world import world
from gigi_discord import create_bot
from gigi_discord.settings import DiscordSettings
from gigi_discord.surface import DiscordSurface

from gigi_core import ConfigError, GigiError
from gigi_core.testing import open_test_kernel


async def test_entry_point_registers_the_discord_surface(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=["discord"]) as kernel:
        assert "discord" in kernel.registry.surfaces
        surface = kernel.registry.surfaces["discord"](kernel)
        with pytest.raises(GigiError, match="GIGI_DISCORD_TOKEN is not set"):
            await surface.run()
        member = discord.Object(id=1)
        assert await kernel.actor_from_event(member, "discord") is None  # not a user


async def test_create_bot_is_sharding_ready_without_message_content(tmp_path) -> None:
    async with open_test_kernel(tmp_path, plugins=[]) as kernel:
        bot = create_bot(kernel, shard_ids=[2, 3], shard_count=4, settings=DiscordSettings())
        assert isinstance(bot, discord.AutoShardedClient)
        assert (bot.shard_ids, bot.shard_count) == ([2, 3], 4)
        assert bot.intents.message_content is False and bot.intents.members is False
        assert bot.intents.guild_messages and bot.intents.dm_messages and bot.intents.guilds
        assert bot.runtime is kernel.agent
        roots = {c.name: c for c in bot.tree.get_commands()}
        assert set(roots) == {"ask", "agent", "gigi", "llm", "quota"}
        # /quota is every member's own allowance: shown to everyone, in servers only
        assert roots["quota"].default_permissions is None and roots["quota"].guild_only
        # /llm key is every member's own (in DMs too); its admin leaves check at run time
        assert roots["llm"].default_permissions is None and not roots["llm"].guild_only
        # The native /gigi privacy commands are for every member, so /gigi cannot be hidden.
        assert roots["gigi"].default_permissions is None
        assert {"plugins", "grants", "channel", "privacy"} <= {
            c.name for c in roots["gigi"].commands
        }
        assert roots["gigi"].guild_only


def test_settings_from_env(monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_TOKEN", "t")
    monkeypatch.setenv("GIGI_DISCORD_SHARD_IDS", "0, 1")
    monkeypatch.setenv("GIGI_DISCORD_SHARD_COUNT", "4")
    monkeypatch.setenv("GIGI_DISCORD_MESSAGE_CONTENT", "1")
    s = DiscordSettings.from_env()
    assert (s.token, s.shard_ids, s.shard_count, s.message_content) == ("t", [0, 1], 4, True)
    monkeypatch.delenv("GIGI_DISCORD_SHARD_COUNT")
    with pytest.raises(ConfigError, match="needs GIGI_DISCORD_SHARD_COUNT"):
        DiscordSettings.from_env()


def test_surface_reads_settings(monkeypatch) -> None:
    monkeypatch.setenv("GIGI_DISCORD_TOKEN", "abc")
    assert DiscordSurface(kernel=None).settings.token == "abc"


async def test_identify_takes_the_turn_of_its_rate_limit_bucket(tmp_path) -> None:
    async with world(tmp_path, []) as w:
        w.bot._max_concurrency = 4
        await w.bot.before_identify_hook(6, initial=True)
        await w.bot.before_identify_hook(0)
        assert set(w.kernel.limits._turns) >= {"discord.identify.2", "discord.identify.0"}
