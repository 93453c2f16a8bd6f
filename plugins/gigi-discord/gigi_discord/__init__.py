"""gigi-discord: Gigi's Discord surface (mentions, DMs, slash commands, buttons, modals).

``create_bot(kernel)`` returns the configured discord.py client, so a test, a script or
another program can embed it; ``gigi run`` starts it as the "discord" surface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gigi_core import hookimpl

if TYPE_CHECKING:
    from gigi_discord.bot import GigiBot
    from gigi_discord.settings import DiscordSettings

__all__ = ["create_bot"]


def create_bot(
    kernel: Any,
    *,
    runtime: Any = None,
    shard_ids: list[int] | None = None,
    shard_count: int | None = None,
    settings: DiscordSettings | None = None,
) -> GigiBot:
    """An ``AutoShardedClient`` wired to ``kernel`` (and ``runtime``, default ``kernel.agent``).

    ``shard_ids``/``shard_count`` split the gateway across processes; by default they come
    from GIGI_DISCORD_SHARD_IDS / GIGI_DISCORD_SHARD_COUNT, else Discord's recommendation.
    """
    from gigi_discord import redact
    from gigi_discord.bot import GigiBot
    from gigi_discord.settings import DiscordSettings

    redact.install()
    return GigiBot(
        kernel,
        runtime=runtime,
        settings=settings or DiscordSettings.from_env(),
        shard_ids=shard_ids,
        shard_count=shard_count,
    )


@hookimpl
def register_surfaces(register: Any) -> None:
    def factory(kernel: Any) -> Any:
        from gigi_discord.surface import DiscordSurface

        return DiscordSurface(kernel)

    register("discord", factory)


@hookimpl
def actor_from_event(event: Any, surface: str) -> Any:
    """Discord members and users become Actors (Manage Server means guild admin)."""
    if surface != "discord":
        return None
    import discord

    if isinstance(event, discord.Member | discord.User):
        from gigi_discord.identity import actor_for

        return actor_for(event)
    return None
