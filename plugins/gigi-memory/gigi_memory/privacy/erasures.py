"""Members who asked to be forgotten: a backfill or an import skips what they wrote before.

``/gigi privacy delete`` purges a member's messages, but older ones are still on Discord and
in exports: without a mark, the next ``/memory sync`` would bring them back. The mark holds
the member's keyed pseudonym (``kernel.privacy.pseudonym``), never their id, and the time.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from gigi_memory import tables
from gigi_memory.policy import now_ms

e = tables.erasures


async def mark(kernel: Any, svc: Any, user_id: str, guild_id: str | None) -> None:
    values = {
        "guild_id": guild_id or "*",
        "author_key": kernel.privacy.pseudonym(user_id),
        "erased_ms": now_ms(),
    }
    async with svc.engine.begin() as conn:
        await conn.execute(tables.upsert_for(svc.dialect, e, ["guild_id", "author_key"], values))


class Erased:
    """One guild's marks, read once per page or import: ``before(author_id, created_ms)``."""

    def __init__(self, kernel: Any, marks: dict[str, int]) -> None:
        self.kernel, self.marks = kernel, marks

    @classmethod
    async def load(cls, kernel: Any, svc: Any, guild_id: str) -> Erased:
        async with svc.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(e.c.author_key, e.c.erased_ms).where(
                        e.c.guild_id.in_([guild_id, "*"])
                    )
                )
            ).all()
        marks: dict[str, int] = {}
        for key, when in rows:
            marks[key] = max(marks.get(key, 0), when)
        return cls(kernel, marks)

    def before(self, author_id: str, created_ms: int) -> bool:
        """True when this author asked to be forgotten after this message was written."""
        if not self.marks:
            return False
        when = self.marks.get(self.kernel.privacy.pseudonym(author_id))
        return when is not None and created_ms <= when
