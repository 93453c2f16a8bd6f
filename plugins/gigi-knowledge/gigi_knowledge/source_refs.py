"""``source_ref``: message ids and a time range, never content."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from gigi_knowledge.ingest.window import WindowMessage


def iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def cited(window: Sequence[WindowMessage], ids: Iterable[str]) -> list[WindowMessage]:
    """The window messages an item cites; ids outside the window are ignored."""
    wanted = set(ids)
    return [m for m in window if m.message_id in wanted]


def source_ref(messages: Sequence[WindowMessage]) -> dict[str, Any]:
    times = [m.created_ms for m in messages]
    return {
        "message_ids": [m.message_id for m in messages],
        "start": iso(min(times)),
        "end": iso(max(times)),
    }
