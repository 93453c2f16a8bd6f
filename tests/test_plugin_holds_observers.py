"""An upgrade with pending holds also keeps the plugin's event observers off: per guild until
an admin there accepts, and in direct messages (no guild of their own) until one has."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.events import Event, MessageCreated
from gigi_core.testing import open_test_kernel

MANIFEST = """\
manifest_version: 1
plugin:
  name: seer
  version: 0.1.0
  description: Observes messages for a test.
  data_statement: Keeps the events it sees in memory.
  dm_events: true
"""
_ids = count(1)


class Seer:
    """An observing plugin that records where each event it got came from."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "seer.yaml"
        self.path.write_text(MANIFEST)
        self.seen: list[str | None] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    async def observe_event(self, event: Event, kernel: Any) -> None:
        self.seen.append(event.guild_id)


def message(guild: str | None) -> MessageCreated:
    return MessageCreated(
        guild_id=guild,
        message_id=f"m{next(_ids)}",
        channel_id="c1",
        channel_kind="text" if guild else "dm",
        author_id="u1",
        created_at=datetime.now(UTC),
        text="hello",
    )


async def _publish_everywhere(kernel: Any) -> None:
    for guild in ("g1", "g2", None):
        await kernel.publish(message(guild))
    await kernel.events.drain()


async def test_observers_stay_off_where_an_upgrade_is_not_accepted(
    tmp_path: Path, database_url: str
) -> None:
    seer = Seer(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("seer", seer)], database_url=database_url
    ) as kernel:
        for guild in ("g1", "g2"):
            await kernel.enable_plugin(guild, "seer", by="admin")
        await _publish_everywhere(kernel)
        assert seer.seen == ["g1", "g2", None]

        # What `gigi upgrade` records when the loaded version widened what the plugin does.
        await kernel.reviews.record("seer", "0.1.0", {"*": "the data statement changed"})
        seer.seen.clear()
        await _publish_everywhere(kernel)
        assert seer.seen == []  # no guild accepted: neither guild nor direct messages

        assert await kernel.reviews.accept("g1", "seer", "0.1.0", by="admin")
        await _publish_everywhere(kernel)
        assert seer.seen == ["g1", None]  # g2 has not accepted: still off there
        assert await kernel.reviews.observers_held("g2") == frozenset({"seer"})
        assert await kernel.reviews.observers_held("g1") == frozenset()
