"""A knowledge worker in a child process: the kernel's job worker with gigi-knowledge, a
keyless embedder and a surface poster, until it is killed.

``python -m tests.scale.knowledge_worker DATABASE_URL HOME LOG DELAY``

Each embedding call and each post appends ``pid kind detail`` to ``LOG`` (metadata only:
a post logs the channel and the action or note id its buttons carry); a post is logged
once the surface delivered it. Each call takes ``DELAY`` seconds, except that the first
process to reach its second call of a kind hangs in it until killed (``LOG.hang-KIND``
marks that it happened, so the process that re-runs the job does not hang too): the
parent's SIGKILL lands mid-call however slowly the parent is scheduled.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from gigi_core.events import OutboundMessage, PostedButton, PostedMessage
from gigi_core.llm import EmbeddingRequest, EmbeddingResponse
from tests.scale.memory_worker import KEY, HashEmbedder, Plugin, note

_ids = itertools.count(1)
_calls: Counter[str] = Counter()


async def pause(log: Path, kind: str, delay: float) -> None:
    """``delay`` seconds, or forever in the first process at its second ``kind`` call."""
    _calls[kind] += 1
    marker = log.with_name(f"{log.name}.hang-{kind}")
    if _calls[kind] == 2:
        try:
            marker.touch(exist_ok=False)  # exactly one process wins
        except FileExistsError:
            pass
        else:
            await asyncio.Event().wait()  # until killed
    await asyncio.sleep(delay)


class PausingEmbedder(HashEmbedder):
    async def embed(
        self, request: EmbeddingRequest, *, api_key: str, base_url: str | None = None
    ) -> EmbeddingResponse:
        note(self.log, f"embed {len(request.inputs)}")
        await pause(self.log, "embed", self.delay)
        return await HashEmbedder(None).embed(request, api_key=api_key)


class Poster:
    """Serves every guild; a message is delivered (logged) before the call returns."""

    def __init__(self, log: Path, delay: float) -> None:
        self.log, self.delay = log, delay

    def serves(self, guild_id: str) -> bool:
        return True

    async def can_post(self, guild_id: str, channel_id: str) -> bool:
        return True

    async def post(
        self, message: OutboundMessage, buttons: tuple[PostedButton, ...]
    ) -> PostedMessage:
        target = message.buttons[0].arguments.get("id") if message.buttons else None
        note(self.log, f"post {message.channel_id} {target}")
        await pause(self.log, "post", self.delay)
        return PostedMessage(f"{os.getpid()}-{next(_ids)}", message.channel_id)

    async def member(self, guild_id: str, user_id: str, *, shown_in: str | None = None) -> Any:
        return None


async def main(url: str, home: str, log: str, delay: float) -> None:
    from gigi_core.testing import open_test_kernel

    path = Path(log)
    async with open_test_kernel(
        Path(home),
        plugins=["knowledge"],
        extra_plugins=[("scale-embed", Plugin(PausingEmbedder(path, delay)))],
        database_url=url,
        secret_key=KEY,
    ) as kernel:
        kernel.outbox.register("scale", Poster(path, delay))
        await kernel.jobs.start()
        print(f"ready {os.getpid()} {kernel.jobs.worker_id}", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    url, home, log, delay = sys.argv[1:5]
    asyncio.run(main(url, home, log, float(delay)))
