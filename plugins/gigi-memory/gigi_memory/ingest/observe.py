"""``observe_event``: the policy gate in memory, then a queued write. Never awaits anything.

What is never ingested: DMs and group DMs, private threads, bot and webhook messages
(unless the server allows them), messages in channels whose mode is off, in a channel
without a retention, from before the channel was enabled, or in a channel just secured.
Edits and deletes are queued only for channels memory holds (or held) something for; the
writer applies them to messages it stored, and for one it does not hold in a channel it
remembers leaves a mark (``tombstones``) so that no later sync or import brings the old text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
)
from gigi_memory.ingest.operations import Op, create_data
from gigi_memory.policy import DAY_MS, ENABLE_SLACK_MS, millis, now_ms
from gigi_memory.service import service_of


def create_op(event: MessageCreated, gate: Any) -> Op:
    """The writer's insert for a message the gate let in, its fields built now (a backfill)."""
    assert event.guild_id is not None
    return Op("create", event.guild_id, create_data(event, gate))


MEMO_LIMIT = 10_000  # channels (and threads) remembered as open; past it, the full gate


@dataclass(slots=True)
class GateMemo:
    """The gate's verdict for a channel that is open, while the policy cache is unchanged:
    a live message then costs one dict lookup and the three checks that depend on its
    time, not the whole rule list (the handler's p99 follows how much it touches: P4)."""

    version: int = -1
    guilds: Any = None
    channels: Any = None
    entries: dict[tuple[Any, ...], tuple[int | None, int, Any]] = field(default_factory=dict)


def live_gate(svc: Any, event: MessageCreated, created: int) -> Any:
    """``PolicyCache.gate`` for a live message, from the memo when the channel is open.

    The memo is dropped when the cache changes (``version``) or is reloaded (``load``
    swaps its dicts); a message the memo does not pass (before the channel was enabled,
    past retention, a channel secured) takes the full gate, which gives the reason.
    """
    cache, memo = svc.cache, svc.gate_memo
    if (
        memo.version != cache.version
        or memo.guilds is not cache.guilds
        or memo.channels is not cache.channels
    ):
        memo.version, memo.guilds, memo.channels = cache.version, cache.guilds, cache.channels
        memo.entries = {}
    is_bot = event.author_is_bot or event.author_is_webhook
    key = (event.guild_id, event.channel_id, event.parent_channel_id, event.channel_kind, is_bot)
    entry = memo.entries.get(key)
    if entry is not None and not cache.secured:
        enabled_at, retention, gate = entry
        if (enabled_at is None or created >= enabled_at - ENABLE_SLACK_MS) and (
            created + retention * DAY_MS > now_ms()
        ):
            return gate
    gate = cache.gate(
        guild_id=event.guild_id,
        channel_id=event.channel_id,
        parent_id=event.parent_channel_id,
        kind=event.channel_kind,
        is_bot=is_bot,
        created_ms=created,
        live=True,
    )
    if gate.ingest and len(memo.entries) < MEMO_LIMIT:
        mode, _ = cache.effective(event.guild_id, event.channel_id, event.parent_channel_id)
        memo.entries[key] = (mode.enabled_at_ms, gate.retention_days, gate)
    return gate


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
        gate = live_gate(svc, event, created)
        if not gate.ingest:
            return
        svc.writer.enqueue(
            Op("create", event.guild_id, None, event=event, gate=gate, created_ms=created)
        )
        if event.author_name and gate.storage != "metadata_only":  # search finds them by name
            svc.authors.note(event.guild_id, event.author_id, event.author_name, created)
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
                        "mentions": event.mentioned_user_ids,
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
