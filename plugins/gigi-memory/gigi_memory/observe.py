"""``observe_event``: the policy gate in memory, then a queued write. Never awaits anything.

What is never ingested: DMs and group DMs, private threads, bot and webhook messages
(unless the server allows them), messages in channels whose mode is off, in a channel
without a retention, from before the channel was enabled, or in a channel just secured.
Edits and deletes are queued only for channels memory holds (or held) something for; the
writer applies them to messages it stored, and for one it does not hold in a channel it
remembers leaves a mark (``tombstones``) so that no later sync or import brings the old text.
"""

from __future__ import annotations

from typing import Any

from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
)
from gigi_memory.policy import millis
from gigi_memory.service import service_of
from gigi_memory.writer import Op, create_data


def create_op(event: MessageCreated, gate: Any) -> Op:
    """The writer's insert for a message the gate let in, its fields built now (a backfill)."""
    assert event.guild_id is not None
    return Op("create", event.guild_id, create_data(event, gate))


def handle(event: Any, kernel: Any) -> None:
    """Synchronous on purpose: the kernel calls it from the plugin's own queue."""
    if event.guild_id is None:
        return
    svc = service_of(kernel)
    cache = svc.cache
    if isinstance(event, MessageCreated):
        if event.author_is_self:  # Gigi's own answers quote what it was given: never kept
            return
        created = millis(event.created_at)
        gate = cache.gate(
            guild_id=event.guild_id,
            channel_id=event.channel_id,
            parent_id=event.parent_channel_id,
            kind=event.channel_kind,
            is_bot=event.author_is_bot or event.author_is_webhook,
            created_ms=created,
            live=True,
        )
        if not gate.ingest:
            return
        svc.writer.enqueue(Op("create", event.guild_id, None, event=event, gate=gate))
    elif isinstance(event, MessageEdited):
        if cache.known(event.guild_id, event.channel_id, event.parent_channel_id):
            svc.writer.enqueue(
                Op(
                    "edit",
                    event.guild_id,
                    {
                        "message_id": event.message_id,
                        "channel_id": event.channel_id,
                        "parent_id": event.parent_channel_id,
                        "text": event.text,
                        "edited_ms": millis(event.edited_at),
                        "withheld": event.withheld,
                    },
                )
            )
    elif isinstance(event, MessageDeleted):
        if event.message_ids and cache.known(
            event.guild_id, event.channel_id, event.parent_channel_id
        ):
            svc.writer.enqueue(
                Op(
                    "delete",
                    event.guild_id,
                    {
                        "channel_id": event.channel_id,
                        "parent_id": event.parent_channel_id,
                        "message_ids": tuple(event.message_ids),
                    },
                )
            )
    elif isinstance(event, ChannelDeleted):
        if cache.known(event.guild_id, event.channel_id) or _has_threads(
            cache, event.guild_id, event.channel_id
        ):
            svc.writer.drop_channel(event.guild_id, event.channel_id)
            cache.set_channel(event.guild_id, event.channel_id, None)
            svc.writer.enqueue(
                Op(
                    "purge_channel",
                    event.guild_id,
                    {"channel_id": event.channel_id, "drop_mode": True},
                )
            )
    elif isinstance(event, ChannelSecured):
        cache.secure(event.guild_id, event.channel_id)
        svc.writer.drop_channel(event.guild_id, event.channel_id)


def _has_threads(cache: Any, guild_id: str, channel_id: str) -> bool:
    """A deleted channel may be the parent of threads memory holds (rows name the parent)."""
    return bool(cache.channels.get(guild_id))
