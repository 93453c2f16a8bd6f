"""What the batching writer is handed: an operation, a message's stored content, its counters.

Kept apart from the writer so the event handler, imports and admin commands that queue
operations need not load the writer itself.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from gigi_memory.policy import millis


def queue_limit() -> int:
    try:
        return max(100, int(os.environ.get("GIGI_MEMORY_QUEUE", "50000")))
    except ValueError:
        return 50_000


# A message's stored text, in ``ledger.CONTENT``'s order: (search_text, content_hash,
# sealed_key_id, sealed_nonce, sealed_text); a tuple, as the ``COPY`` row takes it.
Content = tuple[str | None, str | None, str | None, bytes | None, bytes | None]
NO_CONTENT: Content = (None, None, None, None, None)


@dataclass(slots=True)
class Op:
    kind: str  # create | edit | delete | one of HEAVY
    guild_id: str | None
    data: dict[str, Any] | None  # None: a live create, built from ``event`` by the writer
    seq: int = 0
    queued_at: float = 0.0
    future: asyncio.Future[Any] | None = None
    event: Any = None  # the live MessageCreated, until ``materialize``
    gate: Any = None
    ahead: Any = None  # (rules, storage, content) made while an earlier batch committed
    created_ms: int | None = None  # the live event's time, as the gate already computed it

    def materialize(self) -> dict[str, Any]:
        """The op's fields; a live create's are built here, in the writer, not the handler."""
        if self.data is None:
            self.data = create_data(self.event, self.gate, self.created_ms)
            self.event = self.gate = None
        return self.data


def create_data(event: Any, gate: Any, created_ms: int | None = None) -> dict[str, Any]:
    """The writer's insert for a message the gate let in (live, or paged by a backfill)."""
    if created_ms is None:
        created_ms = millis(event.created_at)
    return {
        "message_id": event.message_id,
        "channel_id": event.channel_id,
        "parent_id": event.parent_channel_id,
        "author_id": event.author_id,
        "surface": event.surface,
        "reply_to_id": event.reply_to_id,
        "created_ms": created_ms,
        "text": event.text,
        "mentions": event.mentioned_user_ids,
        "retention_days": gate.retention_days,
        "storage": gate.storage,
    }


@dataclass
class WriterStats:
    written: int = 0
    edited: int = 0
    deleted: int = 0
    dropped: int = 0  # creates refused because the queue was full
    failed: int = 0  # operations dropped after an error retrying could not fix
    retries: int = 0
    last_error: str | None = None  # an exception class, never its message
    last_commit_ms: int | None = None
