"""A test world: kernel + fake OpenAI + ambient enabled in one channel + recording poster."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gigi_ambient.attempts import Backoff
from gigi_ambient.service import AmbientService, service_of

from gigi_core.events import MessageCreated
from gigi_core.testing import RecordingPoster, open_test_kernel
from gigi_core.testing.fake_providers import FakeOpenAI, RecordingSleep

GUILD, HERE, ADMIN = "100", "200", "1"
PERSONA = "You are Luma, the server's cheerful helper.\nToday is {date}, {time}.\n{memory}"
_ids = iter(range(5_000_000, 10**9))  # apart from the poster's message ids


def envelope(**fields: Any) -> str:
    base = {
        "answer": None,
        "answer_needed": False,
        "channel": None,
        "staff": None,
        "picture": None,
        "picture_count": None,
        "picture_edit": False,
        "hack": False,
    }
    return json.dumps({**base, **fields})


@dataclass
class World:
    kernel: Any
    fake: FakeOpenAI
    poster: RecordingPoster
    sleeps: RecordingSleep
    svc: AmbientService

    async def say(self, text: str, *, author: str = "42", channel: str = HERE, **kw: Any) -> str:
        """Publish one member message and wait until the persona handled it."""
        mid = await self.publish(text, author=author, channel=channel, **kw)
        await self.settle()
        return mid

    async def publish(self, text: str, *, author: str = "42", channel: str = HERE, **kw: Any):
        mid = str(next(_ids))
        await self.kernel.publish(
            MessageCreated(
                guild_id=GUILD,
                message_id=mid,
                channel_id=channel,
                author_id=author,
                created_at=kw.pop("created_at", None) or datetime.now(UTC),
                text=text,
                **kw,
            )
        )
        return mid

    async def settle(self) -> None:
        await self.kernel.events.drain()
        await self.svc.drain()

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.json for r in self.fake.requests_to("chat")]

    def answers(self) -> list[str]:
        return [p.text for p in self.poster.posts]


async def configure(kernel: Any, fake: FakeOpenAI, *, fallback: str | None = None, **params: Any):
    await kernel.llm.add_credential(
        f"guild:{GUILD}", "openai", "main", "sk-test", base_url=fake.base_url
    )
    await kernel.llm.set_profile(
        f"guild:{GUILD}", "chat", "main", "gpt-main", fallback_model=fallback, params=params or None
    )


@asynccontextmanager
async def open_world(
    tmp_path: pathlib.Path,
    database_url: str | None,
    *,
    extra: list[tuple[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
    secret_key: str | None = None,
    plugins: tuple[str, ...] = (),
) -> AsyncIterator[World]:
    async with (
        FakeOpenAI(api_key="sk-test") as fake,
        open_test_kernel(
            tmp_path,
            plugins=["ambient", "openai", *plugins],
            extra_plugins=extra or [],
            database_url=database_url,
            secret_key=secret_key,
        ) as kernel,
    ):
        await kernel.enable_plugin(GUILD, "ambient", config=config or None)
        await configure(kernel, fake)
        svc = service_of(kernel)
        poster, sleeps = RecordingPoster(), RecordingSleep()
        kernel.outbox.register("test", poster)
        svc.backoff = Backoff(sleep=sleeps, jitter=lambda: 0.5)
        svc.clock = lambda: datetime(2026, 7, 13, 9, 30, tzinfo=UTC)
        await svc.enable(GUILD, HERE, PERSONA, ADMIN)
        world = World(kernel, fake, poster, sleeps, svc)
        yield world
        await world.settle()
