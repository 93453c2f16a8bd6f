"""A memory worker in a child process: the kernel's job worker with gigi-memory, a keyless
embedder and a history reader, until it is killed.

``python -m tests.scale.memory_worker DATABASE_URL HOME LOG [PAGE_DELAY]``

Each embedding call and each history page appends a line ``pid kind detail`` to ``LOG``
(metadata only), so the parent sees which worker does what and when to kill it. The
history reader serves a deterministic channel history (``history``), the same in every
process, and waits ``PAGE_DELAY`` seconds per page (a surface's rate limit).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from gigi_core import hookimpl
from gigi_core.events import HistoryPage, MessageCreated
from gigi_core.llm import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Provider,
    Supports,
)

KEY = base64.urlsafe_b64encode(b"scale memory: one key, 32 bytes!").decode().rstrip("=")
GUILD = "g1"
DIMS = 16
FIRST_ID = 10_000_000


def note(log: Path | None, line: str) -> None:
    if log is not None:
        with log.open("a") as f:
            f.write(f"{os.getpid()} {line}\n")


class HashEmbedder(Provider):
    """Keyless and deterministic: a text's vector from its hash (cheap; no model)."""

    name = "scalehash"
    supports = Supports(tools=False, embeddings=True)
    requires_key = False
    default_models: ClassVar[dict[str, str]] = {"embedding": f"hash-{DIMS}"}

    def __init__(self, log: Path | None = None, delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log, self.delay = log, delay

    async def chat(
        self, request: ChatRequest, *, api_key: str, base_url: str | None = None
    ) -> ChatResponse:
        raise self.unsupported("chat")

    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        note(self.log, f"embed {len(request.inputs)}")
        if self.delay:
            await asyncio.sleep(self.delay)
        vectors = []
        for text in request.inputs:
            digest = hashlib.sha256(text.encode()).digest()
            vectors.append([b - 127.5 for b in digest[:DIMS]])
        return EmbeddingResponse(
            provider=self.name, model=request.model, vectors=vectors, dimension=DIMS
        )


def history(channels: int, per_channel: int) -> dict[str, list[MessageCreated]]:
    """Each channel's past messages, newest first, ids ascending with time."""
    start = datetime.now(UTC) - timedelta(days=2)
    out: dict[str, list[MessageCreated]] = {}
    for c in range(channels):
        channel = f"c{c}"
        msgs = [
            MessageCreated(
                guild_id=GUILD,
                message_id=str(FIRST_ID + c * per_channel + i),
                channel_id=channel,
                author_id=f"u{i % 7}",
                created_at=start + timedelta(seconds=c * per_channel + i),
                text=f"note {i} of channel {channel} about postgres",
                mentioned_user_ids=(f"u{(i + 1) % 7}",) if i % 5 == 0 else (),
            )
            for i in range(per_channel)
        ]
        out[channel] = list(reversed(msgs))
    return out


class History:
    """A surface's history reader over ``history()``, slowed to ``delay`` s a page."""

    def __init__(self, channels: int, per_channel: int, log: Path | None, delay: float) -> None:
        self.messages = history(channels, per_channel)
        self.log, self.delay = log, delay

    def serves(self, guild_id: str) -> bool:
        return guild_id == GUILD

    async def page(
        self, guild_id: str, channel_id: str, *, before: str | None, limit: int
    ) -> HistoryPage:
        ours = self.messages.get(channel_id, [])
        if before is not None:
            ours = [m for m in ours if int(m.message_id) < int(before)]
        chunk = ours[:limit]
        note(self.log, f"page {channel_id} {before}")
        await asyncio.sleep(self.delay)
        return HistoryPage(tuple(chunk), chunk[-1].message_id if len(chunk) == limit else None)


class Plugin:
    def __init__(self, provider: HashEmbedder) -> None:
        self.provider = provider

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register(self.provider)


async def main(url: str, home: str, log: str, delay: float, channels: int, per: int) -> None:
    from gigi_core.testing import open_test_kernel

    if os.environ.get("SCALE_WORKER_LOGS"):  # warnings to stderr, for a test to count
        logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    path = Path(log) if log != "-" else None
    plugin = Plugin(HashEmbedder(path, delay))
    async with open_test_kernel(
        Path(home),
        plugins=["memory"],
        extra_plugins=[("scale-embed", plugin)],
        database_url=url,
        secret_key=KEY,
    ) as kernel:
        kernel.history.register("scale", History(channels, per, path, delay))
        await kernel.jobs.start()
        print(f"ready {os.getpid()} {kernel.jobs.worker_id}", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    url, home, log, delay, channels, per = sys.argv[1:7]
    asyncio.run(main(url, home, log, float(delay), int(channels), int(per)))
