"""Which run wrote which of Gigi's replies, so replying to one continues that conversation.

Kept in memory per process (bounded): a follow-up after a restart, or one that reaches
another shard's process, simply starts a fresh context pack. The kernel checks that the
earlier run is the same member's, in the same guild and channel, before using its state.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

MAX_REMEMBERED = 10_000


class AnsweredMessages:
    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self.limit = limit
        self._runs: OrderedDict[int, str] = OrderedDict()

    def remember(self, message_ids: list[int], run_id: str) -> None:
        for message_id in message_ids:
            self._runs[message_id] = run_id
            self._runs.move_to_end(message_id)
        while len(self._runs) > self.limit:
            self._runs.popitem(last=False)

    def run_for(self, reference: Any) -> str | None:
        """The run behind the message ``reference`` points at, if Gigi wrote it here."""
        message_id = getattr(reference, "message_id", None)
        return self._runs.get(message_id) if message_id is not None else None
