"""A kernel with the images plugin, a provider credential on a wire-level fake and a
recording poster standing in for the surface."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from gigi_core import Actor
from gigi_core.testing import RecordingPoster, open_test_kernel

GUILD = "g1"
CHANNEL = "c1"
ADMIN = Actor(id="ada", is_admin=True)
MEMBER = Actor(id="bob")


@dataclass
class World:
    kernel: Any
    poster: RecordingPoster

    async def draw(self, actor: Actor = ADMIN, **args: Any) -> Any:
        return await self.kernel.call_tool(
            "images.generate",
            {"prompt": "a grey cat", **args},
            actor=actor,
            guild_id=GUILD,
            channel_id=CHANNEL,
        )


@asynccontextmanager
async def open_world(
    tmp_path: pathlib.Path,
    database_url: str | None,
    *,
    provider: str,
    base_url: str,
    model: str,
    plugins: tuple[str, ...] = (),
) -> AsyncIterator[World]:
    async with open_test_kernel(
        tmp_path, plugins=["images", "openai", "gemini", *plugins], database_url=database_url
    ) as kernel:
        poster = RecordingPoster()
        kernel.outbox.register("test", poster)
        await kernel.enable_plugin(GUILD, "images")
        owner = f"guild:{GUILD}"
        await kernel.llm.add_credential(
            owner, provider, "main", "key-0123456789abcd", base_url=base_url
        )
        await kernel.llm.set_profile(owner, "image", "main", model)
        yield World(kernel, poster)
