"""An upgrade with pending holds also keeps the plugin's event observers off (erasures and
lifecycle events still reach them): per guild until an admin there accepts, and in direct
messages until the operator accepts for them."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

from gigi_core import hookimpl
from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    Event,
    GuildJoined,
    GuildLeft,
    MemberLeft,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    ReactionsCleared,
)
from gigi_core.store.plugin_reviews import DM_ACCEPTS
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
        self.events: list[Event] = []

    @hookimpl
    def register_manifests(self, register: Any) -> None:
        register(self.path)

    @hookimpl
    async def observe_event(self, event: Event, kernel: Any) -> None:
        self.seen.append(event.guild_id)
        self.events.append(event)


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
        # g2 has not accepted: still off there; nor do DMs open on a guild's accept (anyone
        # who invites the bot to a server of their own is that server's admin).
        assert seer.seen == ["g1"]
        assert await kernel.reviews.observers_held("g2") == frozenset({"seer"})
        assert await kernel.reviews.observers_held("g1") == frozenset()
        assert await kernel.reviews.observers_held(None) == frozenset({"seer"})

        # The operator's accept for direct messages (`gigi plugins review seer --dm --accept`).
        assert await kernel.reviews.accept(DM_ACCEPTS, "seer", "0.1.0", by="cli")
        kernel.events.invalidate()
        seer.seen.clear()
        await _publish_everywhere(kernel)
        assert seer.seen == ["g1", None]


def _erasures(guild: str | None) -> list[Event]:
    """Every erasure and lifecycle event: none carries new content."""
    found: list[Event] = [MessageDeleted(guild_id=guild, channel_id="c1", message_ids=("m1",))]
    if guild is not None:
        found += [
            ChannelDeleted(guild_id=guild, channel_id="c1"),
            ChannelSecured(guild_id=guild, channel_id="c2"),
            ReactionsCleared(guild_id=guild, channel_id="c1", message_id="m1"),
            MemberLeft(guild_id=guild, user_id="u1"),
            GuildLeft(guild_id=guild),
            GuildJoined(guild_id=guild),
        ]
    return found


async def test_a_held_observer_still_gets_erasures_and_edits_as_withheld(
    tmp_path: Path, database_url: str
) -> None:
    """A deletion must reach what the plugin kept even while its upgrade is held; an edit
    arrives without its new text (the plugin drops the old one), a new message not at all."""
    seer = Seer(tmp_path)
    async with open_test_kernel(
        tmp_path, plugins=[], extra_plugins=[("seer", seer)], database_url=database_url
    ) as kernel:
        await kernel.enable_plugin("g1", "seer", by="admin")
        await kernel.reviews.record("seer", "0.1.0", {"*": "the data statement changed"})
        seer.events.clear()
        for guild in ("g1", None):
            await kernel.publish(message(guild))
            for event in _erasures(guild):
                await kernel.publish(event)
            await kernel.publish(
                MessageEdited(
                    guild_id=guild,
                    message_id="m1",
                    channel_id="c1",
                    text="the new text",
                    mentioned_user_ids=("u2",),
                    edited_at=datetime.now(UTC),
                )
            )
        await kernel.publish(MessageDeleted(guild_id="g2", channel_id="c", message_ids=("m",)))
        await kernel.events.drain()
        edits = [e for e in seer.events if isinstance(e, MessageEdited)]
        others = [e for e in seer.events if not isinstance(e, MessageEdited)]
        assert others == [*_erasures("g1"), *_erasures(None)]  # g2 never enabled it
        assert [(e.guild_id, e.text, e.withheld, e.mentioned_user_ids) for e in edits] == [
            ("g1", "", True, None),
            (None, "", True, None),
        ]
