"""The retriever registered with ``register_retrievers``: memory's full-text path, by id.

The kernel's retrieval engine (a later port) has no fixed retriever interface yet; this one
offers ``retrieve(kernel, guild_id=..., channel_ids=[...], query=..., limit=10)`` and returns
hits in the shape ``memory.search`` returns. The caller must pass only channels the member
can see: the retriever reads exactly those.
"""

from __future__ import annotations

from typing import Any


class MemoryRetriever:
    name = "memory"
    paths = ("fulltext",)

    async def retrieve(
        self,
        kernel: Any,
        *,
        guild_id: str,
        channel_ids: list[str],
        query: str,
        limit: int = 10,
    ) -> list[dict[str, Any]]:
        from gigi_memory import reads, tools
        from gigi_memory.policy import now_ms
        from gigi_memory.service import service_of

        svc = service_of(kernel)
        if not channel_ids or not svc.cache.guild(guild_id).enabled:
            return []
        f = reads.Filters(
            guild_id=guild_id,
            channel_ids=tuple(channel_ids),
            include_threads=False,
            now_ms=now_ms(),
        )
        limit = max(1, min(int(limit), 50))
        async with svc.engine.connect() as conn:
            ranked = {n: await p(conn, svc, f, query, limit * 4) for n, p in tools.PATHS.items()}
        return [
            tools.render(svc, row) | {"score": score, "paths": names}
            for row, score, names in tools.fuse(ranked, limit)
        ]
