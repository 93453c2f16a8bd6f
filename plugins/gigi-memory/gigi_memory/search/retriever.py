"""Memory as a retrieval path of the kernel's engine (``gigi_core.retrieval``).

The same hybrid search as ``memory.search`` (full text + vectors, fused), over exactly the
channels of the engine's ``Scope`` that memory holds, as ``Hit``s with stable ids
(``memory:msg:<id>``), a snippet, the channel and date as the citation, and a jump link.
``lookup`` re-reads earlier hits so a follow-up turn notices edits and deletions.
Registered as a factory: the engine builds it once per kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # registering the class must stay cheap: `gigi plugins list` loads it
    from gigi_core.retrieval import Hit, Scope

SOURCE = "memory:msg:"


class MemoryRetriever:
    name = "memory"
    paths = ("fulltext", "vector")
    capability = "memory.read.guild"
    source = "memory"
    plugin = "memory"

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def retrieve(self, query: str, scope: Scope, limit: int) -> list[Hit]:
        from gigi_memory.policy import now_ms
        from gigi_memory.search import hybrid, reads

        svc, channels = await self._ready(scope)
        if not channels or svc.cache.guild(scope.guild_id).storage == "metadata_only":
            return []
        f = reads.Filters(
            guild_id=scope.guild_id,
            channel_ids=channels,
            include_threads=False,
            now_ms=now_ms(),
            since_ms=_ms(scope.since),
            until_ms=_ms(scope.until),
        )
        fused, _ = await hybrid.hybrid(svc, f, query, limit)
        return [h for row, _, names in fused if (h := _hit(svc, row, names)) is not None]

    async def lookup(self, source_ids: Sequence[str], scope: Scope) -> list[Hit]:
        import sqlalchemy as sa

        from gigi_memory.policy import now_ms
        from gigi_memory.search import reads

        svc, channels = await self._ready(scope)
        ids = [s[len(SOURCE) :] for s in source_ids if s.startswith(SOURCE)]
        if not channels or not ids:
            return []
        f = reads.Filters(scope.guild_id, channels, False, now_ms())
        where, params, binds = reads._where(f)
        sql = (
            f"SELECT {reads.MESSAGE_COLUMNS} FROM memory_messages m WHERE {where} "
            "AND m.message_id IN :ids"
        )
        async with svc.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(sql).bindparams(*binds, sa.bindparam("ids", expanding=True)),
                    params | {"ids": ids},
                )
            ).all()
        return [h for row in rows if (h := _hit(svc, row, ["lookup"])) is not None]

    async def _ready(self, scope: Scope) -> tuple[Any, tuple[str, ...]]:
        from gigi_memory.service import service_of

        svc = service_of(self.kernel)
        if not svc.cache.loaded:
            await svc.start()
        if not svc.cache.guild(scope.guild_id).enabled:
            return svc, ()
        await svc.writer.flush(0.5)  # what this process queued a moment ago is readable
        known = svc.cache.channels.get(scope.guild_id, {})
        return svc, tuple(sorted(c for c in scope.channel_ids if c in known))


def _hit(svc: Any, row: Any, paths: list[str]) -> Hit | None:
    from gigi_core.retrieval import Citation, Hit
    from gigi_memory.search import tools

    shown = tools.render(svc, row)
    if not shown["snippet"]:
        return None
    when = datetime.fromtimestamp(row.created_ms / 1000, tz=UTC)
    return Hit(
        source_id=f"{SOURCE}{row.message_id}",
        kind="message",
        text=shown["snippet"],
        channel_id=row.channel_id,
        timestamp=when,
        confidence=1.0,
        citation=Citation(f"<#{row.channel_id}> · {when.date().isoformat()}", shown["url"]),
        paths=tuple(paths),
    )


def _ms(when: datetime | None) -> int | None:
    return int(when.timestamp() * 1000) if when is not None else None
