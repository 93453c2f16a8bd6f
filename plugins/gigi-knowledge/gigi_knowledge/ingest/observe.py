"""``observe_event``: the gate, then the window and the queue. Never awaits anything.

The kernel delivers nothing from a paused or secure channel; here only channels an admin
enabled for knowledge pass, never DMs, bots, webhooks or Gigi's own replies.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gigi_core.events import (
    ChannelDeleted,
    ChannelSecured,
    GuildLeft,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
)
from gigi_knowledge.ingest.queue import Job
from gigi_knowledge.ingest.window import WindowMessage
from gigi_knowledge.service import service_of

SKIPPED_KINDS = ("dm", "group_dm", "private_thread")


def millis(when: datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def handle(event: Any, kernel: Any) -> None:
    if event.guild_id is None:
        return
    svc = service_of(kernel)
    if isinstance(event, MessageCreated):
        if event.author_is_self or event.author_is_bot or event.author_is_webhook:
            return
        if event.channel_kind in SKIPPED_KINDS or not event.text.strip():
            return
        channel = event.channel_id
        info = svc.channel(event.guild_id, channel)
        if info is None:
            return
        parent = event.parent_channel_id
        if parent and parent != info.parent:  # a thread: its parent's state is its own
            svc.set_channel(event.guild_id, channel, replace(info, parent=parent))
            from gigi_knowledge.admin.channels import record_parent

            svc.background(record_parent(svc, event.guild_id, channel, parent))
        created = millis(event.created_at)
        svc.last_seen[(event.guild_id, channel, event.author_id)] = created
        svc.notes.saw(event.guild_id, channel, event.author_id, event.message_id, created)
        held = WindowMessage(
            event.message_id, event.author_id, created, event.text, tuple(event.mentioned_user_ids)
        )
        svc.windows.push(event.guild_id, channel, held)
        # The job carries its message: under a burst it may leave the window before its turn.
        svc.queue.put(Job(event.guild_id, channel, event.message_id, held))
    elif isinstance(event, MessageEdited):
        # The window keeps what was said when; an edit away (or withheld) drops the old text.
        svc.windows.forget_message(event.guild_id, event.channel_id, {event.message_id})
        svc.queue.forget(event.guild_id, event.channel_id, {event.message_id})
    elif isinstance(event, MessageDeleted):
        svc.windows.forget_message(event.guild_id, event.channel_id, set(event.message_ids))
        svc.queue.forget(event.guild_id, event.channel_id, set(event.message_ids))
    elif isinstance(event, ChannelSecured):
        svc.drop_channel(event.guild_id, event.channel_id)
    elif isinstance(event, ChannelDeleted):
        svc.set_channel(event.guild_id, event.channel_id, None)
        from gigi_knowledge.admin.channels import mark_deleted  # summary jobs skip it from now on

        svc.background(mark_deleted(kernel, event.guild_id, event.channel_id))
    elif isinstance(event, GuildLeft):
        svc.drop_channel(event.guild_id)
