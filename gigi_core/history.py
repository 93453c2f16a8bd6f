"""``kernel.history``: plugins page a channel's past messages through the surface serving it.

A backfill (``/memory sync``) runs as a job, maybe long after the command; it asks here
for one page at a time and checkpoints the cursor, so a restart resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable

from gigi_core.events import HistoryPage, HistoryReader, HistoryUnavailable

MAX_PAGE = 100  # Discord's own page size for channel history


class HistoryReaders:
    """The readers of the surfaces running in this process, asked in registration order."""

    def __init__(self) -> None:
        self._readers: dict[str, HistoryReader] = {}

    def register(self, surface: str, reader: HistoryReader) -> Callable[[], None]:
        """Called by a surface once it is connected; the returned function unregisters."""
        self._readers[surface] = reader

        def unregister() -> None:
            if self._readers.get(surface) is reader:
                del self._readers[surface]

        return unregister

    def serves(self, guild_id: str) -> bool:
        return any(r.serves(guild_id) for r in self._readers.values())

    async def page(
        self, guild_id: str, channel_id: str, *, before: str | None = None, limit: int = MAX_PAGE
    ) -> HistoryPage:
        """Messages of ``channel_id`` older than ``before`` (newest first), at most ``limit``.

        Raises ``HistoryUnavailable`` when no surface here serves the guild (a job retries)
        and ``HistoryForbidden`` when the surface may not read the channel.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
        for reader in self._readers.values():
            if reader.serves(guild_id):
                return await reader.page(guild_id, channel_id, before=before, limit=limit)
        raise HistoryUnavailable(
            f"no surface connected to guild {guild_id} runs in this process",
            hint="the job is retried; run it where the bot runs (`gigi run`)",
        )
