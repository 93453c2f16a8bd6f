"""A kernel with scripted retrieval paths in plugin ``notes`` (enabled in guild g1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gigi_core.kernel import Kernel
from gigi_core.policy.actor import Actor
from gigi_core.testing import FakeRetriever, RetrieverPlugin, open_test_kernel
from gigi_core.testing.retrieval import hit

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MEMBER = Actor("u1")
VISIBLE = frozenset({"c1", "c2"})


def days(n: float) -> datetime:
    return NOW - timedelta(days=n)


def notes_hits() -> list[Any]:
    return [
        hit("notes:n:1", "postgres upgrade agreed", "c1", when=days(1)),
        hit("notes:n:2", "postgres backups weekly", "c2", when=days(3)),
        hit("notes:n:3", "secret channel postgres", "c9", when=days(1)),  # hidden channel
    ]


@asynccontextmanager
async def retrieval_kernel(
    tmp_path: Path,
    database_url: str,
    *retrievers: Any,
    capabilities: dict[str, str] | None = None,
    plugins: list[str] | None = None,
    enable: bool = True,
) -> AsyncIterator[Kernel]:
    plugin = RetrieverPlugin(tmp_path, *retrievers, capabilities=capabilities)
    async with open_test_kernel(
        tmp_path,
        plugins=plugins or [],
        extra_plugins=[("notes", plugin)],
        database_url=database_url,
    ) as kernel:
        if enable:
            await kernel.enable_plugin("g1", "notes")
        yield kernel


def fake(name: str, **kw: Any) -> FakeRetriever:
    kw.setdefault("hits", notes_hits())
    return FakeRetriever(name, **kw)


async def pack_for(kernel: Kernel, text: str, mode: str = "auto", previous: Any = None, **kw: Any):
    """The context pack for MEMBER asking ``text`` in g1/c1, without a planning model."""
    from gigi_core.context import build_context

    return await build_context(
        kernel,
        actor=MEMBER,
        guild_id="g1",
        channel_id="c1",
        visible_channels=VISIBLE,
        text=text,
        mode=mode,
        previous=previous,
        use_model=False,
        now=NOW,
        **kw,
    )
