"""A knowledge worker in a child process: the kernel's job worker with gigi-knowledge, a slow
keyless embedder and a slow surface poster, until it is killed.

``python -m tests.scale.knowledge_worker DATABASE_URL HOME LOG DELAY``

Each embedding call and each post appends ``pid kind detail`` to ``LOG`` (metadata only:
a post logs the channel and the action or note id its buttons carry). A post is logged
when the surface has delivered it, then takes ``DELAY`` seconds to return, as a surface's
HTTP round trip does; an embedding takes ``DELAY`` before it returns.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path
from typing import Any

from gigi_core.events import OutboundMessage, PostedButton, PostedMessage
from tests.scale.memory_worker import KEY, HashEmbedder, Plugin, note

GUILD = "g1"
_ids = itertools.count(1)


class SlowPoster:
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
        await asyncio.sleep(self.delay)
        return PostedMessage(f"{os.getpid()}-{next(_ids)}", message.channel_id)

    async def member(self, guild_id: str, user_id: str, *, shown_in: str | None = None) -> Any:
        return None


async def main(url: str, home: str, log: str, delay: float) -> None:
    from gigi_core.testing import open_test_kernel

    path = Path(log)
    async with open_test_kernel(
        Path(home),
        plugins=["knowledge"],
        extra_plugins=[("scale-embed", Plugin(HashEmbedder(path, delay)))],
        database_url=url,
        secret_key=KEY,
    ) as kernel:
        kernel.outbox.register("scale", SlowPoster(path, delay))
        await kernel.jobs.start()
        print(f"ready {os.getpid()} {kernel.jobs.worker_id}", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    url, home, log, delay = sys.argv[1:5]
    asyncio.run(main(url, home, log, float(delay)))
