"""A guild's bounded conversation history, in this process's memory; a
server that turned ``persist_history`` on also keeps it in ``ambient_history`` (``persist``).

One list per guild across its ambient channels, oldest first. Shrinking removes the oldest
entry of a channel holding more than ``per_channel`` entries, else the oldest overall, so a
busy channel never pushes a quiet one's context out.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal


def _key() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


_counter = itertools.count()


def _seq() -> int:
    """Increasing within a process and across restarts (nanoseconds plus a counter)."""
    return time.time_ns() + next(_counter)


@dataclass(frozen=True)
class Entry:
    channel_id: str
    role: Literal["user", "assistant"]
    author_id: str
    text: str
    message_id: str | None = None
    key: str = field(default_factory=_key)  # the stored row's id; an edit keeps it
    at: datetime = field(default_factory=_now)  # when it was said (retention)
    seq: int = field(default_factory=_seq)  # the stored order; an edit keeps it


class History:
    """Entries of one guild; callers trim with ``trim(limit, per_channel)``."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)

    def shrink_by_one(self, per_channel: int) -> None:
        """Drop the oldest entry of a channel above ``per_channel``, else the oldest one."""
        if not self.entries:
            return
        counts = Counter(e.channel_id for e in self.entries)
        for index, entry in enumerate(self.entries):
            if counts[entry.channel_id] > per_channel:
                del self.entries[index]
                return
        del self.entries[0]

    def trim(self, limit: int, per_channel: int) -> None:
        while len(self.entries) > limit:
            self.shrink_by_one(per_channel)

    def of_channel(self, channel_id: str) -> list[Entry]:
        return [e for e in self.entries if e.channel_id == channel_id]

    def forget_channel(self, channel_id: str) -> None:
        self.entries = [e for e in self.entries if e.channel_id != channel_id]

    def forget_messages(self, message_ids: set[str]) -> None:
        self.entries = [e for e in self.entries if e.message_id not in message_ids]

    def edited(self, message_id: str, text: str | None) -> None:
        """A message's new text; None (a withheld edit) drops the entry and its old text."""
        kept = []
        for e in self.entries:
            if e.message_id != message_id:
                kept.append(e)
            elif text is not None:
                kept.append(replace(e, text=text))
        self.entries = kept

    def forget_before(self, cutoff: datetime) -> None:
        """Retention: entries said before ``cutoff`` leave memory too."""
        self.entries = [e for e in self.entries if e.at >= cutoff]

    def forget_author(self, author_id: str) -> int:
        before = len(self.entries)
        self.entries = [
            e for e in self.entries if not (e.role == "user" and e.author_id == author_id)
        ]
        return before - len(self.entries)
